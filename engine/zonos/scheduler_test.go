package zonos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"zonostream/engine/sample"
)

// schedCase is one utterance of a scheduler test: its inputs and knobs.
type schedCase struct {
	in Inputs
	o  GenerateOptions
}

// schedCases are utterances that differ in everything a stream keeps for
// itself: prompt, seed, guidance scale, sampler knobs, repetition window,
// ForbidEOS and an audio prefix.
func schedCases() []schedCase {
	var cs []schedCase
	for u := 0; u < 6; u++ {
		ids := []int32{2}
		for i := 0; i < 3+u; i++ {
			ids = append(ids, int32(10+(i*7+u*5)%60))
		}
		sp := sample.Defaults()
		switch u % 3 {
		case 1:
			sp.Temperature, sp.TopK, sp.RepetitionWindow = 0.8, 40, 4
		case 2:
			sp.MinP, sp.TopP, sp.RepetitionPenalty = 0, 0.9, 1
		}
		o := GenerateOptions{MaxNewTokens: 30 + 7*u, CFGScale: 2 + float32(u%2), Sampling: sp, Seed: uint64(100 + u), ForbidEOS: u%2 == 0}
		if u == 3 {
			o.AudioPrefix = [][NumCodebooks]int32{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {11, 12, 13, 14, 15, 16, 17, 18, 19}}
		}
		cs = append(cs, schedCase{in: Inputs{PhonemeIDs: append(ids, 3), Values: map[string][]float32{"language_id": {float32(24 + u)}}}, o: o})
	}
	return cs
}

// frames runs one utterance through gen and returns every frame given to
// onFrame and the result; started, when set, is closed at its frame at.
func frames(t *testing.T, gen func(context.Context, Inputs, GenerateOptions, func(Frame) error) (*Result, error),
	ctx context.Context, c schedCase, at int, started chan struct{}) ([][NumCodebooks]int32, *Result, error) {
	var got [][NumCodebooks]int32
	res, err := gen(ctx, c.in, c.o, func(f Frame) error {
		if f.Index != len(got) {
			return fmt.Errorf("frame %d after %d frames", f.Index, len(got))
		}
		got = append(got, f.Codes)
		if started != nil && len(got) == at {
			close(started)
		}
		return nil
	})
	return got, res, err
}

// aloneFrames is each case's frames from Generate alone.
func aloneFrames(t *testing.T, m *Model, cs []schedCase) [][][NumCodebooks]int32 {
	t.Helper()
	want := make([][][NumCodebooks]int32, len(cs))
	for i, c := range cs {
		got, _, err := frames(t, m.Generate, context.Background(), c, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = got
	}
	return want
}

// TestSchedulerStreamsEqualAlone: utterances arriving one after another
// while others decode — so the first decodes alone and moves into the
// batch when the next arrives, the later ones share the batch, one waits
// for a place, slots are left and joined again — each give exactly the
// codes Generate gives the same request alone, frame for frame, on both
// backbones.
func TestSchedulerStreamsEqualAlone(t *testing.T) {
	for _, variant := range []string{"hybrid", "transformer"} {
		t.Run(variant, func(t *testing.T) {
			m := loadTinyVariant(t, variant)
			cs := schedCases()
			want := aloneFrames(t, m, cs)
			s, err := m.NewScheduler(3, 256)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := make([][][NumCodebooks]int32, len(cs))
			results := make([]*Result, len(cs))
			errs := make([]error, len(cs))
			var wg sync.WaitGroup
			prev := make(chan struct{})
			close(prev)
			for i, c := range cs {
				started := make(chan struct{})
				wait := prev
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-wait // each arrives once the one before has given 4 frames
					got[i], results[i], errs[i] = frames(t, s.Generate, context.Background(), c, 4, started)
					select {
					case <-started:
					default:
						close(started) // ended before its fourth frame
					}
				}()
				prev = started
			}
			wg.Wait()
			for i := range cs {
				if errs[i] != nil {
					t.Fatalf("utterance %d: %v", i, errs[i])
				}
				if len(got[i]) != len(want[i]) {
					t.Fatalf("utterance %d: %d frames scheduled, %d alone", i, len(got[i]), len(want[i]))
				}
				for f := range want[i] {
					if got[i][f] != want[i][f] {
						t.Fatalf("utterance %d frame %d: scheduled %v, alone %v", i, f, got[i][f], want[i][f])
					}
				}
				if len(results[i].Codes) != len(want[i]) {
					t.Errorf("utterance %d returned %d frames, gave %d", i, len(results[i].Codes), len(want[i]))
				}
			}
			st := settled(s)
			if st.Alone < 1 || st.Batched < 3 || st.Adopted < 1 || st.Active != 0 || st.Waiting != 0 {
				t.Errorf("stats after the run: %+v; want some alone and adopted by the batch, at least 3 batched, none left", st)
			}
		})
	}
}

