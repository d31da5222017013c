package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"zonostream/engine"
	"zonostream/server"
)

// Serve is the speech-server section: POST /v1/audio/speech over
// loopback HTTP to `zonos serve`'s server running on the same engine, the
// time from sending the request to the first audio byte read by the
// client against the engine's own TTFA of the same request (the
// X-Zonos-TTFA-Ms trailer).
type Serve struct {
	Requests int    `json:"requests"`
	Format   string `json:"format"`
	// TTFB: request sent → first body byte read by the client (the first
	// audio: headers go out with it).
	TTFB Stat `json:"ttfb"`
	// EngineTTFA: the engine's TTFA of the same requests (Synthesize →
	// first committed sample).
	EngineTTFA Stat `json:"engine_ttfa"`
	// Overhead: TTFB − engine TTFA per request, what the server and the
	// network add (JSON, admission, encoder, the socket both ways).
	Overhead Stat `json:"overhead"`
}

// measureServe serves e on a loopback port and sends o.Runs speech
// requests one after another on one kept-alive connection (after one
// that is not counted, which opens it), each read to its end.
func measureServe(ctx context.Context, e *engine.Engine, o Options, r *Report, progress func(string)) error {
	progress(fmt.Sprintf("%d requests to the speech server over loopback HTTP (time to first audio byte vs the engine's TTFA)", o.Runs))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv, err := server.New(e, nil, server.SpeakerModel{}, server.Config{Listen: ln.Addr().String(),
		Limits: server.Limits{MaxSeconds: float64(o.Frames*512) / engine.SampleRate}})
	if err != nil {
		ln.Close()
		return err
	}
	srv.SetReady(true)
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	defer func() { stop(); <-served }()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	url := "http://" + ln.Addr().String() + "/v1/audio/speech"
	body, _ := json.Marshal(map[string]any{"model": "tts-1", "input": rolloutRequest(o, 0).Text, "voice": "default", "response_format": "pcm"})
	var ttfb, engineTTFA, over []time.Duration
	for i := -1; i < o.Runs; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("bench: speech request: %w", err)
		}
		var first [1]byte
		_, rerr := io.ReadFull(resp.Body, first[:])
		d := time.Since(t0)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("bench: speech request: status %d", resp.StatusCode)
		}
		ms, perr := strconv.ParseFloat(resp.Trailer.Get("X-Zonos-TTFA-Ms"), 64)
		if rerr != nil || perr != nil || i < 0 {
			continue // no audio (random weights may end at once), or the warm-up request
		}
		et := time.Duration(ms * 1e6)
		ttfb, engineTTFA, over = append(ttfb, d), append(engineTTFA, et), append(over, d-et)
	}
	if len(ttfb) == 0 {
		return fmt.Errorf("bench: no speech request gave audio")
	}
	r.Serve = &Serve{Requests: len(ttfb), Format: "pcm", TTFB: stat(ttfb), EngineTTFA: stat(engineTTFA), Overhead: stat(over)}
	return nil
}
