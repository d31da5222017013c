package weights

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// Bounds for torch checkpoints (untrusted input). The real speaker model
// (ResNet293, ~26 M float32 parameters) is ~105 MB with a data.pkl of a few
// hundred KB; the bounds leave an order of magnitude of room.
const (
	MaxTorchFileBytes   = 4 << 30  // whole .pt archive
	MaxTorchPickleBytes = 64 << 20 // data.pkl
	MaxTorchTensors     = 1 << 16  // tensors in one state dict
	MaxTorchDims        = 8        // dimensions of one tensor
	// deflate cannot expand more than 1032:1, so a compressed record
	// claiming more is corrupt (torch itself stores records uncompressed).
	maxDeflateRatio = 1032
)

// TorchFile is a PyTorch state dict read from a torch.save zip archive
// (the format of torch ≥ 1.6): every tensor becomes a dense, contiguous
// Tensor in its stored dtype. Nothing in the archive is executed: the
// pickle may name only the globals a state dict needs (tensor rebuild,
// typed storages, OrderedDict).
type TorchFile struct {
	Path    string
	tensors map[string]*Tensor
	names   []string // sorted
}

// torchStorageDTypes maps the storage classes a state dict may name to our
// dtypes. Double, complex and quantized storages are refused.
var torchStorageDTypes = map[string]DType{
	"FloatStorage":    F32,
	"HalfStorage":     F16,
	"BFloat16Storage": BF16,
	"LongStorage":     I64,
	"IntStorage":      I32,
	"BoolStorage":     BOOL,
}

type torchStorageClass struct{ dtype DType }

type torchStorage struct {
	dtype DType
	data  []byte
	key   string
}

// torchRebuild stands for torch._utils._rebuild_tensor_v2 and
// _rebuild_parameter: it validates its arguments and returns a *Tensor
// (no name yet); nothing else is callable.
type torchRebuild struct {
	file      string
	parameter bool
}