// TestSchedulerCancel: an utterance cancelled mid-way in the batch ends
// with the context's error at once, its slot is freed for the next, and
// the others still give exactly their codes alone.
func TestSchedulerCancel(t *testing.T) {
	m := loadTiny(t)
	cs := schedCases()[:3]
	for i := range cs {
		cs[i].o.ForbidEOS, cs[i].o.MaxNewTokens = true, 40
	}
	want := aloneFrames(t, m, cs)
	s, err := m.NewScheduler(2, 256)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// 0 decodes alone and moves into the batch when 1 joins it; 1 is
	// cancelled at its 6th frame; 2 waits for a place (two at once) and
	// gets the freed slot.
	first := make(chan struct{})
	var wg sync.WaitGroup
	var got0, got2 [][NumCodebooks]int32
	var err0, err1, err2 error
	wg.Add(1)
	go func() {
		defer wg.Done()
		got0, _, err0 = frames(t, s.Generate, context.Background(), cs[0], 2, first)
	}()
	<-first
	ctx, cancel := context.WithCancel(context.Background())
	n1 := 0
	_, err1 = s.Generate(ctx, cs[1].in, cs[1].o, func(Frame) error {
		if n1++; n1 == 6 {
			cancel()
			wg.Add(1)
			go func() {
				defer wg.Done()
				got2, _, err2 = frames(t, s.Generate, context.Background(), cs[2], 0, nil)
			}()
		}
		return nil
	})
	if !errors.Is(err1, context.Canceled) {
		t.Errorf("cancelled utterance ended with %v", err1)
	}
	wg.Wait()
	if err0 != nil || err2 != nil {
		t.Fatal(err0, err2)
	}
	for i, g := range map[int][][NumCodebooks]int32{0: got0, 2: got2} {
		if fmt.Sprint(g) != fmt.Sprint(want[i]) {
			t.Errorf("utterance %d: scheduled codes differ from alone", i)
		}
	}
	if st := settled(s); st.Batched != 2 || st.Active != 0 {
		t.Errorf("stats %+v; want 2 batched (the cancelled one and the one after it), none active", st)
	}
}

// settled is s's stats once its last leave is taken (leaving does not
// wait for the loop).
func settled(s *Scheduler) SchedulerStats {
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := s.Stats()
		if st.Active == 0 || time.Now().After(deadline) {
			return st
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSchedulerRefusesAfterClose: a closed scheduler fails new utterances.
func TestSchedulerRefusesAfterClose(t *testing.T) {
	m := loadTiny(t)
	s, err := m.NewScheduler(2, 64)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	c := schedCases()[0]
	if _, err := s.Generate(context.Background(), c.in, c.o, nil); !errors.Is(err, errClosed) {
		t.Errorf("generate on a closed scheduler: %v", err)
	}
	if _, err := m.NewScheduler(-1, 64); err == nil {
		t.Error("a scheduler of −1 slots accepted")
	}
}

// TestSchedulerKeepsLongAlone: an utterance with more positions than the
// batch's rows hold decodes alone to its end while a later one takes the
// batch (it is never adopted, where it would outgrow its rows), and both
// give exactly their codes alone.
func TestSchedulerKeepsLongAlone(t *testing.T) {
	m := loadTiny(t)
	const maxLen = 64
	cs := schedCases()[:2]
	cs[0].o.MaxNewTokens, cs[0].o.ForbidEOS = 80, true // past the batch's 64 positions
	cs[1].o.MaxNewTokens = 20
	want := aloneFrames(t, m, cs)
	s, err := m.NewScheduler(2, maxLen)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := make([][][NumCodebooks]int32, len(cs))
	errs := make([]error, len(cs))
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		got[0], _, errs[0] = frames(t, s.Generate, context.Background(), cs[0], 4, started)
	}()
	go func() {
		defer wg.Done()
		<-started
		got[1], _, errs[1] = frames(t, s.Generate, context.Background(), cs[1], 0, nil)
	}()
	wg.Wait()
	for i := range cs {
		if errs[i] != nil {
			t.Fatalf("utterance %d: %v", i, errs[i])
		}
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("utterance %d: %d frames scheduled differ from its %d alone", i, len(got[i]), len(want[i]))
		}
	}
	if st := settled(s); st.Alone != 1 || st.Batched != 1 || st.Adopted != 0 {
		t.Errorf("stats %+v: want the long one alone and never adopted, the other batched", st)
	}
}
