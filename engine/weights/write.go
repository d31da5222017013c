package weights

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
)

// Write stores tensors as a safetensors file (sorted by name, 8-byte aligned
// header), atomically: it writes path+".tmp" and renames it. It is used to
// build randomly initialised models of the real shapes and test fixtures.
func Write(path string, tensors []*Tensor, metadata map[string]string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("safetensors write: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	_, err = EncodeTo(w, tensors, metadata)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
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

// EncodeTo writes the safetensors image Encode would build to w, tensor by
// tensor, so that a multi-GB checkpoint already in memory goes to disk
// without a second copy of it. It returns the bytes written.
func EncodeTo(w io.Writer, tensors []*Tensor, metadata map[string]string) (int64, error) {
	sorted, hj, err := layout(tensors, metadata)
	if err != nil {
		return 0, fmt.Errorf("safetensors encode: %w", err)
	}
	var lenb [8]byte
	binary.LittleEndian.PutUint64(lenb[:], uint64(len(hj)))
	parts := [][]byte{lenb[:], hj}
	for _, t := range sorted {
		parts = append(parts, t.Data)
	}
	var n int64
	for _, b := range parts {
		k, err := w.Write(b)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Encode builds a safetensors image in memory (for randomly initialised
// models that never touch the disk); Parse reads it back.
func Encode(tensors []*Tensor, metadata map[string]string) ([]byte, error) {
	sorted, hj, err := layout(tensors, metadata)
	if err != nil {
		return nil, fmt.Errorf("safetensors encode: %w", err)
	}
	size := 8 + len(hj)
	for _, t := range sorted {
		size += len(t.Data)
	}
	out := make([]byte, 8, size)
	binary.LittleEndian.PutUint64(out, uint64(len(hj)))
	out = append(out, hj...)
	for _, t := range sorted {
		out = append(out, t.Data...)
	}
	return out, nil
}

// layout sorts tensors by name and builds the JSON header (padded to 8
// bytes) that places them back to back.
func layout(tensors []*Tensor, metadata map[string]string) ([]*Tensor, []byte, error) {
	sorted := append([]*Tensor(nil), tensors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for _, t := range sorted {
		if t.DType.Size() == 0 {
			return nil, nil, fmt.Errorf("tensor %q: unsupported dtype %q", t.Name, t.DType)
		}
		if int64(len(t.Data)) != int64(t.NumElements()*t.DType.Size()) {
			return nil, nil, fmt.Errorf("tensor %q: %d bytes for shape %v %s", t.Name, len(t.Data), t.Shape, t.DType)
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
		return nil, nil, err
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	return sorted, hj, nil
}
