package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// TestConcurrentStreamsEqualAlone: utterances spoken at once — decoded
// one alone and the others in the scheduler's batch, vocoded in shared
// turns of the vocoder pool — each give the codes the same request gives
// when it is the engine's only utterance, and audio that is exactly the
// one-shot vocoding of those codes.
func TestConcurrentStreamsEqualAlone(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	reqs := make([]Request, 5)
	for i := range reqs {
		reqs[i] = Request{Text: fmt.Sprintf("Stream number %d speaks now.", i+1), Language: "en-us", Knobs: DefaultKnobs(),
			Seed: uint64(10 + i), MaxSeconds: 0.4 + 0.1*float64(i)}
	}
	reqs[3].Knobs.CFGScale = 3
	alone := make([][]float32, len(reqs))
	codes := make([]string, len(reqs))
	for i, r := range reqs {
		s, err := e.Synthesize(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = drain(s).pcm
		if err := s.Wait(); err != nil {
			t.Fatal(err)
		}
		codes[i] = fmt.Sprint(s.Codes())
	}
	got := make([]collected, len(reqs))
	streams := make([]*Stream, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		s, err := e.Synthesize(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		streams[i] = s
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = drain(s) }()
	}
	wg.Wait()
	for i, s := range streams {
		if err := s.Wait(); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		if fmt.Sprint(s.Codes()) != codes[i] {
			t.Errorf("stream %d: codes differ from the same request alone", i)
		}
		if !slices.Equal(got[i].pcm, alone[i]) {
			t.Errorf("stream %d: %d samples at once, %d alone, not equal", i, len(got[i].pcm), len(alone[i]))
		}
		cb := make([][]int32, 9)
		for _, f := range s.Codes() {
			for k := range cb {
				cb[k] = append(cb[k], f[k])
			}
		}
		ref, err := e.Codec().Decode(cb)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[i].pcm, ref) {
			t.Errorf("stream %d: streamed audio is not the one-shot vocoding of its codes", i)
		}
	}
	if st := e.Load(); st.Batched == 0 {
		t.Errorf("no stream shared the batch: %+v", st)
	}
}
