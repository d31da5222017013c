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
	"zonostream/internal/randmodel"
)

// TestSchedulerBatchOnGPU: on the GPU a stream's codes in the scheduler's
// batch do not depend on the other streams in it: a request that decodes
// in the batch beside three others (arriving and leaving at other times,
// with other knobs and seeds) gives exactly the codes it gives in the
// batch alone. Each row of a batch step is computed on its own, and each
// stream samples with its own params (RowSamplerOps). How many of its
// frames also equal Generate's for the request alone is logged: at the
// tiny pack's widths the chunk GEMV does not apply and a batch's
// projections run on other kernels than the lone step's
// (TestSchedulerEqualsAloneRealShape asserts it at the real shapes).
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

// TestSchedulerEqualsAloneRealShape: on the full-size random hybrid, every
// stream the scheduler decodes in a batch gives exactly the codes the same
// request gives alone (Model.Generate: the lone step graph, mamba_run and
// the two-row kernels). Request 0 decodes alone and is adopted when
// request 1 joins; requests 2–4 join while they run, so the batch steps
// at tiers 2 and 4 (4 slots: request 4 waits for a free one) and shrinks
// as streams end; each has its own seed, guidance and sampler. The
// Hopper plan's decode kernels compute each row on its own with the lone
// step's arithmetic (TestChunkGemvRows, TestMamba2BlockRows,
// TestMamba2Run), which this checks end to end.
func TestSchedulerEqualsAloneRealShape(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("the full-size model in -short")
	}
	if !gb.hopper {
		t.Skip("a batch equals its streams alone on the Hopper plan")
	}
	cfg := zonos.RealConfig(zonos.Hybrid)
	f, err := randmodel.Zonos(cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	m, err := zonos.New(gb, cfg, f)
	if err != nil {
		t.Fatal(err)
	}
	const streams = 5
	req := func(u int) (zonos.Inputs, zonos.GenerateOptions) {
		ids := []int32{2}
		for i := 0; i < 20+3*u; i++ {
			ids = append(ids, int32(4+(i*37+u*11)%180))
		}
		sp := sample.Defaults()
		switch u % 3 {
		case 1:
			sp.Temperature, sp.TopK = 0.8, 50
		case 2:
			sp.TopP = 0.9
		}
		return zonos.Inputs{PhonemeIDs: append(ids, 3), Values: map[string][]float32{"language_id": {float32(24 + u)}}},
			zonos.GenerateOptions{MaxNewTokens: 48 + 8*u, CFGScale: 2 + 0.25*float32(u), Sampling: sp, Seed: uint64(100 + u), ForbidEOS: true}
	}
	var alone [streams][][zonos.NumCodebooks]int32
	for u := range streams {
		in, o := req(u)
		if _, err := m.Generate(context.Background(), in, o, func(f zonos.Frame) error {
			alone[u] = append(alone[u], f.Codes)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := m.NewScheduler(4, 256)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got [streams][][zonos.NumCodebooks]int32
	var wg sync.WaitGroup
	start := func(u int, after chan struct{}, n int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in, o := req(u)
			if _, err := s.Generate(context.Background(), in, o, func(f zonos.Frame) error {
				got[u] = append(got[u], f.Codes)
				if after != nil && len(got[u]) == n {
					close(after)
				}
				return nil
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	first, second := make(chan struct{}), make(chan struct{})
	start(0, first, 3)
	<-first
	start(1, second, 4)
	<-second
	for u := 2; u < streams; u++ {
		start(u, nil, 0)
	}
	wg.Wait()
	st := s.Stats()
	t.Logf("scheduler: %+v", st)
	if st.Adopted == 0 {
		t.Error("request 0 was never adopted into the batch")
	}
	for u := range streams {
		if len(got[u]) != len(alone[u]) {
			t.Errorf("request %d: %d frames in the batch, %d alone", u, len(got[u]), len(alone[u]))
			continue
		}
		for f := range alone[u] {
			if got[u][f] != alone[u][f] {
				t.Errorf("request %d frame %d: %v in the batch, %v alone", u, f, got[u][f], alone[u][f])
				break
			}
		}
	}
}
