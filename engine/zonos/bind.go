package zonos

import (
	"fmt"
	"sort"
	"strings"

	"zonostream/engine/compute"
	"zonostream/engine/weights"
)

// binder uploads checkpoint tensors by name and collects every problem
// (missing, mis-shaped, unsupported dtype) so a bad checkpoint is reported
// in one error rather than one tensor at a time.
type binder struct {
	file     *weights.File
	backend  compute.Backend
	used     map[string]bool
	problems []string
	// upload is the backend's first refusal (device out of memory): not a
	// problem of the checkpoint, so it is reported on its own.
	upload error
}

func newBinder(f *weights.File, b compute.Backend) *binder {
	return &binder{file: f, backend: b, used: map[string]bool{}}
}

func shapeString(s []int) string {
	return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(s)), ", "), "[]")
}

// raw returns the checked tensor or nil after recording a problem.
func (bd *binder) raw(name string, shape ...int) *weights.Tensor {
	bd.used[name] = true
	t, err := bd.file.Tensor(name)
	if err != nil {
		bd.problems = append(bd.problems, fmt.Sprintf("missing %s [%s]", name, shapeString(shape)))
		return nil
	}
	ok := len(t.Shape) == len(shape)
	for i := 0; ok && i < len(shape); i++ {
		ok = t.Shape[i] == shape[i]
	}
	if !ok {
		bd.problems = append(bd.problems, fmt.Sprintf("%s has shape [%s], want [%s]", name, shapeString(t.Shape), shapeString(shape)))
		return nil
	}
	if dtypeOf(t.DType) == nil {
		bd.problems = append(bd.problems, fmt.Sprintf("%s has dtype %s, want BF16, F16 or F32", name, t.DType))
		return nil
	}
	return t
}

func dtypeOf(d weights.DType) *compute.DType {
	var c compute.DType
	switch d {
	case weights.F32:
		c = compute.F32
	case weights.BF16:
		c = compute.BF16
	case weights.F16:
		c = compute.F16
	default:
		return nil
	}
	return &c
}

// tensor uploads a weight in its stored dtype.
func (bd *binder) tensor(name string, shape ...int) compute.Tensor {
	t := bd.raw(name, shape...)
	if t == nil {
		return nil
	}
	u, err := bd.backend.Upload(*dtypeOf(t.DType), t.Shape, t.Data)
	if err != nil {
		if bd.upload == nil {
			bd.upload = fmt.Errorf("zonos weights %s: uploading %s: %w", bd.file.Path, name, err)
		}
		return nil
	}
	return u
}

// floats reads a small weight to the host as float32 (conditioner
// vectors, Fourier projections).
func (bd *binder) floats(name string, shape ...int) []float32 {
	t := bd.raw(name, shape...)
	if t == nil {
		return nil
	}
	v, err := t.Float32s()
	if err != nil {
		bd.problems = append(bd.problems, err.Error())
	}
	return v
}

// err reports every problem plus the tensors nobody asked for.
func (bd *binder) err() error {
	if bd.upload != nil {
		return bd.upload
	}
	var unexpected []string
	for _, n := range bd.file.Names() {
		if !bd.used[n] {
			unexpected = append(unexpected, n)
		}
	}
	sort.Strings(unexpected)
	for _, n := range unexpected {
		bd.problems = append(bd.problems, "unexpected "+n)
	}
	if len(bd.problems) == 0 {
		return nil
	}
	const show = 40
	list := bd.problems
	more := ""
	if len(list) > show {
		more = fmt.Sprintf("\n  … and %d more", len(list)-show)
		list = list[:show]
	}
	return fmt.Errorf("zonos weights %s do not match the config (%d problems):\n  %s%s",
		bd.file.Path, len(bd.problems), strings.Join(list, "\n  "), more)
}
