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
// an EOS within the last nine steps.
func TestFeedAt(t *testing.T) {
	need(t)
	const K = zonos.NumCodebooks
	type utt struct {
		tok       []int32
		remaining int
		stopping  bool
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
		{"plain", []utt{{mk(5, false), 100, false}}, 3, 2309},
		{"first eos", []utt{{mk(9, true), 100, false}}, 3, 2309},
		{"eos near the end", []utt{{mk(9, true), 4, false}}, 2, 0},
		{"stopping", []utt{{mk(1, false), 6, true}}, 0, 7},
		{"three", []utt{{mk(3, false), 50, false}, {mk(4, true), 50, false}, {mk(5, true), 3, true}}, 4, 2309},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, w := len(c.us), c.w
			f := compute.StepFeed{N: n, Pos: K * n, RNG: K*n + 1, Hist: K*n + 5, Window: w, State: K*n + 5 + K*n*w,
				Inc: c.inc, EOS: zonos.EOS, MASK: zonos.MASK}
			in := make([]int32, f.State+2*n)
			for i := range in {
				in[i] = int32(-7 - i) // everything FeedAt must not touch stays
			}
			in[f.Pos] = 41
			in[f.RNG], in[f.RNG+1], in[f.RNG+2], in[f.RNG+3] = 11, 12, -100, 6 // counter 6·2³² + 2³²−100
			var tok []int32
			for u, x := range c.us {
				tok = append(tok, x.tok...)
				in[f.State+2*u], in[f.State+2*u+1] = int32(x.remaining), 0
				if x.stopping {
					in[f.State+2*u+1] = 1
				}
				for r := 0; r < K*w; r++ {
					in[f.Hist+u*K*w+r] = int32(1000 + u*100 + r)
				}
			}
			// The loop's view.
			want := slices.Clone(in)
			wantOut := make([]int32, 20*n)
			want[f.Pos]++
			ctr := uint64(uint32(in[f.RNG+2])) | uint64(uint32(in[f.RNG+3]))<<32 + uint64(c.inc)
			want[f.RNG+2], want[f.RNG+3] = int32(uint32(ctr)), int32(uint32(ctr>>32))
			for u, x := range c.us {
				col, rem, stop, _ := zonos.EOSRule(x.tok, x.remaining, x.stopping)
				copy(wantOut[20*u:], x.tok)
				copy(wantOut[20*u+K:], col[:])
				wantOut[20*u+18] = int32(rem)
				if stop {
					wantOut[20*u+19] = 1
				}
				want[f.State+2*u], want[f.State+2*u+1] = wantOut[20*u+18], wantOut[20*u+19]
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
