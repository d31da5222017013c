// Package weights reads model files from disk: safetensors (memory-mapped),
// and the model bundle layout. Every file is untrusted input: sizes are
// bounded before anything is allocated and every offset is checked, and
// errors name the file and the tensor.
package weights

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"syscall"

	"zonostream/engine/compute"
)

// DType is a safetensors element type.
type DType string

const (
	F32  DType = "F32"
	BF16 DType = "BF16"
	F16  DType = "F16"
	I64  DType = "I64"
	I32  DType = "I32"
	BOOL DType = "BOOL"
)

// Size is the byte size of one element, or 0 for an unsupported dtype.
func (d DType) Size() int {
	switch d {
	case F32, I32:
		return 4
	case BF16, F16:
		return 2
	case I64:
		return 8
	case BOOL:
		return 1
	}
	return 0
}

// MaxHeaderBytes bounds the JSON header (the real Zonos checkpoint's header is
// ~60 KB; 100 MB is the limit the safetensors format itself sets).
const MaxHeaderBytes = 100 << 20

// Tensor is one named tensor; Data aliases the file's memory map.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// NumElements is the product of the shape.
func (t *Tensor) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// F32Tensor makes an F32 tensor of the values v (little-endian, as the
// format stores them) in memory: a tensor to Write or Encode, or one of a
// checkpoint made in memory.
func F32Tensor(name string, shape []int, v []float32) *Tensor {
	data := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	return &Tensor{Name: name, DType: F32, Shape: append([]int(nil), shape...), Data: data}
}

// File is an opened safetensors file.
type File struct {
	Path     string
	Metadata map[string]string
	tensors  map[string]*Tensor
	names    []string // in file order
	mapped   []byte
}

// Open memory-maps path and validates its header.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	size := st.Size()
	if size < 8 {
		return nil, fmt.Errorf("safetensors %s: file is %d bytes, too short for a header", path, size)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("safetensors %s: file too large", path)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: mmap: %w", path, err)
	}
	sf, err := Parse(path, data)
	if err != nil {
		syscall.Munmap(data)
		return nil, err
	}
	sf.mapped = data
	return sf, nil
}

// Close unmaps the file; tensors' Data must not be used afterwards.
func (f *File) Close() error {
	if f.mapped == nil {
		return nil
	}
	err := syscall.Munmap(f.mapped)
	f.mapped = nil
	return err
}

type headerEntry struct {
	DType   DType    `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// Parse validates a whole safetensors image held in memory. name is used in
// errors only.
func Parse(name string, data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("safetensors %s: %d bytes, too short for a header", name, len(data))
	}
	hlen := binary.LittleEndian.Uint64(data)
	if hlen > MaxHeaderBytes {
		return nil, fmt.Errorf("safetensors %s: header claims %d bytes (limit %d): not a safetensors file or corrupted", name, hlen, MaxHeaderBytes)
	}
	if hlen > uint64(len(data)-8) {
		return nil, fmt.Errorf("safetensors %s: header of %d bytes runs past the end of the %d-byte file (truncated?)", name, hlen, len(data))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+hlen], &raw); err != nil {
		return nil, fmt.Errorf("safetensors %s: header is not valid JSON: %v", name, err)
	}
	body := data[8+hlen:]
	f := &File{Path: name, tensors: make(map[string]*Tensor, len(raw))}
	type span struct {
		name       string
		begin, end int64
	}
	var spans []span
	for key, msg := range raw {
		if key == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors %s: __metadata__ must map strings to strings: %v", name, err)
			}
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("safetensors %s: tensor %q: bad header entry: %v", name, key, err)
		}
		es := e.DType.Size()
		if es == 0 {
			return nil, fmt.Errorf("safetensors %s: tensor %q: unsupported dtype %q (want F32, BF16, F16, I64, I32 or BOOL)", name, key, e.DType)
		}
		n := int64(1)
		for _, d := range e.Shape {
			if d < 0 {
				return nil, fmt.Errorf("safetensors %s: tensor %q: negative dimension in shape %v", name, key, e.Shape)
			}
			if d > 0 && n > int64(len(body))/int64(d)+1 {
				return nil, fmt.Errorf("safetensors %s: tensor %q: shape %v is larger than the file", name, key, e.Shape)
			}
			n *= int64(d)
		}
		b, en := e.Offsets[0], e.Offsets[1]
		if b < 0 || en < b || en > int64(len(body)) {
			return nil, fmt.Errorf("safetensors %s: tensor %q: data_offsets [%d, %d] outside the %d-byte data section", name, key, b, en, len(body))
		}
		if en-b != n*int64(es) {
			return nil, fmt.Errorf("safetensors %s: tensor %q: shape %v × %s needs %d bytes, data_offsets span %d", name, key, e.Shape, e.DType, n*int64(es), en-b)
		}
		f.tensors[key] = &Tensor{Name: key, DType: e.DType, Shape: e.Shape, Data: body[b:en:en]}
		spans = append(spans, span{key, b, en})
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].begin != spans[j].begin {
			return spans[i].begin < spans[j].begin
		}
		return spans[i].name < spans[j].name
	})
	for i := 1; i < len(spans); i++ {
		if spans[i].begin < spans[i-1].end {
			return nil, fmt.Errorf("safetensors %s: tensors %q and %q overlap", name, spans[i-1].name, spans[i].name)
		}
	}
	for _, s := range spans {
		f.names = append(f.names, s.name)
	}
	return f, nil
}

// Names lists the tensors in file order.
func (f *File) Names() []string { return append([]string(nil), f.names...) }

// Tensor returns the named tensor or an error naming the file.
func (f *File) Tensor(name string) (*Tensor, error) {
	t, ok := f.tensors[name]
	if !ok {
		return nil, fmt.Errorf("safetensors %s: no tensor %q", f.Path, name)
	}
	return t, nil
}

// Has reports whether the file holds the named tensor.
func (f *File) Has(name string) bool { _, ok := f.tensors[name]; return ok }

// Float32s decodes a float tensor (F32, BF16, F16) to float32.
func (t *Tensor) Float32s() ([]float32, error) {
	n := t.NumElements()
	out := make([]float32, n)
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = compute.BF16ToFloat32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case F16:
		for i := range out {
			out[i] = compute.F16ToFloat32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	default:
		return nil, fmt.Errorf("tensor %q: %s is not a float dtype", t.Name, t.DType)
	}
	return out, nil
}

// Int64s decodes an integer tensor (I64, I32, BOOL) to int64.
func (t *Tensor) Int64s() ([]int64, error) {
	n := t.NumElements()
	out := make([]int64, n)
	switch t.DType {
	case I64:
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
		}
	case I32:
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(t.Data[4*i:])))
		}
	case BOOL:
		for i := range out {
			out[i] = int64(t.Data[i])
		}
	default:
		return nil, fmt.Errorf("tensor %q: %s is not an integer dtype", t.Name, t.DType)
	}
	return out, nil
}
