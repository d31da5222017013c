package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"zonostream/audio"
	"zonostream/engine/weights"
	"zonostream/internal/check"
)

// resamplePack is the name of the golden pack made by
// torchaudio.functional.resample (../shared/golden/README.md, "resample").
const resamplePack = "resample"

// resampleCase is one (from, to) pair of the pack with its tensors.
type resampleCase struct {
	From, To int
	Width    int       // torchaudio's kernel width (io.json kernel_width)
	In       []float32 // in.<from>
	Out      []float32 // out.<from>_to_<to>
	Kernel   []float32 // kernel.<from>_to_<to>, [phases, 1, taps]
	Shape    []int     // the kernel's shape
}

func (c resampleCase) name() string { return fmt.Sprintf("%d_to_%d", c.From, c.To) }

// loadResampleCases reads io.json and io.safetensors of the resample pack in
// dir. The tensors are copied out, so the file is closed on return.
func loadResampleCases(dir string) ([]resampleCase, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "io.json"))
	if err != nil {
		return nil, fmt.Errorf("resample golden pack: %w; point at ../shared/golden or set ZONOS_GOLDEN_DIR", err)
	}
	var meta struct {
		Entries []struct {
			From        int `json:"from"`
			To          int `json:"to"`
			KernelWidth int `json:"kernel_width"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("resample golden pack: %s: %w", filepath.Join(dir, "io.json"), err)
	}
	if len(meta.Entries) == 0 {
		return nil, fmt.Errorf("resample golden pack: %s lists no entries; regenerate the pack", filepath.Join(dir, "io.json"))
	}
	f, err := weights.Open(filepath.Join(dir, "io.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("resample golden pack: %w", err)
	}
	defer f.Close()
	floats := func(name string) ([]float32, []int, error) {
		t, err := f.Tensor(name)
		if err != nil {
			return nil, nil, err
		}
		v, err := t.Float32s()
		if err != nil {
			return nil, nil, fmt.Errorf("resample golden pack: %s: %w", name, err)
		}
		return v, append([]int(nil), t.Shape...), nil
	}
	var cases []resampleCase
	for _, e := range meta.Entries {
		c := resampleCase{From: e.From, To: e.To, Width: e.KernelWidth}
		if c.In, _, err = floats(fmt.Sprintf("in.%d", e.From)); err != nil {
			return nil, err
		}
		if c.Out, _, err = floats("out." + c.name()); err != nil {
			return nil, err
		}
		if c.Kernel, c.Shape, err = floats("kernel." + c.name()); err != nil {
			return nil, err
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// Resample checks audio.Resampler against torchaudio's outputs and
// kernels in the resample golden pack, for `zonos conformance`: one result
// per pair (`resample/<from>_to_<to>`, max |Δ| of the output) and one per
// kernel (`resample/kernel.<from>_to_<to>`), each held to check.RelTol.
// goldenDir is the golden root holding resample/ (../shared/golden) or the
// pack directory itself. A missing pack gives one SKIP result.
func Resample(goldenDir string) []check.Result {
	dir := filepath.Join(goldenDir, resamplePack)
	if _, err := os.Stat(filepath.Join(goldenDir, "io.json")); err == nil {
		dir = goldenDir
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return []check.Result{{Pack: resamplePack, Check: "all", Status: check.Skip, Measured: "-", Tol: "-",
			Detail: "pack not found in " + goldenDir + "; set ZONOS_GOLDEN_DIR or check out ../shared/golden"}}
	}
	cases, err := loadResampleCases(dir)
	if err != nil {
		return []check.Result{check.Failure(resamplePack, "load", err)}
	}
	var rs []check.Result
	for _, c := range cases {
		out, kernel, err := resampleAgainst(c)
		if err != nil {
			rs = append(rs, check.Failure(resamplePack, c.name(), err))
			continue
		}
		d, refMax := check.MaxAbsDiff(out, c.Out)
		rs = append(rs, check.Compare(resamplePack, c.name(), d, check.RelTol(refMax)))
		d, refMax = check.MaxAbsDiff(kernel, c.Kernel)
		rs = append(rs, check.Compare(resamplePack, "kernel."+c.name(), d, check.RelTol(refMax)))
	}
	return rs
}

// resampleAgainst runs the Resampler on one golden case and checks the
// shapes, returning the output and the kernel to compare.
func resampleAgainst(c resampleCase) (out, kernel []float32, err error) {
	r, err := audio.NewResampler(c.From, c.To)
	if err != nil {
		return nil, nil, err
	}
	k, phases, taps, err := r.Kernel()
	if err != nil {
		return nil, nil, err
	}
	if len(c.Shape) != 3 || c.Shape[0] != phases || c.Shape[1] != 1 || c.Shape[2] != taps {
		return nil, nil, fmt.Errorf("kernel shape [%d 1 %d], torchaudio %v", phases, taps, c.Shape)
	}
	if c.Width != 0 && r.Width() != c.Width {
		return nil, nil, fmt.Errorf("kernel width %d, torchaudio %d", r.Width(), c.Width)
	}
	out = r.Resample(c.In)
	if len(out) != len(c.Out) {
		return nil, nil, fmt.Errorf("output length %d, torchaudio %d", len(out), len(c.Out))
	}
	return out, k, nil
}
