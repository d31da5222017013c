package app

import (
	"sync"
	"time"

	"zonostream/engine"
)

// SparkLen is how many points the p50/p90 sparkline keeps.
const SparkLen = 120

// Phase is where the current utterance stands.
type Phase string

const (
	PhaseIdle     Phase = "idle"
	PhaseLoading  Phase = "loading model"
	PhaseStarting Phase = "thinking"
	PhaseSpeaking Phase = "speaking"
	PhaseDone     Phase = "done"
	PhaseStopped  Phase = "stopped"
	PhaseFailed   Phase = "failed"
)

// MeterSnapshot is what the meters show at one moment.
type MeterSnapshot struct {
	Phase   Phase
	Backend BackendInfo

	TTFA       time.Duration
	HasTTFA    bool
	FirstSound time.Duration // request accepted → first sample played
	HasSound   bool

	// LastFrame is the latest per-frame latency: wall time of the last
	// committed chunk divided by its frames (ARCHITECTURE.md, "Meters").
	LastFrame        time.Duration
	FrameP50         time.Duration
	FrameP90         time.Duration
	StepP50, StepP90 time.Duration
	Spark            []SparkPoint // oldest first

	RTF          float64
	AudioSeconds float64
	Frames       int
	Elapsed      time.Duration

	RingFill  float64 // 0…1 of the playback ring
	Buffered  time.Duration
	Underruns int64
	Output    string // "" when playing; else why there is no sound
	Device    string // the output device's name, "" when none
}

// SparkPoint is one sample of the rolling frame-latency percentiles.
type SparkPoint struct{ P50, P90 time.Duration }

// Meters gathers one utterance's meters from engine events and playback
// counters. Safe for concurrent use: the engine goroutine writes, the UI
// reads snapshots.
type Meters struct {
	mu         sync.Mutex
	s          MeterSnapshot
	lastAt     time.Duration
	lastAudio  bool
	underBase  int64
	soundStart time.Time
}

// NewMeters starts idle.
func NewMeters() *Meters { return &Meters{s: MeterSnapshot{Phase: PhaseIdle}} }

// SetBackend names the backend, its device and its plan.
func (m *Meters) SetBackend(b BackendInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s.Backend = b
}

// SetPhase moves to p.
func (m *Meters) SetPhase(p Phase) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s.Phase = p
}

// Begin resets the per-utterance values for a request accepted at start.
func (m *Meters) Begin(start time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s = MeterSnapshot{Phase: PhaseStarting, Backend: m.s.Backend, Output: m.s.Output, Device: m.s.Device}
	m.lastAt, m.lastAudio = 0, false
	m.soundStart = start
}

// Observe takes one engine event.
func (m *Meters) Observe(ev engine.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := ev.Metrics
	m.s.TTFA, m.s.HasTTFA = mt.TTFA, mt.TTFA > 0 || m.s.HasTTFA
	m.s.FrameP50, m.s.FrameP90 = mt.FrameLatencyP50, mt.FrameLatencyP90
	m.s.StepP50, m.s.StepP90 = mt.StepP50, mt.StepP90
	m.s.RTF, m.s.AudioSeconds, m.s.Frames, m.s.Elapsed = mt.RTF, mt.AudioSeconds, mt.Frames, mt.Elapsed
	switch ev.Kind {
	case engine.Audio:
		if m.s.Phase == PhaseStarting {
			m.s.Phase = PhaseSpeaking
		}
		if m.lastAudio && len(ev.PCM) > 0 {
			frames := float64(len(ev.PCM)) / 512
			m.s.LastFrame = time.Duration(float64(ev.At-m.lastAt) / frames)
		}
		m.lastAt, m.lastAudio = ev.At, true
		if mt.FrameLatencyP50 > 0 {
			m.s.Spark = append(m.s.Spark, SparkPoint{mt.FrameLatencyP50, mt.FrameLatencyP90})
			if len(m.s.Spark) > SparkLen {
				m.s.Spark = append(m.s.Spark[:0:0], m.s.Spark[len(m.s.Spark)-SparkLen:]...)
			}
		}
	case engine.Done:
		m.s.Phase = PhaseDone
	case engine.Failed:
		m.s.Phase = PhaseFailed
	}
}

// Playback updates the playback counters: the ring's fill, underruns of
// this utterance, and when its first sample was played (zero time if not
// yet).
func (m *Meters) Playback(buffered, capacity int, underruns int64, first time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if capacity > 0 {
		m.s.RingFill = float64(buffered) / float64(capacity)
	}
	m.s.Buffered = time.Duration(buffered) * time.Second / engine.SampleRate
	m.s.Underruns = underruns
	if !first.IsZero() && !m.s.HasSound {
		m.s.FirstSound, m.s.HasSound = first.Sub(m.soundStart), true
	}
}

// SetOutput records why there is no sound ("" when playback works).
func (m *Meters) SetOutput(why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s.Output = why
	if why != "" {
		m.s.Device = ""
	}
}

// SetDevice names the output device.
func (m *Meters) SetDevice(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s.Device = name
}

// Snapshot copies the current values.
func (m *Meters) Snapshot() MeterSnapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.s
	s.Spark = append([]SparkPoint(nil), m.s.Spark...)
	return s
}
