package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"zonostream/engine/compute"
	"zonostream/engine/sample"
	"zonostream/engine/text"
	"zonostream/engine/zonos"
)

// CapacityStep is one batch size's measured decode step.
type CapacityStep struct {
	Streams int           // utterances in the batch
	Step    time.Duration // median wall time of one step of all of them
}

// capacityShare is the part of each frame's budget the batch's step may
// take: the rest is left for the prefills of arriving streams (each delays
// the batch by one), the lone stream's step until the batch adopts it, and
// the vocoders beside them on the device.
const capacityShare = 0.5

// capacitySizes are the batch sizes PlanCapacity tries, smallest first.
var capacitySizes = []int{2, 4, 8, 16, 32, 64, 128, zonos.MaxBatch}

// capacitySteps is how many steps each size is timed for.
const capacitySteps = 8

// PlanCapacity measures the batched decode step on this engine's device at
// growing batch sizes and sets the capacity (SetCapacity) to the largest
// batch whose step fits capacityShare of a frame's budget: how many
// streams the device keeps ahead of real time at once, the one decoding
// alone among them (the batch adopts it as others arrive, so a full
// engine steps that batch and nothing beside it). It stops at the first size past the share (or that
// the device has no memory for). The figures come back for the log. Call
// it while nothing is speaking, before Warmup.
func (e *Engine) PlanCapacity(ctx context.Context) ([]CapacityStep, error) {
	ids, err := capacityPrompt()
	if err != nil {
		return nil, err
	}
	lang, err := text.LanguageID("en-us")
	if err != nil {
		return nil, err
	}
	prefix, _, err := e.model.Prefix(zonos.Inputs{PhonemeIDs: ids, Values: map[string][]float32{"language_id": {float32(lang)}}})
	if err != nil {
		return nil, err
	}
	defer e.backend.Free(prefix)
	var steps []CapacityStep
	best := 1
	for _, n := range capacitySizes {
		if err := ctx.Err(); err != nil {
			return steps, err
		}
		d, err := e.timeBatch(prefix, n)
		if err != nil {
			if len(steps) == 0 {
				return nil, fmt.Errorf("engine capacity: a batch of %d: %w", n, err)
			}
			break // out of memory past the last size that fitted
		}
		steps = append(steps, CapacityStep{Streams: n, Step: d})
		if float64(d) > capacityShare*float64(FrameBudget) {
			break
		}
		best = n
	}
	return steps, e.SetCapacity(best)
}

// capacityPrompt is the measured utterances' phonemes: a sentence's worth.
func capacityPrompt() ([]int32, error) {
	ids, _, err := text.Prepare("The quick brown fox jumps over the lazy dog.", "en-us")
	return ids, err
}

// timeBatch is the median step of n utterances decoded as one batch at
// batchPositions each, as the scheduler's batch holds them. A backend
// that panics (out of memory) makes it an error.
func (e *Engine) timeBatch(prefix compute.Tensor, n int) (d time.Duration, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the %s backend failed: %v", e.backend.Name(), p)
		}
	}()
	b, err := e.model.NewBatch(n, batchPositions)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	o := zonos.GenerateOptions{MaxNewTokens: capacitySteps + 2, CFGScale: 2, Sampling: sample.Defaults(), ForbidEOS: true}
	mask := [zonos.NumCodebooks]int32{}
	for k := range mask {
		mask[k] = zonos.MASK
	}
	tok := make([][]int32, n)
	for u := range tok {
		o.Seed = uint64(u)
		if tok[u], err = b.Join(u, prefix, [][zonos.NumCodebooks]int32{mask}, o); err != nil {
			return 0, err
		}
	}
	var times []time.Duration
	for s := 0; s <= capacitySteps; s++ {
		cols := make([][zonos.NumCodebooks]int32, n)
		for u := range cols {
			for k := range cols[u] {
				cols[u][k] = min(tok[u][k], zonos.CodebookSize-1)
			}
		}
		t0 := time.Now()
		if tok, err = b.Step(cols, make([][][]int32, n)); err != nil {
			return 0, err
		}
		if s > 0 { // the first records the batch's step
			times = append(times, time.Since(t0))
		}
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}
