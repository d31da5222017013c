package zonos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"zonostream/engine/sample"
)

// scriptedAhead is an aheadSource that plays scripted tokens and checks
// the generate loop's promises: after a step asked for with ahead, the
// loop's next step must come, fed exactly the column and loop state the
// EOS rule (what the device's FeedAt applies) makes of that step's tokens.
type scriptedAhead struct {
	t      *testing.T
	tokens func(step int) []int32
	step   int

	queued     bool
	wantCol    [NumCodebooks]int32
	wantLoop   loopState
	aheads     int
	aheadAt    []bool // per step
	mismatches int
}

func (s *scriptedAhead) prefillTokens(cols [][NumCodebooks]int32) ([]int32, error) {
	return s.tokens(0), nil
}

func (s *scriptedAhead) stepTokens(col [NumCodebooks]int32, history [][]int32) ([]int32, error) {
	s.t.Fatal("the loop stepped without the ahead interface")
	return nil, nil
}

func (s *scriptedAhead) stepTokensAhead(col [NumCodebooks]int32, history [][]int32, loop loopState, ahead bool) ([]int32, error) {
	if s.queued && (col != s.wantCol || loop != s.wantLoop) {
		s.mismatches++
		s.t.Errorf("step %d: queued with column %v and state %+v, the loop fed %v and %+v", s.step+1, s.wantCol, s.wantLoop, col, loop)
	}
	s.step++
	tok := s.tokens(s.step)
	c, r, st, _ := EOSRule(tok, loop.remaining, loop.stopping)
	for k := NumCodebooks - loop.masked; k < NumCodebooks; k++ {
		c[k] = MASK // the ramp's cells FeedAt leaves MASK
	}
	s.queued, s.wantCol, s.wantLoop = ahead, c, loopState{r, st, max(loop.masked-1, 0)}
	if ahead {
		s.aheads++
	}
	s.aheadAt = append(s.aheadAt, ahead)
	return tok, nil
}

// TestLoopQueuesOnlyWhatFeedbackWrites drives the generate loop with
// scripted tokens — EOS early, EOS within the last nine steps, no EOS
// (the tail columns hold MASK cells), an audio prefix (known cells) — and
// checks every step it queues ahead: the next step comes, and the device's
// rule for the fed column and loop state agrees with the loop.
func TestLoopQueuesOnlyWhatFeedbackWrites(t *testing.T) {
	plain, eosAt, prefix := scriptedTokens, scriptedEOSAt, scriptedPrefix()
	for _, c := range []struct {
		name   string
		frames int
		prefix [][NumCodebooks]int32
		tokens func(int) []int32
		eos    bool
		// with no audio prefix the first steps, whose columns hold the
		// codebook delay's MASK cells, are queued ahead too
		rampAhead bool
	}{
		{"eos early", 60, nil, eosAt(12), true, true},
		{"eos in the delay's ramp", 40, nil, eosAt(3), true, true},
		{"eos at the first step", 40, nil, eosAt(1), true, true},
		{"eos near the end", 30, nil, eosAt(34), true, true},
		{"no eos", 25, nil, plain, false, true},
		{"audio prefix", 30, prefix, eosAt(20), true, false},
		{"one frame", 1, nil, plain, false, false}, // its columns hold MASK on both sides
		{"two frames", 2, nil, plain, false, false},
		{"three frames", 3, nil, plain, false, false},
		{"ten frames", 10, nil, plain, false, true},
		{"eos at step 5 of ten", 10, nil, eosAt(5), true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &scriptedAhead{t: t, tokens: c.tokens}
			o := GenerateOptions{MaxNewTokens: c.frames, CFGScale: 2, AudioPrefix: c.prefix}
			res, err := runTokens(context.Background(), s, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			if s.queued {
				t.Errorf("the last step (%d) queued one more that never ran", s.step)
			}
			if res.EOS != c.eos {
				t.Errorf("EOS %v, want %v", res.EOS, c.eos)
			}
			if s.aheads == 0 && c.frames > 2 {
				t.Errorf("no step queued ahead in %d", s.step)
			}
			for i := 0; c.rampAhead && i < min(NumCodebooks-1, s.step-1); i++ {
				if !s.aheadAt[i] {
					t.Errorf("step %d of the delay's ramp not queued ahead (queued: %v)", i+1, s.aheadAt)
					break
				}
			}
			t.Log(fmt.Sprintf("%d steps, %d queued ahead, EOS %v", s.step, s.aheads, res.EOS))
		})
	}
}

