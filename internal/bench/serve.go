package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"zonostream/audio/encode"
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
	// Formats: the other response formats' time to their first audio
	// byte (past the file header), the same requests otherwise: what
	// their codec frames add to pcm's.
	Formats []ServeFormat `json:"formats"`
}

// ServeFormat is one response format's time to its first audio byte.
type ServeFormat struct {
	Format         string `json:"format"`
	FirstAudioByte Stat   `json:"first_audio_byte"`
}

// measureServe serves e on a loopback port and sends o.Runs speech
// requests of each format one after another on one kept-alive connection.
func measureServe(ctx context.Context, e *engine.Engine, o Options, r *Report, progress func(string)) error {
	progress(fmt.Sprintf("%d requests a format to the speech server over loopback HTTP (time to first audio byte vs the engine's TTFA)", o.Runs))
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
	sv := &Serve{Format: string(encode.PCM)}
	for _, f := range encode.Formats {
		first, engineTTFA, err := speechRequests(ctx, client, url, rolloutRequest(o, 0).Text, f, o.Runs)
		if err != nil {
			return err
		}
		if f != encode.PCM {
			sv.Formats = append(sv.Formats, ServeFormat{Format: string(f), FirstAudioByte: stat(first)})
			continue
		}
		over := make([]time.Duration, len(first))
		for i := range first {
			over[i] = first[i] - engineTTFA[i]
		}
		sv.Requests, sv.TTFB, sv.EngineTTFA, sv.Overhead = len(first), stat(first), stat(engineTTFA), stat(over)
	}
	r.Serve = sv
	return nil
}

// speechRequests sends n requests for format f one after another (after
// one that is not counted, which opens the connection), each read to its
// end, and returns for each the time to its first audio byte — the first
// byte past the file header the encoder writes before any audio — and the
// engine's TTFA from the trailer. Requests without audio are left out
// (random weights may end at once).
func speechRequests(ctx context.Context, client *http.Client, url, text string, f encode.Format, n int) (first, engineTTFA []time.Duration, err error) {
	header, err := headerBytes(f)
	if err != nil {
		return nil, nil, err
	}
	body, _ := json.Marshal(map[string]any{"model": "tts-1", "input": text, "voice": "default", "response_format": f})
	buf := make([]byte, 64<<10)
	for i := -1; i < n; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: speech request (%s): %w", f, err)
		}
		var d time.Duration
		total := 0
		for {
			k, rerr := resp.Body.Read(buf)
			total += k
			if d == 0 && total > header {
				d = time.Since(t0)
			}
			if rerr != nil {
				break
			}
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("bench: speech request (%s): status %d", f, resp.StatusCode)
		}
		ms, perr := strconv.ParseFloat(resp.Trailer.Get("X-Zonos-TTFA-Ms"), 64)
		if d == 0 || perr != nil || i < 0 {
			continue
		}
		first, engineTTFA = append(first, d), append(engineTTFA, time.Duration(ms*1e6))
	}
	if len(first) == 0 {
		return nil, nil, fmt.Errorf("bench: no speech request (%s) gave audio", f)
	}
	return first, engineTTFA, nil
}

// headerBytes is how many bytes format f's encoder writes before any
// audio (a WAV header, FLAC's STREAMINFO, Opus' two header pages).
func headerBytes(f encode.Format) (int, error) {
	var cw countWriter
	enc, err := encode.New(f, &cw, engine.SampleRate, encode.Options{})
	if err != nil {
		return 0, err
	}
	n := cw.n
	_ = enc.Close()
	return n, nil
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }
