package zonos

import (
	"errors"
	"path/filepath"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/internal/golden"
)

// poolBackend is the CPU backend claiming compute.GraphOps, so the state
// pool runs on a machine without a GPU. Clear and WriteI32 work; recording
// is refused, which keeps these tests to the pool itself (the graphs are
// tested on the GPU: gpu TestStepGraphMatchesEager).
type poolBackend struct {
	compute.Backend
	clears int
}

func (p *poolBackend) Capture(func()) (compute.Graph, error) {
	return nil, errors.New("poolBackend records no graphs")
}

func (p *poolBackend) WriteI32(dst compute.Tensor, data []int32) {
	p.CopyInto(dst, 0, 0, p.FromI32(data, dst.Shape()...))
}

func (p *poolBackend) Clear(t compute.Tensor) {
	p.clears++
	p.CopyInto(t, 0, 0, p.Zeros(t.Shape()...))
}

func (p *poolBackend) SampleAt(logits, history compute.Tensor, s compute.SampleSpec, rng compute.Tensor) compute.Tensor {
	panic("poolBackend: SampleAt")
}

func (p *poolBackend) FeedAt(tok, in compute.Tensor, f compute.StepFeed) compute.Tensor {
	panic("poolBackend: FeedAt")
}

func (p *poolBackend) ReadI32Async(t compute.Tensor) func() []int32 {
	v := p.ReadI32(t)
	return func() []int32 { return v }
}

// TestStatePool: states come back from the pool empty (position 0, Mamba2
// states zeroed), the smallest big-enough one is reused, sizes are rounded
// up, a state in use is never handed out twice, and at most statePoolSize
// idle states are kept (the rest are freed).
func TestStatePool(t *testing.T) {
	dir := golden.Pack(t, "zonos-hybrid-tiny")
	pb := &poolBackend{Backend: cpu.New(1)}
	m, err := Load(pb, filepath.Join(dir, "config.json"), filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	a := m.acquireState(100)
	if a.maxLen != stateQuantum {
		t.Fatalf("state for 100 positions holds %d, want %d", a.maxLen, stateQuantum)
	}
	// Dirty it: a prefill moves the position and fills the Mamba2 states.
	prefix, _, err := m.Prefix(Inputs{PhonemeIDs: []int32{2, 10, 11, 12, 3}, Values: map[string][]float32{"language_id": {24}}})
	if err != nil {
		t.Fatal(err)
	}
	mask := [NumCodebooks]int32{MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK}
	if _, err := m.Prefill(a, prefix, [][NumCodebooks]int32{mask}, 2, nil); err != nil {
		t.Fatal(err)
	}
	var mamba *layerState
	for i := range a.layers {
		if a.layers[i].ssm != nil {
			mamba = &a.layers[i]
			break
		}
	}
	if mamba == nil {
		t.Fatal("the tiny hybrid has no Mamba2 layer")
	}
	if nonZero(pb.ReadF32(mamba.ssm)) == 0 {
		t.Fatal("prefill left the SSM state zero; the test cannot tell a reset")
	}
	b := m.acquireState(100) // a is in use
	if b == a {
		t.Fatal("a state in use was handed out again")
	}
	m.releaseState(a)
	c := m.acquireState(50)
	if c != a {
		t.Fatal("the idle state was not reused")
	}
	if c.pos != 0 || nonZero(pb.ReadF32(mamba.ssm)) != 0 || nonZero(pb.ReadF32(mamba.conv)) != 0 {
		t.Fatalf("reused state not empty: pos %d, ssm %d and conv %d non-zero values", c.pos, nonZero(pb.ReadF32(mamba.ssm)), nonZero(pb.ReadF32(mamba.conv)))
	}
	big := m.acquireState(stateQuantum + 1)
	if big.maxLen != 2*stateQuantum {
		t.Fatalf("state for %d positions holds %d", stateQuantum+1, big.maxLen)
	}
	m.releaseState(big)
	m.releaseState(b)
	if got := m.acquireState(10); got != b {
		t.Fatal("the smallest big-enough idle state was not the one reused")
	} else {
		m.releaseState(got)
	}
	m.releaseState(c) // three idle now: the oldest (big) is freed
	if len(m.states.idle) != statePoolSize {
		t.Fatalf("%d idle states kept, want %d", len(m.states.idle), statePoolSize)
	}
	if big.layers != nil {
		t.Fatal("the state dropped from the pool was not freed")
	}
	kept := append([]*State(nil), m.states.idle...)
	m.FreeStates()
	if len(m.states.idle) != 0 || kept[0].layers != nil || kept[1].layers != nil {
		t.Fatalf("FreeStates left %d idle states (or did not free them)", len(m.states.idle))
	}
	if fresh := m.acquireState(10); fresh == b || fresh == c {
		t.Fatal("a freed state was handed out again")
	}
}

func nonZero(v []float32) int {
	n := 0
	for _, x := range v {
		if x != 0 {
			n++
		}
	}
	return n
}
