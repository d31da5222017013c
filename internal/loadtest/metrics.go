package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ServerMetrics is what the server's /metrics said while a run went on,
// sampled every Options.MetricsEvery (so a peak shorter than that may be
// missed).
type ServerMetrics struct {
	// Samples is how many scrapes were read (0: /metrics did not answer,
	// and the peaks say nothing).
	Samples int `json:"samples"`
	// QueuePeak and ActivePeak are the most requests seen waiting for the
	// engine (zonos_queue_length) and being generated
	// (zonos_active_streams).
	QueuePeak  int `json:"queue_peak"`
	ActivePeak int `json:"active_peak"`
	// DeviceMemoryPeakBytes is the most zonos_device_memory_bytes seen;
	// 0 when the server does not export it (its backend cannot tell).
	DeviceMemoryPeakBytes int64 `json:"device_memory_peak_bytes,omitempty"`
	// Err is the last failed scrape's error, if any failed.
	Err string `json:"error,omitempty"`
}

// sampler scrapes /metrics until stopped.
type sampler struct {
	cancel context.CancelFunc
	done   chan ServerMetrics
}

// scrapeTimeout bounds one scrape.
const scrapeTimeout = 2 * time.Second

// startSampler scrapes o.URL's /metrics now and every o.MetricsEvery, on a
// connection of its own, until stop.
func startSampler(ctx context.Context, o Options) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	sm := &sampler{cancel: cancel, done: make(chan ServerMetrics, 1)}
	go func() {
		hc := &http.Client{Timeout: scrapeTimeout, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}}
		defer hc.CloseIdleConnections()
		var m ServerMetrics
		tick := time.NewTicker(o.MetricsEvery)
		defer tick.Stop()
		for {
			if err := scrape(ctx, hc, o.URL, &m); err != nil && ctx.Err() == nil {
				m.Err = err.Error()
			}
			select {
			case <-ctx.Done():
				// One last scrape after the streams, on a fresh context.
				last, stop := context.WithTimeout(context.Background(), scrapeTimeout)
				if err := scrape(last, hc, o.URL, &m); err != nil {
					m.Err = err.Error()
				}
				stop()
				sm.done <- m
				return
			case <-tick.C:
			}
		}
	}()
	return sm
}

// stop ends the sampling and returns what it saw.
func (sm *sampler) stop() ServerMetrics {
	sm.cancel()
	return <-sm.done
}

// scrape reads /metrics once into m's peaks.
func scrape(ctx context.Context, hc *http.Client, base string, m *ServerMetrics) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("scraping /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("scraping /metrics: status %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return fmt.Errorf("scraping /metrics: %w", err)
	}
	gauge := func(name string) (float64, bool) {
		f := fams[name]
		if f == nil || len(f.GetMetric()) == 0 || f.GetMetric()[0].GetGauge() == nil {
			return 0, false
		}
		return f.GetMetric()[0].GetGauge().GetValue(), true
	}
	m.Samples++
	if v, ok := gauge("zonos_queue_length"); ok {
		m.QueuePeak = max(m.QueuePeak, int(v))
	}
	if v, ok := gauge("zonos_active_streams"); ok {
		m.ActivePeak = max(m.ActivePeak, int(v))
	}
	if v, ok := gauge("zonos_device_memory_bytes"); ok {
		m.DeviceMemoryPeakBytes = max(m.DeviceMemoryPeakBytes, int64(v))
	}
	return nil
}