// TestFeedable: the columns device-side token feedback may write are the
// ones whose unknown cells lead and whose other cells are MASK — every
// column of a generation without an audio prefix up to the tail — and
// masked counts the trailing MASK cells of any column.
func TestFeedable(t *testing.T) {
	U, M := int32(Unknown), int32(MASK)
	for _, c := range []struct {
		name   string
		col    [NumCodebooks]int32
		masked int
		ok     bool
	}{
		{"all unknown", [NumCodebooks]int32{U, U, U, U, U, U, U, U, U}, 0, true},
		{"the delay's second column", [NumCodebooks]int32{U, U, M, M, M, M, M, M, M}, 7, true},
		{"the delay's last ramp column", [NumCodebooks]int32{U, U, U, U, U, U, U, U, M}, 1, true},
		{"all MASK", [NumCodebooks]int32{M, M, M, M, M, M, M, M, M}, 9, false},
		{"the tail: MASK leads", [NumCodebooks]int32{M, M, U, U, U, U, U, U, U}, 0, false},
		{"an audio prefix's code after the unknown cells", [NumCodebooks]int32{U, 17, M, M, M, M, M, M, M}, 7, false},
		{"a written cell first", [NumCodebooks]int32{5, U, U, U, U, U, U, U, U}, 0, false},
		{"MASK between unknown cells", [NumCodebooks]int32{U, M, U, M, M, M, M, M, M}, 6, false},
		{"a short utterance's column: MASK on both sides", [NumCodebooks]int32{M, U, U, M, M, M, M, M, M}, 6, false},
	} {
		masked, ok := feedable(c.col)
		if ok != c.ok || masked != c.masked {
			t.Errorf("%s: feedable = %d, %v; want %d, %v", c.name, masked, ok, c.masked, c.ok)
		}
	}
	// Every column ApplyDelay makes for frames still to generate, no
	// prefix: feedable up to the tail, with 9 − t MASK cells in column t.
	codes := make([][NumCodebooks]int32, 20)
	for i := range codes {
		for k := range codes[i] {
			codes[i][k] = Unknown
		}
	}
	grid := ApplyDelay(codes)
	for col := 1; col <= len(codes); col++ {
		masked, ok := feedable(grid[col])
		if want := max(NumCodebooks-col, 0); !ok || masked != want {
			t.Errorf("column %d %v: feedable = %d, %v; want %d, true", col, grid[col], masked, ok, want)
		}
	}
}

