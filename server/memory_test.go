package server

import (
	"io"
	"strings"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
)

// opaqueBackend is a backend that cannot report its memory (it hides the
// CPU backend's MemoryInUse).
type opaqueBackend struct{ compute.Backend }

// TestDeviceMemoryGauge: /metrics exports zonos_device_memory_bytes, read
// from the backend at the scrape, when the backend can report its memory,
// and leaves it out (rather than exporting 0) when it cannot.
func TestDeviceMemoryGauge(t *testing.T) {
	ts := serve(t, tinyEngine(t), Config{})
	if v := metricValue(t, ts, "zonos_device_memory_bytes"); v <= 0 {
		t.Errorf("zonos_device_memory_bytes %g on the CPU backend: want its Go heap in use, above 0", v)
	}

	b := cpu.New(0)
	t.Cleanup(func() { b.Close() })
	opaque := serve(t, engineOn(t, opaqueBackend{b}), Config{})
	resp := opaque.get(t, "/metrics")
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(data), "zonos_active_streams") {
		t.Fatalf("/metrics of the second server lacks zonos_active_streams:\n%s", data)
	}
	if strings.Contains(string(data), "zonos_device_memory_bytes") {
		t.Error("/metrics exports zonos_device_memory_bytes for a backend that cannot report its memory")
	}
}
