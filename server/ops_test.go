package server

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestProbesAndMetrics: healthz answers while the model is not ready and
// readyz does not; /metrics is Prometheus' text format with the TTFA and
// step histograms, active streams, queue length, real-time factor and
// requests by outcome; /v1/models names the loaded model.
func TestProbesAndMetrics(t *testing.T) {
	ts := serve(t, tinyEngine(t), Config{})
	ts.SetReady(false)
	if r := ts.get(t, "/healthz"); r.StatusCode != 200 {
		t.Errorf("healthz %d", r.StatusCode)
	}
	r := ts.get(t, "/readyz")
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	r.Body.Close()
	if r.StatusCode != 503 || body["ready"] != false {
		t.Errorf("readyz before ready: %d %v", r.StatusCode, body)
	}
	ts.SetReady(true)
	r = ts.get(t, "/readyz")
	body = nil
	json.NewDecoder(r.Body).Decode(&body)
	r.Body.Close()
	if r.StatusCode != 200 || body["capacity"].(float64) < 1 || body["model"] != "hybrid" {
		t.Errorf("readyz: %d %v", r.StatusCode, body)
	}

	sp := ts.post(t, "/v1/audio/speech", map[string]any{"input": "Hi.", "response_format": "wav"})
	io.Copy(io.Discard, sp.Body)
	sp.Body.Close()
	apiErr(t, ts.post(t, "/v1/audio/speech", `{"input": ""}`), 400)

	m := ts.get(t, "/metrics")
	defer m.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(m.Body)
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v", err)
	}
	for _, name := range []string{"zonos_ttfa_seconds", "zonos_decode_step_seconds", "zonos_active_streams", "zonos_queue_length",
		"zonos_realtime_factor", "zonos_requests_total", "zonos_capacity_streams", "zonos_audio_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("/metrics has no %s", name)
		}
	}
	if h := fams["zonos_ttfa_seconds"].GetMetric()[0].GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() <= 0 {
		t.Errorf("TTFA histogram: %d samples, sum %g", h.GetSampleCount(), h.GetSampleSum())
	}
	if h := fams["zonos_decode_step_seconds"].GetMetric()[0].GetHistogram(); h.GetSampleCount() == 0 {
		t.Error("no decode steps recorded")
	}
	outcomes := map[string]float64{}
	for _, mm := range fams["zonos_requests_total"].GetMetric() {
		var ep, oc string
		for _, l := range mm.GetLabel() {
			switch l.GetName() {
			case "endpoint":
				ep = l.GetValue()
			case "outcome":
				oc = l.GetValue()
			}
		}
		outcomes[ep+"/"+oc] = mm.GetCounter().GetValue()
	}
	if outcomes["speech/ok"] != 1 || outcomes["speech/bad_request"] != 1 {
		t.Errorf("requests by outcome: %v", outcomes)
	}

	if msg := apiErr(t, ts.get(t, "/favicon.ico"), 404); !strings.Contains(msg, "GET /favicon.ico") {
		t.Errorf("unknown path: %q", msg)
	}
	wrong := ts.get(t, "/v1/audio/speech")
	if allow := wrong.Header.Get("Allow"); allow != "POST" {
		t.Errorf("GET /v1/audio/speech: Allow %q", allow)
	}
	if msg := apiErr(t, wrong, 405); !strings.Contains(msg, "takes POST") {
		t.Errorf("wrong method: %q", msg)
	}
	vr := ts.post(t, "/v1/voices/someone", "")
	if allow := vr.Header.Get("Allow"); allow != "DELETE" {
		t.Errorf("POST /v1/voices/someone: Allow %q", allow)
	}
	apiErr(t, vr, 405)
	mr := ts.get(t, "/v1/models")
	data, _ := io.ReadAll(mr.Body)
	mr.Body.Close()
	if !strings.Contains(string(data), `"zonos-hybrid"`) {
		t.Errorf("/v1/models: %s", data)
	}
}
