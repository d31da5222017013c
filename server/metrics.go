package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are what /metrics exports, on a registry of the server's own so
// that several servers in one process (tests, the app) do not collide.
type metrics struct {
	reg       *prometheus.Registry
	ttfa      *prometheus.HistogramVec
	step      prometheus.Histogram
	active    prometheus.Gauge
	queued    prometheus.Gauge
	rtf       prometheus.Gauge
	requests  *prometheus.CounterVec
	audioSecs prometheus.Counter
	capacity  prometheus.GaugeFunc
}

// memoryReporter is a backend that can say how much device memory it
// holds (compute.Timer's MemoryInUse: the CUDA backend's reserved blocks,
// the CPU backend's Go heap).
type memoryReporter interface{ MemoryInUse() int64 }

// newMetrics makes the server's metrics. capacity is read on each scrape;
// memory too, when the backend can report it (nil: it cannot, and
// zonos_device_memory_bytes is not exported rather than exported as 0).
func newMetrics(capacity func() float64, slots int, memory memoryReporter) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.ttfa = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "zonos_ttfa_seconds",
		Help: "Time from a request's arrival to its first audio byte handed to the connection.",
		// First audio is tens of milliseconds on a GPU, seconds on a CPU.
		Buckets: []float64{.01, .02, .03, .04, .05, .075, .1, .15, .2, .3, .5, 1, 2, 5, 10},
	}, []string{"endpoint"})
	m.step = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "zonos_decode_step_seconds",
		Help:    "Wall time of one decode step (one 11.61 ms frame of audio).",
		Buckets: []float64{.0005, .001, .0015, .002, .003, .005, .008, .0116, .02, .05, .1, .5},
	})
	m.active = prometheus.NewGauge(prometheus.GaugeOpts{Name: "zonos_active_streams", Help: "Streams being generated now."})
	m.queued = prometheus.NewGauge(prometheus.GaugeOpts{Name: "zonos_queue_length", Help: "Requests waiting for the engine."})
	m.rtf = prometheus.NewGauge(prometheus.GaugeOpts{Name: "zonos_realtime_factor",
		Help: "Audio seconds generated per wall second by the stream being generated (above 1 is ahead of real time); 0 when idle."})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zonos_requests_total",
		Help: "Requests by endpoint and outcome (ok, bad_request, unauthorized, forbidden, too_many, unavailable, client_gone, slow_client, cancelled, failed)."},
		[]string{"endpoint", "outcome"})
	m.audioSecs = prometheus.NewCounter(prometheus.CounterOpts{Name: "zonos_audio_seconds_total", Help: "Seconds of audio sent to clients."})
	m.capacity = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "zonos_capacity_streams",
		Help: "Streams the server can still admit now (free engine slots plus free queue places)."}, capacity)
	engineSlots := prometheus.NewGauge(prometheus.GaugeOpts{Name: "zonos_engine_slots",
		Help: "Streams the engine generates at once (its batch and the one decoded alone); more wait in the queue."})
	engineSlots.Set(float64(slots))
	m.reg.MustRegister(m.ttfa, m.step, m.active, m.queued, m.rtf, m.requests, m.audioSecs, m.capacity, engineSlots,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if memory != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "zonos_device_memory_bytes",
			Help: "Memory the compute backend holds on its device, read at each scrape (CUDA: every block its allocators reserved; CPU: the Go heap in use)."},
			func() float64 { return float64(memory.MemoryInUse()) }))
	}
	return m
}
