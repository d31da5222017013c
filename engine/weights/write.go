package weights

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// Write stores tensors as a safetensors file (sorted by name, 8-byte aligned
// header), atomically: it writes path+".tmp" and renames it. It is used to
// build randomly initialised models of the real shapes and test fixtures.
func Write(path string, tensors []*Tensor, metadata map[string]string) error {
	sorted := append([]*Tensor(nil), tensors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for _, t := range sorted {
		if t.DType.Size() == 0 {
			return fmt.Errorf("safetensors write %s: tensor %q: unsupported dtype %q", path, t.Name, t.DType)
		}
		if int64(len(t.Data)) != int64(t.NumElements()*t.DType.Size()) {
			return fmt.Errorf("safetensors write %s: tensor %q: %d bytes for shape %v %s", path, t.Name, len(t.Data), t.Shape, t.DType)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = headerEntry{DType: t.DType, Shape: shape, Offsets: [2]int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("safetensors write %s: %w", path, err)
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("safetensors write: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var lenb [8]byte
	binary.LittleEndian.PutUint64(lenb[:], uint64(len(hj)))
	w.Write(lenb[:])
	w.Write(hj)
	for _, t := range sorted {
		w.Write(t.Data)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("safetensors write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("safetensors write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// Encode builds a safetensors image in memory (for randomly initialised
// models that never touch the disk); Parse reads it back.
func Encode(tensors []*Tensor, metadata map[string]string) ([]byte, error) {
	sorted := append([]*Tensor(nil), tensors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for _, t := range sorted {
		if int64(len(t.Data)) != int64(t.NumElements()*t.DType.Size()) || t.DType.Size() == 0 {
			return nil, fmt.Errorf("safetensors encode: tensor %q: %d bytes for shape %v %s", t.Name, len(t.Data), t.Shape, t.DType)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = headerEntry{DType: t.DType, Shape: shape, Offsets: [2]int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return nil, err
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	out := make([]byte, 8, 8+int64(len(hj))+off)
	binary.LittleEndian.PutUint64(out, uint64(len(hj)))
	out = append(out, hj...)
	for _, t := range sorted {
		out = append(out, t.Data...)
	}
	return out, nil
}
