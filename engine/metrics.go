package engine

import (
	"sort"
	"time"
)

// FrameBudget is the real-time budget of one DAC frame: 512 samples at
// 44.1 kHz.
const FrameBudget = 512 * time.Second / 44100

// Metrics are the live meters of one utterance (ARCHITECTURE.md, "Meters").
type Metrics struct {
	// TTFA: request accepted → first committed PCM sample.
	TTFA time.Duration
	// Started: request accepted → the utterance began on the engine (the
	// text front end done and the previous utterance finished).
	Started time.Duration
	// Conditioned: request accepted → the prefix conditioning on the
	// device (part of Prefill).
	Conditioned time.Duration
	// Prefill: request accepted → prefill logits ready (includes the text
	// front end and conditioning).
	Prefill time.Duration
	// PrefillCompute: the prefill itself, part of Prefill: the backbone
	// over the prompt and the first sampled column (the rest of Prefill is
	// the text front end, conditioning and setting up the utterance).
	PrefillCompute time.Duration
	// FirstFrame: request accepted → first complete 9-code frame.
	FirstFrame time.Duration
	// FirstVocode: the vocoder's part of TTFA, from taking the frames of
	// its first emission (the last one the right context needs) to the
	// first PCM on the host.
	FirstVocode time.Duration
	// FrameLatencyP50/P90: rolling percentiles of the wall time between
	// consecutive committed frames (a chunk of n frames committed Δt after
	// the previous chunk counts n frames of Δt/n), against FrameBudget.
	FrameLatencyP50, FrameLatencyP90 time.Duration
	// StepP50/P90: rolling percentiles of one decode step on the backend.
	StepP50, StepP90 time.Duration
	Frames           int           // frames generated so far
	AudioSeconds     float64       // committed audio
	Elapsed          time.Duration // since the request was accepted
	// RTF: seconds of audio committed / seconds of wall time.
	RTF float64
	// Parts is how many parts of the text have begun (PartStart).
	Parts int
	// BoundaryP50/Max: the wall time from a part's last frame to the next
	// part's first frame (its conditioning, prefill and the decode steps
	// the codebook delay needs), over the last parts and over all; time
	// spent waiting for text that had not yet arrived does not count.
	// Generation runs ahead of playback, so a boundary is heard as a gap
	// only if it outlasts the audio buffered.
	BoundaryP50, BoundaryMax time.Duration
}

// rolling keeps the last n durations for percentiles.
type rolling struct {
	buf  []time.Duration
	next int
	full bool
}

func newRolling(n int) *rolling { return &rolling{buf: make([]time.Duration, n)} }

func (r *rolling) add(d time.Duration) {
	r.buf[r.next] = d
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

// percentiles returns p50 and p90 (nearest rank).
func (r *rolling) percentiles() (p50, p90 time.Duration) {
	n := r.next
	if r.full {
		n = len(r.buf)
	}
	if n == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), r.buf[:n]...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(p float64) time.Duration {
		i := int(p*float64(n)+0.999999) - 1
		return s[max(0, min(i, n-1))]
	}
	return rank(0.5), rank(0.9)
}

// meter accumulates one utterance's Metrics.
type meter struct {
	start      time.Time
	m          Metrics
	frameLat   *rolling
	steps      *rolling
	lastCommit time.Time
	samples    int
	boundaries *rolling
}

func newMeter(start time.Time) *meter {
	return &meter{start: start, frameLat: newRolling(128), steps: newRolling(128), boundaries: newRolling(256)}
}

func (mt *meter) step(d time.Duration) {
	mt.steps.add(d)
	mt.m.StepP50, mt.m.StepP90 = mt.steps.percentiles()
}

// boundary records the gap between two parts.
func (mt *meter) boundary(d time.Duration) {
	mt.boundaries.add(d)
	mt.m.BoundaryP50, _ = mt.boundaries.percentiles()
	mt.m.BoundaryMax = max(mt.m.BoundaryMax, d)
}

// commit records n newly committed samples at time now.
func (mt *meter) commit(n int, now time.Time) {
	if n <= 0 {
		return
	}
	if mt.samples == 0 {
		mt.m.TTFA = now.Sub(mt.start)
	} else {
		frames := float64(n) / 512
		per := time.Duration(float64(now.Sub(mt.lastCommit)) / frames)
		for i := 0; i < max(1, int(frames+0.5)); i++ {
			mt.frameLat.add(per)
		}
		mt.m.FrameLatencyP50, mt.m.FrameLatencyP90 = mt.frameLat.percentiles()
	}
	mt.lastCommit = now
	mt.samples += n
	mt.m.AudioSeconds = float64(mt.samples) / 44100
	mt.update(now)
}

func (mt *meter) update(now time.Time) {
	mt.m.Elapsed = now.Sub(mt.start)
	if s := mt.m.Elapsed.Seconds(); s > 0 {
		mt.m.RTF = mt.m.AudioSeconds / s
	}
}