// OpenTorch reads a torch.save zip archive holding a state dict.
func OpenTorch(filename string) (*TorchFile, error) {
	f, err := os.Open(filename)
	if err != nil {
		return nil, fmt.Errorf("torch checkpoint: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("torch checkpoint %s: %w", filename, err)
	}
	if st.Size() > MaxTorchFileBytes {
		return nil, fmt.Errorf("torch checkpoint %s: %d bytes is over the %d-byte limit", filename, st.Size(), int64(MaxTorchFileBytes))
	}
	return ParseTorch(filename, f, st.Size())
}

// ParseTorch reads a torch.save zip archive of size bytes from r; name is
// used in errors only.
func ParseTorch(name string, r io.ReaderAt, size int64) (tf *TorchFile, err error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("torch checkpoint %s: "+format, append([]any{name}, a...)...)
	}
	if size > MaxTorchFileBytes {
		return nil, fail("%d bytes is over the %d-byte limit", size, int64(MaxTorchFileBytes))
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fail("not a torch.save zip archive (%v); legacy (torch < 1.6) checkpoints are not supported: re-save it with a current torch", err)
	}
	records := make(map[string]*zip.File, len(zr.File))
	var pkl *zip.File
	prefix := ""
	for _, zf := range zr.File {
		records[zf.Name] = zf
		dir, base := path.Split(zf.Name)
		if base == "constants.pkl" {
			return nil, fail("holds TorchScript (constants.pkl); save a plain state dict with torch.save(model.state_dict())")
		}
		if base == "data.pkl" && strings.Count(zf.Name, "/") == 1 {
			if pkl != nil {
				return nil, fail("more than one data.pkl")
			}
			pkl, prefix = zf, dir
		}
	}
	if pkl == nil {
		return nil, fail("no <archive>/data.pkl record: not a torch.save archive")
	}
	pdata, err := readRecord(pkl, MaxTorchPickleBytes)
	if err != nil {
		return nil, fail("%s: %v", pkl.Name, err)
	}
	if err := scanPickle(pdata); err != nil {
		return nil, fail("data.pkl: %v", err)
	}

	storages := map[string]*torchStorage{}
	var total int64
	u := pickle.NewUnpickler(bytes.NewReader(pdata))
	u.FindClass = func(module, cls string) (any, error) {
		switch module + "." + cls {
		case "torch._utils._rebuild_tensor_v2":
			return &torchRebuild{file: name}, nil
		case "torch._utils._rebuild_parameter":
			return &torchRebuild{file: name, parameter: true}, nil
		}
		if module == "torch" {
			if dt, ok := torchStorageDTypes[cls]; ok {
				return &torchStorageClass{dt}, nil
			}
		}
		return nil, fmt.Errorf("global %s.%s is not allowed in a state dict (only tensors, storages and dicts are read; nothing is executed)", module, cls)
	}
	u.PersistentLoad = func(id any) (any, error) {
		t, ok := id.(*types.Tuple)
		if !ok || t.Len() != 5 {
			return nil, fmt.Errorf("persistent id %v: want ('storage', class, key, location, numel)", id)
		}
		kind, _ := t.Get(0).(string)
		cls, okc := t.Get(1).(*torchStorageClass)
		key, okk := t.Get(2).(string)
		numel, okn := t.Get(4).(int)
		if kind != "storage" || !okc || !okk || !okn {
			return nil, fmt.Errorf("persistent id %v: want ('storage', class, key, location, numel)", id)
		}
		if s, ok := storages[key]; ok {
			if s.dtype != cls.dtype || len(s.data) != numel*cls.dtype.Size() {
				return nil, fmt.Errorf("storage %q used with two types or sizes", key)
			}
			return s, nil
		}
		rec := records[prefix+"data/"+key]
		if rec == nil {
			return nil, fmt.Errorf("storage %q: no record %sdata/%s in the archive (truncated?)", key, prefix, key)
		}
		es := int64(cls.dtype.Size())
		if numel < 0 || int64(numel) > MaxTorchFileBytes/es {
			return nil, fmt.Errorf("storage %q: %d elements is out of bounds", key, numel)
		}
		want := int64(numel) * es
		if rec.UncompressedSize64 != uint64(want) {
			return nil, fmt.Errorf("storage %q: %d × %s needs %d bytes, the record holds %d", key, numel, cls.dtype, want, rec.UncompressedSize64)
		}
		if total += want; total > MaxTorchFileBytes {
			return nil, fmt.Errorf("storages add up to more than %d bytes", int64(MaxTorchFileBytes))
		}
		data, err := readRecord(rec, want)
		if err != nil {
			return nil, fmt.Errorf("storage %q: %v", key, err)
		}
		s := &torchStorage{dtype: cls.dtype, data: data, key: key}
		storages[key] = s
		return s, nil
	}
	// The unpickler trusts lengths inside the stream; scanPickle bounded
	// them, and any panic it still raises is turned into an error here.
	defer func() {
		if p := recover(); p != nil {
			tf, err = nil, fail("data.pkl: malformed pickle (%v)", p)
		}
	}()
	obj, err := u.Load()
	if err != nil {
		return nil, fail("data.pkl: %v", err)
	}
	tf = &TorchFile{Path: name, tensors: map[string]*Tensor{}}
	add := func(k, v any) error {
		key, ok := k.(string)
		if !ok {
			return fail("state dict key %v is not a string", k)
		}
		t, ok := v.(*Tensor)
		if !ok {
			return fail("state dict entry %q is %T, not a tensor", key, v)
		}
		if _, dup := tf.tensors[key]; dup {
			return fail("tensor %q appears twice", key)
		}
		if len(tf.tensors) >= MaxTorchTensors {
			return fail("more than %d tensors", MaxTorchTensors)
		}
		t.Name = key
		tf.tensors[key] = t
		tf.names = append(tf.names, key)
		return nil
	}
	switch d := obj.(type) {
	case *types.Dict:
		for _, e := range *d {
			if err := add(e.Key, e.Value); err != nil {
				return nil, err
			}
		}
	case *types.OrderedDict:
		for e := d.List.Front(); e != nil; e = e.Next() {
			it := e.Value.(*types.OrderedDictEntry)
			if err := add(it.Key, it.Value); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fail("top level is %T, not a state dict (save model.state_dict(), not the model)", obj)
	}
	sort.Strings(tf.names)
	return tf, nil
}

// readRecord reads a whole zip record of at most limit bytes.
func readRecord(zf *zip.File, limit int64) ([]byte, error) {
	n := zf.UncompressedSize64
	if n > uint64(limit) {
		return nil, fmt.Errorf("record of %d bytes is over the %d-byte limit", n, limit)
	}
	if zf.Method != zip.Store && n > maxDeflateRatio*(zf.CompressedSize64+1) {
		return nil, fmt.Errorf("record claims %d bytes from %d compressed: corrupt", n, zf.CompressedSize64)
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(rc, buf); err != nil {
		return nil, fmt.Errorf("reading %d bytes: %v (truncated archive?)", n, err)
	}
	return buf, nil
}

// Call implements types.Callable for _rebuild_tensor_v2(storage, offset,
// size, stride, requires_grad, backward_hooks[, metadata]) and
// _rebuild_parameter(data, requires_grad, backward_hooks).
func (r *torchRebuild) Call(args ...any) (any, error) {
	if r.parameter {
		if len(args) < 1 {
			return nil, fmt.Errorf("_rebuild_parameter: no arguments")
		}
		t, ok := args[0].(*Tensor)
		if !ok {
			return nil, fmt.Errorf("_rebuild_parameter of %T", args[0])
		}
		return t, nil
	}
	if len(args) != 6 && len(args) != 7 {
		return nil, fmt.Errorf("_rebuild_tensor_v2 with %d arguments (want 6 or 7)", len(args))
	}
	s, ok := args[0].(*torchStorage)
	off, ok2 := args[1].(int)
	size, ok3 := args[2].(*types.Tuple)
	stride, ok4 := args[3].(*types.Tuple)
	if !ok || !ok2 || !ok3 || !ok4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: unexpected argument types %T %T %T %T", args[0], args[1], args[2], args[3])
	}
	shape, err := smallInts(size, "size")
	if err != nil {
		return nil, err
	}
	strides, err := smallInts(stride, "stride")
	if err != nil {
		return nil, err
	}
	if len(strides) != len(shape) {
		return nil, fmt.Errorf("storage %q: size %v with stride %v", s.key, shape, strides)
	}
	es := s.dtype.Size()
	avail := int64(len(s.data) / es)
	n := int64(1)
	for _, d := range shape {
		if d > 0 && n > avail/int64(d)+1 {
			return nil, fmt.Errorf("storage %q: shape %v is larger than its %d elements", s.key, shape, avail)
		}
		n *= int64(d)
	}
	// Dense row-major only: the expected stride of each dimension is the
	// product of the later sizes (size-1 dimensions may carry any stride,
	// as torch allows).
	want := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 && int64(strides[i]) != want {
			return nil, fmt.Errorf("storage %q: size %v stride %v is not contiguous; save contiguous tensors (t.contiguous())", s.key, shape, strides)
		}
		want *= int64(shape[i])
	}
	if off < 0 || int64(off) > avail || n > avail-int64(off) {
		return nil, fmt.Errorf("storage %q: offset %d + %d elements past its %d elements", s.key, off, n, avail)
	}
	b := int64(off) * int64(es)
	e := b + n*int64(es)
	return &Tensor{DType: s.dtype, Shape: shape, Data: s.data[b:e:e]}, nil
}

