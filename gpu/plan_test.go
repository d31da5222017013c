//go:build cuda

package gpu

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/zonos"
	"zonostream/internal/golden"
)

// TestMakePlan: compute capability 9 and newer get the Hopper plan, every
// choice in it; Ampere and Ada, and any device opened with
// Options{Generic: true}, the generic plan, none; the plan is named, and
// its one line (compute.Plan.String) names it first.
func TestMakePlan(t *testing.T) {
	all := plan{hopper: true, pdl: true, persistentMamba: true, fusedMamba: true, clusterAttention: true, chunkGemv: true, tcGemv: true, wgmmaPrefill: true}
	for _, c := range []struct {
		major   int
		generic bool
		want    plan
		name    string
	}{{8, false, plan{}, "generic"}, {8, true, plan{}, "generic"}, {9, false, all, "hopper"}, {9, true, plan{}, "generic"}, {10, false, plan{}, "generic"}} {
		p := makePlan(c.major, Options{Generic: c.generic})
		if p != c.want {
			t.Errorf("compute capability %d, generic %v: plan %+v, want %+v", c.major, c.generic, p, c.want)
		}
		if d := p.describe(); d.Name != c.name || !strings.HasPrefix(d.String(), c.name+": ") {
			t.Errorf("compute capability %d, generic %v: plan %q named %q, want %q first", c.major, c.generic, d, d.Name, c.name)
		}
	}
	if d := all.describe(); !slices.Contains(d.Choices, "clustered attention step (8)") || !slices.Contains(d.Choices, "persistent Mamba2 runs") {
		t.Errorf("the Hopper plan reads %q", d)
	}
}

// TestGenericPlan: the backend opened with Options{Generic: true} says so
// in its plan, and a teacher-forced decode of the tiny hybrid pack on it
// (prefill and 12 steps, CFG batch 2) gives the CPU's logits, with the
// decode step's attention on attn_split, never on the Hopper plan's
// attn_step.
func TestGenericPlan(t *testing.T) {
	b := genericBackend(t)
	if p := b.Plan(); p.Name != "generic" || len(p.Choices) == 0 || p.Choices[0] != "compute_80 modules" {
		t.Fatalf("plan %q, want the generic plan", p)
	}
	if b.plan != (plan{}) {
		t.Fatalf("generic plan %+v has Hopper choices", b.plan)
	}
	p := golden.Pack(t, "zonos-hybrid-tiny")
	load := func(be compute.Backend) *zonos.Model {
		m, err := zonos.Load(be, filepath.Join(p, "config.json"), filepath.Join(p, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	mg, mc := load(b), load(cpu.New(0))
	ids := []int32{2}
	for i := 0; i < 14; i++ {
		ids = append(ids, int32(10+(i*7)%60))
	}
	in := zonos.Inputs{PhonemeIDs: append(ids, 3), Values: map[string][]float32{"language_id": {24}}}
	mask := [zonos.NumCodebooks]int32{}
	for k := range mask {
		mask[k] = zonos.MASK
	}
	split, step := b.k["attn_split"].launches, b.k["attn_step"].launches
	var sg, sc *zonos.State
	for s := 0; s <= 12; s++ {
		var lg, lc []float32
		var errG, errC error
		if s == 0 {
			pg, _, err := mg.Prefix(in)
			if err != nil {
				t.Fatal(err)
			}
			pc, _, err := mc.Prefix(in)
			if err != nil {
				t.Fatal(err)
			}
			sg, sc = mg.NewState(96), mc.NewState(96)
			lg, errG = mg.Prefill(sg, pg, [][zonos.NumCodebooks]int32{mask}, 2, nil)
			lc, errC = mc.Prefill(sc, pc, [][zonos.NumCodebooks]int32{mask}, 2, nil)
		} else {
			var col [zonos.NumCodebooks]int32
			for k := range col {
				col[k] = int32((s*131 + k*7) % zonos.CodebookSize)
			}
			lg, errG = mg.Step(sg, col, 2, nil)
			lc, errC = mc.Step(sc, col, 2, nil)
		}
		if errG != nil || errC != nil {
			t.Fatalf("step %d: gpu %v, cpu %v", s, errG, errC)
		}
		if len(lg) != len(lc) {
			t.Fatalf("step %d: %d logits, want %d", s, len(lg), len(lc))
		}
		for i := range lc {
			if math.IsInf(float64(lc[i]), 0) && lg[i] == lc[i] {
				continue
			}
			if d := math.Abs(float64(lg[i] - lc[i])); !(d <= 1e-4*max(1, math.Abs(float64(lc[i])))) {
				t.Fatalf("step %d logit %d: gpu %g, cpu %g", s, i, lg[i], lc[i])
			}
		}
	}
	if b.k["attn_step"].launches != step || b.k["attn_split"].launches == split {
		t.Errorf("decode attention: attn_split %d launches, attn_step %d; want only attn_split",
			b.k["attn_split"].launches-split, b.k["attn_step"].launches-step)
	}
}
