package zonos

import (
	"context"
	"testing"

	"zonostream/engine/sample"
)

func TestDelayRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 5, 40} {
		codes := make([][NumCodebooks]int32, n)
		for i := range codes {
			for k := range codes[i] {
				codes[i][k] = int32((i*31 + k*7) % CodebookSize)
			}
		}
		grid := ApplyDelay(codes)
		if len(grid) != n+NumCodebooks {
			t.Fatalf("grid width %d for %d frames", len(grid), n)
		}
		for c := range grid {
			for k := range grid[c] {
				src := c - k - 1
				inside := src >= 0 && src < n
				if !inside && grid[c][k] != MASK {
					t.Fatalf("n=%d column %d codebook %d = %d, want MASK", n, c, k, grid[c][k])
				}
			}
		}
		back := RevertDelay(grid)
		if len(back) != n {
			t.Fatalf("revert gives %d frames, want %d", len(back), n)
		}
		for i := range back {
			if back[i] != codes[i] {
				t.Fatalf("frame %d: %v != %v", i, back[i], codes[i])
			}
		}
	}
}

// scripted returns logits whose argmax is a fixed pattern of real codes,
// with EOS winning codebook 0 at decode step eosStep (0 = never).
type scripted struct {
	n, eosStep int
}

func (s *scripted) logits() []float32 {
	l := make([]float32, NumCodebooks*LogitWidth)
	for k := 0; k < NumCodebooks; k++ {
		row := l[k*LogitWidth : (k+1)*LogitWidth]
		for i := range row {
			row[i] = -5
		}
		row[(s.n*13+k*101)%CodebookSize] = 5
		row[MASK] = float32(negInf())
	}
	if s.eosStep > 0 && s.n == s.eosStep {
		l[EOS] = 20
	}
	s.n++
	return l
}

func (s *scripted) Prefill([][NumCodebooks]int32) ([]float32, error) { return s.logits(), nil }
func (s *scripted) Step([NumCodebooks]int32) ([]float32, error)      { return s.logits(), nil }

// TestEOSAtEveryOffset: wherever codebook 0 emits EOS — early, mid-stream,
// or so late that fewer than 9 steps remain — the loop stops at the right
// step, returns the frames before the EOS frame, and streams exactly those.
// While the 9 closing steps stay clear of the grid's pre-filled MASK tail,
// every codebook ends cleanly (only real codes in the returned frames).
// Closer to the end the reference's masked_scatter shifts the forced
// MASK/EOS tokens down a codebook (see runTokens' write), which we copy: the
// golden sampling/loop1 case pins that behaviour.
func TestEOSAtEveryOffset(t *testing.T) {
	const maxNew = 30
	maxSteps := maxNew + NumCodebooks - 1
	for eos := 1; eos <= maxSteps; eos++ {
		var frames []Frame
		o := GenerateOptions{MaxNewTokens: maxNew, CFGScale: 2, Sampling: sample.Params{RepetitionPenalty: 1}}
		res, err := GenerateFrom(context.Background(), &scripted{eosStep: eos}, o, func(f Frame) error { frames = append(frames, f); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if !res.EOS {
			t.Fatalf("eos step %d: EOS not reported", eos)
		}
		wantSteps := min(eos+NumCodebooks-1, maxSteps)
		if len(res.StepTimes) != wantSteps {
			t.Errorf("eos step %d: ran %d steps, want %d", eos, len(res.StepTimes), wantSteps)
		}
		// EOS was written to codebook 0 at column eos+1; frames up to the
		// one before it are speech.
		wantFrames := min(eos, maxNew)
		if len(res.Codes) != wantFrames {
			t.Errorf("eos step %d: %d frames, want %d", eos, len(res.Codes), wantFrames)
		}
		for f := range res.Codes {
			for k := 0; k < NumCodebooks; k++ {
				clean := eos+NumCodebooks < maxNew+1
				if v := res.Delayed[f+k+1][k]; v < 0 || (v >= CodebookSize && clean) {
					t.Errorf("eos step %d: frame %d codebook %d holds %d", eos, f, k, v)
				}
			}
		}
		if len(frames) != len(res.Codes) {
			t.Fatalf("eos step %d: streamed %d frames, returned %d", eos, len(frames), len(res.Codes))
		}
		for i := range frames {
			if frames[i].Codes != res.Codes[i] {
				t.Fatalf("eos step %d: streamed frame %d differs", eos, i)
			}
		}
	}
}

// TestTailTrim: a generation told at EOS to drop its last t frames streams
// and returns exactly the untrimmed generation's frames less those t, for
// every t the loop allows and wherever EOS falls, and never drops a frame
// of the audio prefix. It asks once, and only when EOS comes.
func TestTailTrim(t *testing.T) {
	const maxNew = 30
	prefix := [][NumCodebooks]int32{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {9, 8, 7, 6, 5, 4, 3, 2, 1}}
	for _, P := range []int{0, len(prefix)} {
		for eos := 1; eos <= maxNew; eos++ {
			base := GenerateOptions{MaxNewTokens: maxNew, CFGScale: 2, Sampling: sample.Params{RepetitionPenalty: 1}, AudioPrefix: prefix[:P]}
			whole, err := GenerateFrom(context.Background(), &scripted{eosStep: eos}, base, nil)
			if err != nil {
				t.Fatal(err)
			}
			for trim := 0; trim <= MaxTailTrim; trim++ {
				o := base
				asked := 0
				o.TailTrim = func() int { asked++; return trim }
				var frames [][NumCodebooks]int32
				res, err := GenerateFrom(context.Background(), &scripted{eosStep: eos}, o, func(f Frame) error {
					frames = append(frames, f.Codes)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				want := whole.Codes[:max(P, len(whole.Codes)-trim)]
				if asked != 1 {
					t.Fatalf("prefix %d, eos %d, trim %d: asked %d times, want once", P, eos, trim, asked)
				}
				if len(res.Codes) != len(want) || len(frames) != len(want) {
					t.Fatalf("prefix %d, eos %d, trim %d: returned %d and streamed %d frames, want %d",
						P, eos, trim, len(res.Codes), len(frames), len(want))
				}
				for i := range want {
					if res.Codes[i] != want[i] || frames[i] != want[i] {
						t.Fatalf("prefix %d, eos %d, trim %d: frame %d differs", P, eos, trim, i)
					}
				}
			}
		}
	}
	// Without EOS nothing is trimmed and nobody is asked.
	o := GenerateOptions{MaxNewTokens: maxNew, CFGScale: 2, Sampling: sample.Params{RepetitionPenalty: 1},
		TailTrim: func() int { t.Fatal("asked without EOS"); return 0 }}
	res, err := GenerateFrom(context.Background(), &scripted{}, o, nil)
	if err != nil || len(res.Codes) != maxNew {
		t.Fatalf("no EOS: %d frames, %v; want %d", len(res.Codes), err, maxNew)
	}
}
