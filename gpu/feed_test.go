//go:build cuda

package gpu

import (
	"fmt"
	"slices"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/zonos"
)

// TestFeedAt checks device-side token feedback against the generate
// loop's own rule (zonos.EOSRule) and bookkeeping: the fed columns, the
// repetition windows shifted by one, the position, the 64-bit Philox
// counter (across a carry) and the loop state, for one and three
// utterances, with and without a window, before, at and after an EOS, and
// an EOS within the last nine steps, and columns of the codebook delay's
// ramp (trailing cells that stay MASK).
func TestFeedAt(t *testing.T) {
	need(t)
	const K = zonos.NumCodebooks
	type utt struct {
		tok       []int32
		remaining int
		stopping  bool
		masked    int
	}
	mk := func(base int32, eos bool) []int32 {
		tok := make([]int32, K)
		for k := range tok {
			tok[k] = base + int32(k*37)%1000
		}
		if eos {
			tok[0] = zonos.EOS
		}
		return tok
	}
	for _, c := range []struct {
		name string
		us   []utt
		w    int
		inc  uint32
	}{
		{"plain", []utt{{mk(5, false), 100, false, 0}}, 3, 2309},
		{"first eos", []utt{{mk(9, true), 100, false, 0}}, 3, 2309},
		{"eos near the end", []utt{{mk(9, true), 4, false, 0}}, 2, 0},
		{"stopping", []utt{{mk(1, false), 6, true, 0}}, 0, 7},
		{"ramp", []utt{{mk(2, false), 100, false, 7}}, 2, 2309},
		{"ramp's last", []utt{{mk(2, false), 100, false, 1}}, 0, 2309},
		{"eos in the ramp", []utt{{mk(6, true), 100, false, 5}}, 3, 2309},
		{"three", []utt{{mk(3, false), 50, false, 0}, {mk(4, true), 50, false, 3}, {mk(5, true), 3, true, 0}}, 4, 2309},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, w := len(c.us), c.w
			f := compute.StepFeed{N: n, Pos: K * n, RNG: K*n + 1, Hist: K*n + 5, Window: w, State: K*n + 5 + K*n*w,
				Inc: c.inc, EOS: zonos.EOS, MASK: zonos.MASK}
			const L, O = compute.LoopWords, compute.FeedOut
			in := make([]int32, f.State+L*n)
			for i := range in {
				in[i] = int32(-7 - i) // everything FeedAt must not touch stays
			}
			in[f.Pos] = 41
			in[f.RNG], in[f.RNG+1], in[f.RNG+2], in[f.RNG+3] = 11, 12, -100, 6 // counter 6·2³² + 2³²−100
			var tok []int32
			for u, x := range c.us {
				tok = append(tok, x.tok...)
				in[f.State+L*u], in[f.State+L*u+1], in[f.State+L*u+2] = int32(x.remaining), 0, int32(x.masked)
				if x.stopping {
					in[f.State+L*u+1] = 1
				}
				for r := 0; r < K*w; r++ {
					in[f.Hist+u*K*w+r] = int32(1000 + u*100 + r)
				}
			}
			// The loop's view.
			want := slices.Clone(in)
			wantOut := make([]int32, O*n)
			want[f.Pos]++
			ctr := uint64(uint32(in[f.RNG+2])) | uint64(uint32(in[f.RNG+3]))<<32 + uint64(c.inc)
			want[f.RNG+2], want[f.RNG+3] = int32(uint32(ctr)), int32(uint32(ctr>>32))
			for u, x := range c.us {
				col, rem, stop, _ := zonos.EOSRule(x.tok, x.remaining, x.stopping)
				for k := K - x.masked; k < K; k++ {
					col[k] = zonos.MASK // the loop writes tokens into the leading, unknown cells only
				}
				copy(wantOut[O*u:], x.tok)
				copy(wantOut[O*u+K:], col[:])
				wantOut[O*u+18] = int32(rem)
				if stop {
					wantOut[O*u+19] = 1
				}
				wantOut[O*u+20] = int32(max(x.masked-1, 0))
				copy(want[f.State+L*u:][:L], wantOut[O*u+18:][:L])
				for k := 0; k < K; k++ {
					want[k*n+u] = col[k]
					row := want[f.Hist+(u*K+k)*w:][:w]
					if w > 0 {
						copy(row, row[1:])
						row[w-1] = col[k]
					}
				}
			}
			it := gb.FromI32(in, len(in))
			out := gb.FeedAt(gb.FromI32(tok, len(tok)), it, f)
			gotIn, gotOut := gb.ReadI32(it), gb.ReadI32(out)
			if !slices.Equal(gotIn, want) {
				t.Errorf("input after feedback:\n got %v\nwant %v", gotIn, want)
			}
			if !slices.Equal(gotOut, wantOut) {
				t.Errorf("out:\n got %v\nwant %v", gotOut, wantOut)
			}
			t.Log(fmt.Sprintf("%d utterances, window %d: as the loop", n, w))
		})
	}
}