// TestHoldAfterFrames: with HoldAfterFrames = N, Hold is called once,
// right after frame N−1 went to onFrame (after the whole prefix for
// N ≤ P: the prefill delivers it at once) and before any later frame or
// step; the step that delivered it (step N − P + 7 of an utterance with a
// P-frame audio prefix, N > P; the prefill for N ≤ P) is the one step not
// queued ahead that a run without the hold queues ahead, and everything
// else — the other steps' ahead, the frames, the codes — is unchanged. An
// utterance that delivers fewer than N frames (EOS first, the hold
// step's frame trimmed as the EOS frame, too few frames) never holds.
func TestHoldAfterFrames(t *testing.T) {
	plain, eosAt, prefix := scriptedTokens, scriptedEOSAt, scriptedPrefix()
	for _, c := range []struct {
		name   string
		frames int
		prefix [][NumCodebooks]int32
		tokens func(int) []int32
		n      int
		step   int  // the step after which Hold runs (0: the prefill; −1: never)
		forced bool // a run without the hold queues that step ahead
	}{
		{"dac_44khz's first emission (10 frames)", 40, nil, plain, 10, 17, true},
		{"the first frame", 40, nil, plain, 1, 8, true},
		{"audio prefix", 30, prefix, eosAt(20), 8, 10, true},
		{"the first frame after the prefix", 30, prefix, plain, 6, 8, true},
		{"within the prefix", 30, prefix, plain, 3, 0, false},
		{"the whole prefix", 30, prefix, plain, 5, 0, false},
		{"EOS closes after the hold step", 40, nil, eosAt(10), 10, 17, true},
		{"the hold step's frame is the EOS frame", 40, nil, eosAt(9), 10, -1, false},
		{"EOS in the delay's ramp", 40, nil, eosAt(3), 10, -1, false},
		{"the utterance's last frame", 12, nil, plain, 12, 19, false},
		{"more frames than the utterance", 8, nil, plain, 9, -1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := GenerateOptions{MaxNewTokens: c.frames, CFGScale: 2, AudioPrefix: c.prefix}
			base := &scriptedAhead{t: t, tokens: c.tokens}
			var baseFrames []int
			want, err := runTokens(context.Background(), base, o, func(f Frame) error { baseFrames = append(baseFrames, f.Index); return nil })
			if err != nil {
				t.Fatal(err)
			}

			s := &scriptedAhead{t: t, tokens: c.tokens}
			var log []int // frame indices, −1 for the hold
			holdStep := -1
			o.HoldAfterFrames = c.n
			o.Hold = func() error {
				if holdStep >= 0 {
					t.Errorf("Hold called again after step %d", s.step)
				}
				holdStep = s.step
				log = append(log, -1)
				return nil
			}
			res, err := runTokens(context.Background(), s, o, func(f Frame) error { log = append(log, f.Index); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if holdStep != c.step {
				t.Errorf("Hold after step %d, want %d (frames and hold: %v)", holdStep, c.step, log)
			}
			var frames []int
			for i, f := range log {
				if f == -1 {
					if last := max(c.n, len(c.prefix)) - 1; i != last+1 || log[i-1] != last {
						t.Errorf("Hold at position %d of %v, want right after frame %d", i, log, last)
					}
					continue
				}
				frames = append(frames, f)
			}
			if fmt.Sprint(frames) != fmt.Sprint(baseFrames) || fmt.Sprint(res.Codes) != fmt.Sprint(want.Codes) {
				t.Errorf("the hold changed the frames: %v, without it %v", frames, baseFrames)
			}
			if len(s.aheadAt) != len(base.aheadAt) {
				t.Fatalf("%d steps, %d without the hold", len(s.aheadAt), len(base.aheadAt))
			}
			for i := range s.aheadAt {
				hold := i+1 == c.step
				if hold && s.aheadAt[i] {
					t.Errorf("the hold step %d was queued ahead", i+1)
				}
				if !hold && s.aheadAt[i] != base.aheadAt[i] {
					t.Errorf("step %d: ahead %v, without the hold %v", i+1, s.aheadAt[i], base.aheadAt[i])
				}
			}
			if c.forced && !base.aheadAt[c.step-1] {
				t.Errorf("step %d is not queued ahead without the hold: the case checks nothing", c.step)
			}
		})
	}
}

// TestHoldError: Hold's error ends generation at once, as onFrame's does;
// HoldAfterFrames without Hold changes nothing.
func TestHoldError(t *testing.T) {
	s := &scriptedAhead{t: t, tokens: func(step int) []int32 {
		tok := make([]int32, NumCodebooks)
		for k := range tok {
			tok[k] = int32((step*31 + k*7) % CodebookSize)
		}
		return tok
	}}
	stop := fmt.Errorf("the vocoder failed")
	frames := 0
	o := GenerateOptions{MaxNewTokens: 40, CFGScale: 2, HoldAfterFrames: 10, Hold: func() error { return stop }}
	_, err := runTokens(context.Background(), s, o, func(Frame) error { frames++; return nil })
	if err != stop {
		t.Fatalf("error %v, want Hold's", err)
	}
	if frames != 10 || s.step != 17 || s.queued {
		t.Errorf("ended after %d frames and %d steps (one queued: %v); want 10 frames, 17 steps, none queued", frames, s.step, s.queued)
	}

	s = &scriptedAhead{t: t, tokens: s.tokens}
	o.Hold = nil
	if _, err := runTokens(context.Background(), s, o, nil); err != nil {
		t.Fatal(err)
	}
	for i, a := range s.aheadAt[:30] {
		if !a {
			t.Errorf("HoldAfterFrames without Hold: step %d not queued ahead", i+1)
		}
	}
}

// TestHoldWithoutAhead: a token source that cannot queue steps ahead
// (the host sampler) holds at the same point.
func TestHoldWithoutAhead(t *testing.T) {
	var log []string
	steps := 0
	o := GenerateOptions{MaxNewTokens: 30, CFGScale: 2, Sampling: sample.Params{RepetitionPenalty: 1},
		OnStep:          func(int, time.Duration) error { steps++; return nil },
		HoldAfterFrames: 10,
		Hold:            func() error { log = append(log, fmt.Sprintf("hold@%d", steps)); return nil }}
	if _, err := GenerateFrom(context.Background(), &scripted{}, o, func(f Frame) error {
		log = append(log, fmt.Sprint(f.Index))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(log) != 31 || log[10] != "hold@17" || log[9] != "9" {
		t.Errorf("frames and hold: %v; want hold@17 right after frame 9", log)
	}
}

// scriptedTokens is a decode step's tokens in the loop tests: a fixed
// pattern of the step, never EOS.
func scriptedTokens(step int) []int32 {
	tok := make([]int32, NumCodebooks)
	for k := range tok {
		tok[k] = int32((step*31 + k*7) % CodebookSize)
	}
	return tok
}

// scriptedEOSAt is scriptedTokens with codebook 0 EOS from step at on (and
// again at every later step: the EOS rule must ignore repeats).
func scriptedEOSAt(at int) func(int) []int32 {
	return func(step int) []int32 {
		tok := scriptedTokens(step)
		if step >= at {
			tok[0] = EOS
		}
		return tok
	}
}

// scriptedPrefix is a 5-frame audio prefix for the loop tests.
func scriptedPrefix() [][NumCodebooks]int32 {
	prefix := make([][NumCodebooks]int32, 5)
	for i := range prefix {
		for k := range prefix[i] {
			prefix[i][k] = int32(i*9 + k)
		}
	}
	return prefix
}