func smallInts(t *types.Tuple, what string) ([]int, error) {
	if t.Len() > MaxTorchDims {
		return nil, fmt.Errorf("tensor %s has %d dimensions (limit %d)", what, t.Len(), MaxTorchDims)
	}
	out := make([]int, t.Len())
	for i := range out {
		v, ok := t.Get(i).(int)
		if !ok || v < 0 || v > math.MaxInt32 {
			return nil, fmt.Errorf("tensor %s %v: entries must be integers in [0, 2³¹)", what, *t)
		}
		out[i] = v
	}
	return out, nil
}

// Names lists the tensors, sorted.
func (f *TorchFile) Names() []string { return append([]string(nil), f.names...) }

// Len is the number of tensors.
func (f *TorchFile) Len() int { return len(f.names) }

// Has reports whether the state dict holds the named tensor.
func (f *TorchFile) Has(name string) bool { _, ok := f.tensors[name]; return ok }

// Tensor returns the named tensor or an error naming the file.
func (f *TorchFile) Tensor(name string) (*Tensor, error) {
	t, ok := f.tensors[name]
	if !ok {
		return nil, fmt.Errorf("torch checkpoint %s: no tensor %q", f.Path, name)
	}
	return t, nil
}

// Float32s returns a float tensor's values (F32, F16 or BF16) and shape,
// checking the shape when want is given (−1 matches any size).
func (f *TorchFile) Float32s(name string, want ...int) ([]float32, []int, error) {
	t, err := f.Tensor(name)
	if err != nil {
		return nil, nil, err
	}
	if want != nil {
		ok := len(want) == len(t.Shape)
		for i := 0; ok && i < len(want); i++ {
			ok = want[i] < 0 || want[i] == t.Shape[i]
		}
		if !ok {
			return nil, nil, fmt.Errorf("torch checkpoint %s: tensor %q has shape %v, want %v", f.Path, name, t.Shape, want)
		}
	}
	v, err := t.Float32s()
	if err != nil {
		return nil, nil, fmt.Errorf("torch checkpoint %s: %w", f.Path, err)
	}
	return v, t.Shape, nil
}

