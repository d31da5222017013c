package dac_test

import (
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/internal/conformance"
)

// epilogueBackend is the CPU backend with compute.ConvEpilogues done by its
// own ops, as the interface defines them, counting the calls: the residual
// units' fused path (resUnit.branch) on a machine without a GPU.
type epilogueBackend struct {
	compute.Backend
	snakes, residuals int
}

func (b *epilogueBackend) Conv1dSnake(x, w, bias compute.Tensor, c compute.Conv1dSpec, alpha compute.Tensor) compute.Tensor {
	b.snakes++
	y := b.Conv1d(x, w, bias, c)
	out := b.Snake(y, alpha)
	b.Free(y)
	return out
}

func (b *epilogueBackend) Conv1dResidual(x, w, bias compute.Tensor, c compute.Conv1dSpec, res compute.Tensor, off int) compute.Tensor {
	b.residuals++
	y := b.Conv1d(x, w, bias, c)
	r := b.Slice(res, 2, off, off+y.Shape()[2])
	out := b.Add(r, y)
	b.Free(r)
	b.Free(y)
	return out
}

// TestResidualUnitEpilogues: with a backend that has compute.ConvEpilogues,
// one-shot decoding gives the same bits as without them, the streamer
// stays bit-identical to one-shot decoding in every chunking, and both
// paths do call the epilogues (with the residual's offset into the
// streamed window, which only a wrong offset would break).
func TestResidualUnitEpilogues(t *testing.T) {
	plain := randomModel(t, narrow44k(), cpu.New(0), 31)
	eb := &epilogueBackend{Backend: cpu.New(0)}
	fused := randomModel(t, narrow44k(), eb, 31)
	for _, T := range []int{1, 9, 30} {
		codes := randomCodes(plain.Config(), T, uint64(200+T))
		want := decode(t, plain, codes)
		eb.snakes, eb.residuals = 0, 0
		got := decode(t, fused, codes)
		if eb.snakes == 0 || eb.residuals != eb.snakes {
			t.Fatalf("T=%d: one-shot decoding made %d Conv1dSnake and %d Conv1dResidual calls", T, eb.snakes, eb.residuals)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("T=%d: sample %d is %g with the epilogues, %g without", T, i, got[i], want[i])
			}
		}
		for i, c := range conformance.StreamCases {
			eb.snakes, eb.residuals = 0, 0
			r, err := conformance.CompareStream(fused, codes, want, c, uint64(i))
			if err != nil {
				t.Fatalf("T=%d %s: %v", T, c.Name, err)
			}
			if r.MaxAbs != 0 {
				t.Errorf("T=%d %s: streamed through the epilogues, max |Δ| %.3g against one-shot", T, c.Name, r.MaxAbs)
			}
			if eb.residuals == 0 {
				t.Errorf("T=%d %s: the streamer made no Conv1dResidual call", T, c.Name)
			}
		}
	}
}
