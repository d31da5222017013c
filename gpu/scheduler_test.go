//go:build cuda

package gpu

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"zonostream/engine/sample"
	"zonostream/engine/zonos"
	"zonostream/internal/golden"
)

// TestSchedulerBatchOnGPU: on the GPU a stream's codes in the scheduler's
// batch do not depend on the other streams in it: a request that decodes
// in the batch beside three others (arriving and leaving at other times,
// with other knobs and seeds) gives exactly the codes it gives in the
// batch alone. Each row of a batch step is computed on its own, and each
// stream samples with its own params (RowSamplerOps). How many of its
// frames also equal Generate's for the request alone — the single-row
// kernels, not the batch's — is logged.
func TestSchedulerBatchOnGPU(t *testing.T) {
	p := golden.Pack(t, "zonos-hybrid-tiny")
	m, err := zonos.Load(gb, filepath.Join(p, "config.json"), filepath.Join(p, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	req := func(u int) (zonos.Inputs, zonos.GenerateOptions) {
		ids := []int32{2}
		for i := 0; i < 4+u; i++ {
			ids = append(ids, int32(10+(i*7+u*5)%60))
		}
		sp := sample.Defaults()
		if u%2 == 1 {
			sp.Temperature, sp.TopK = 0.8, 50
		}
		return zonos.Inputs{PhonemeIDs: append(ids, 3), Values: map[string][]float32{"language_id": {float32(24 + u)}}},
			zonos.GenerateOptions{MaxNewTokens: 60 + 10*u, CFGScale: 2, Sampling: sp, Seed: uint64(7 + u), ForbidEOS: true}
	}
	run := func(s *zonos.Scheduler, u int, at chan struct{}, n int) [][zonos.NumCodebooks]int32 {
		in, o := req(u)
		var got [][zonos.NumCodebooks]int32
		if _, err := s.Generate(context.Background(), in, o, func(f zonos.Frame) error {
			got = append(got, f.Codes)
			if at != nil && len(got) == n {
				close(at)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// batched runs request 1 in the batch (a long request 0 decodes alone
	// first, so every later arrival joins the batch, which then adopts
	// request 0 too) with the others given.
	batched := func(others []int) [][zonos.NumCodebooks]int32 {
		s, err := m.NewScheduler(4, 512)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var wg sync.WaitGroup
		first := make(chan struct{})
		wg.Add(1)
		go func() { defer wg.Done(); run(s, 0, first, 2) }()
		<-first
		var got [][zonos.NumCodebooks]int32
		mid := make(chan struct{})
		wg.Add(1)
		go func() { defer wg.Done(); got = run(s, 1, mid, 5) }()
		<-mid
		for _, u := range others {
			wg.Add(1)
			go func() { defer wg.Done(); run(s, u, nil, 0) }()
		}
		wg.Wait()
		return got
	}
	alone, mixed := batched(nil), batched([]int{2, 3, 4})
	if len(alone) != len(mixed) {
		t.Fatalf("%d frames beside others, %d alone in the batch", len(mixed), len(alone))
	}
	for f := range alone {
		if alone[f] != mixed[f] {
			t.Fatalf("frame %d: %v beside others, %v alone in the batch", f, mixed[f], alone[f])
		}
	}
	in, o := req(1)
	var solo [][zonos.NumCodebooks]int32
	if _, err := m.Generate(context.Background(), in, o, func(f zonos.Frame) error { solo = append(solo, f.Codes); return nil }); err != nil {
		t.Fatal(err)
	}
	same := 0
	for f := range solo {
		if f < len(alone) && solo[f] == alone[f] {
			same++
		} else {
			break
		}
	}
	t.Logf("%d frames identical beside 3 others and alone in the batch; the first %d of %d also equal Generate's alone", len(alone), same, len(solo))
}