// scanPickle walks the opcodes of a pickle up to STOP without executing
// them and checks that every length it declares fits in the bytes that
// remain, so the unpickler, which allocates what a length claims before
// reading, is never asked for more memory than the (bounded) pickle holds.
// Opcodes a state dict never uses (extension registry, out-of-band buffers)
// are refused.
func scanPickle(p []byte) error {
	i := 0
	need := func(n uint64) error {
		if n > uint64(len(p)-i) {
			return fmt.Errorf("opcode at byte %d declares %d bytes, only %d remain (truncated or corrupt)", i, n, len(p)-i)
		}
		return nil
	}
	le := func(n int) uint64 {
		var v uint64
		for k := n - 1; k >= 0; k-- {
			v = v<<8 | uint64(p[i+k])
		}
		return v
	}
	line := func() error {
		j := bytes.IndexByte(p[i:], '\n')
		if j < 0 {
			return fmt.Errorf("unterminated text argument at byte %d", i)
		}
		i += j + 1
		return nil
	}
	for i < len(p) {
		op := p[i]
		at := i
		i++
		var fixed, lenBytes int
		lines := 0
		switch op {
		case '.': // STOP
			return nil
		case '(', '0', '1', '2', 'N', 'Q', 'R', 'a', 'b', 'd', '}', 'e', 'l', ']', 'o', 's', 't', ')', 'u',
			0x81, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8f, 0x90, 0x91, 0x92, 0x93, 0x94:
		case 'F', 'I', 'L', 'P', 'S', 'V', 'g', 'p':
			lines = 1
		case 'c', 'i':
			lines = 2
		case 'K', 'h', 'q', 0x80:
			fixed = 1
		case 'M':
			fixed = 2
		case 'J', 'j', 'r':
			fixed = 4
		case 'G':
			fixed = 8
		case 0x95: // FRAME: its size must fit; its contents are opcodes
			fixed = 8
		case 'U', 'C', 0x8c, 0x8a: // 1-byte length
			lenBytes = 1
		case 'T', 'X', 'B', 0x8b: // 4-byte length
			lenBytes = 4
		case 0x8d, 0x8e, 0x96: // 8-byte length
			lenBytes = 8
		default:
			return fmt.Errorf("opcode 0x%02x at byte %d is not allowed in a state dict", op, at)
		}
		for ; lines > 0; lines-- {
			if err := line(); err != nil {
				return err
			}
		}
		if fixed > 0 {
			if err := need(uint64(fixed)); err != nil {
				return err
			}
			if op == 0x95 {
				if err := need(8 + le(8)); err != nil {
					return err
				}
			}
			i += fixed
		}
		if lenBytes > 0 {
			if err := need(uint64(lenBytes)); err != nil {
				return err
			}
			n := le(lenBytes)
			i += lenBytes
			if op == 'T' || op == 0x8b { // signed 4-byte lengths
				if int32(n) < 0 {
					return fmt.Errorf("negative length at byte %d", at)
				}
			}
			if err := need(n); err != nil {
				return err
			}
			i += int(n)
		}
	}
	return fmt.Errorf("no STOP opcode (truncated)")
}
