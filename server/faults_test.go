package server

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
)

const longText = "This is a sentence that the model speaks for a while. "

// TestClientDisconnectStopsGeneration: a client that goes away mid-body
// has its generation stopped at once (the engine's slot is free and the
// next request runs), and it is counted as client_gone.
func TestClientDisconnectStopsGeneration(t *testing.T) {
	ts := serve(t, tinyEngine(t), Config{Limits: Limits{MaxSeconds: 20}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+"/v1/tts",
		strings.NewReader(`{"text": "`+strings.Repeat(longText, 10)+`", "format": "pcm"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	waitFor(t, func() bool {
		return metricValue(t, ts, `zonos_requests_total{endpoint="tts",outcome="client_gone"}`) == 1
	})
	if running, queued := ts.adm.load(); running != 0 || queued != 0 {
		t.Fatalf("%d running, %d queued after the client left", running, queued)
	}
	if a := metricValue(t, ts, "zonos_audio_seconds_total"); a > 20 {
		t.Errorf("%g s of audio sent: generation ran on", a)
	}
	ts.servesNext(t, "next request")
}

// TestSlowClientIsEnded: a client that stops reading gets no more than
// the buffer's worth of audio held for it; its stream is then ended with
// a logged reason and the engine goes to the next request, which is
// served in full meanwhile.
func TestSlowClientIsEnded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Small socket buffers on the server's side too, so a client that
	// stops reading blocks the server's writes after kilobytes, not the
	// megabytes loopback buffers grow to.
	ts := serveOn(t, tinyEngine(t), Config{Limits: Limits{MaxSeconds: 30, MaxBufferedSeconds: 0.5, SlowClientTimeout: 300 * time.Millisecond}},
		smallBuffers{ln.(*net.TCPListener)})
	// A raw connection with a tiny receive buffer that is never read.
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"text": "` + strings.Repeat(longText, 20) + `", "format": "pcm"}`
	if _, err := io.WriteString(conn, "POST /v1/tts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	if _, err := br.Peek(1); err != nil { // the status line: audio has begun
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return metricValue(t, ts, `zonos_requests_total{endpoint="tts",outcome="slow_client"}`) == 1
	})
	if !strings.Contains(ts.log.String(), "read too slowly") {
		t.Errorf("log does not give the reason:\n%s", ts.log.String())
	}
	resp := ts.post(t, "/v1/tts", map[string]any{"text": "Others go on.", "max_seconds": 0.3, "format": "wav"})
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if _, s := streamWAV(t, data); resp.StatusCode != 200 || len(s) == 0 {
		t.Fatalf("next request: status %d, %d samples", resp.StatusCode, len(s))
	}
}

// smallBuffers accepts connections with 8 KiB socket buffers.
type smallBuffers struct{ *net.TCPListener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.AcceptTCP()
	if err == nil {
		_ = c.SetWriteBuffer(8 << 10)
		_ = c.SetReadBuffer(8 << 10)
	}
	return c, err
}

// failingBackend is the CPU backend that fails (as a CUDA kernel launch
// does: a panic) once armed.
type failingBackend struct {
	compute.Backend
	armed atomic.Bool
}

func (b *failingBackend) Linear(x, w, bias compute.Tensor) compute.Tensor {
	if b.armed.Load() {
		panic("simulated device failure")
	}
	return b.Backend.Linear(x, w, bias)
}

// TestModelFailsMidStream: the model failing after audio went out ends
// the body where it is — a valid WAV of what was sent — with the reason
// in the X-Zonos-Error trailer; before any audio it is a 500. The server
// serves the next request.
func TestModelFailsMidStream(t *testing.T) {
	b := &failingBackend{Backend: cpu.New(0)}
	e := engineOn(t, b)
	ts := serve(t, e, Config{Limits: Limits{MaxSeconds: 20}})
	resp := ts.post(t, "/v1/tts", map[string]any{"text": strings.Repeat(longText, 4), "format": "wav"})
	first := make([]byte, 2048)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	b.armed.Store(true)
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("body ended with %v: want a clean end", err)
	}
	if msg := resp.Trailer.Get("X-Zonos-Error"); !strings.Contains(msg, "simulated device failure") {
		t.Errorf("X-Zonos-Error %q", msg)
	}
	if _, s := streamWAV(t, append(first, rest...)); len(s) == 0 {
		t.Error("no audio before the failure")
	}
	msg := apiErr(t, ts.post(t, "/v1/tts", map[string]any{"text": "Now.", "format": "wav"}), 500)
	if !strings.Contains(msg, "simulated device failure") {
		t.Errorf("500 says %q", msg)
	}
	b.armed.Store(false)
	// Over the WebSocket: an error event after the audio sent.
	c := wsDial(t, ts, nil)
	wsSend(t, c, map[string]any{"type": "start", "text": strings.Repeat(longText, 4)})
	wsSend(t, c, map[string]any{"type": "end"})
	r := wsRead(t, c, func(ev wsEvent) {
		if ev.Type == "first_audio" {
			b.armed.Store(true)
		}
	})
	b.armed.Store(false)
	if ev, ok := r.find("error"); !ok || ev.Code != "generation_failed" || !strings.Contains(ev.Message, "simulated device failure") || len(r.pcm) == 0 {
		t.Errorf("WebSocket: events %v, %d samples: want audio then a generation_failed error", r.kinds(), len(r.pcm))
	}
	ts.servesNext(t, "after the failure")
	if n := metricValue(t, ts, `zonos_requests_total{endpoint="ws",outcome="failed"}`); n != 1 {
		t.Errorf("failed WebSocket streams %g, want 1", n)
	}
	if n := metricValue(t, ts, `zonos_requests_total{endpoint="tts",outcome="failed"}`); n != 2 {
		t.Errorf("failed requests %g, want 2", n)
	}
}

// TestQueueAndPerKeyLimits: while every engine slot is taken, later
// requests wait in order; past the queue's size they get 503 with
// Retry-After, and one key past its stream limit gets 429. readyz reports
// the capacity left.
func TestQueueAndPerKeyLimits(t *testing.T) {
	key1, key2 := "key-one-0123456789", "key-two-0123456789"
	ts := serve(t, tinyEngineOf(t, 1), Config{APIKeys: []string{key1, key2}, Limits: Limits{MaxQueue: 1, MaxStreamsPerKey: 2, MaxSeconds: 20}})
	auth := func(k string) []string { return []string{"Authorization", "Bearer " + k} }
	// Key 1 holds the engine with a long utterance, read slowly.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+"/v1/tts", strings.NewReader(`{"text": "`+strings.Repeat(longText, 10)+`", "format": "pcm"}`))
	req.Header.Set("Authorization", "Bearer "+key1)
	busy, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Body.Close()
	// Key 1's second request queues.
	queued := make(chan int, 1)
	go func() {
		r, err := http.DefaultClient.Do(mustReq(t, ctx, ts.url+"/v1/tts", `{"text": "Queued.", "max_seconds": 0.3}`, key1))
		if err != nil {
			queued <- -1
			return
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		queued <- r.StatusCode
	}()
	waitFor(t, func() bool { _, q := ts.adm.load(); return q == 1 })
	// Key 1's third: over its limit.
	apiErr(t, ts.post(t, "/v1/tts", map[string]any{"text": "Third."}, auth(key1)...), 429)
	// Key 2: the queue is full.
	resp := ts.post(t, "/v1/tts", map[string]any{"text": "Full."}, auth(key2)...)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	apiErr(t, resp, 503)
	r := ts.get(t, "/readyz")
	r.Body.Close()
	if r.StatusCode != 503 {
		t.Errorf("readyz %d with no capacity left, want 503", r.StatusCode)
	}
	cancel()
	if code := <-queued; code != -1 && code != 200 {
		t.Errorf("the queued request got %d", code)
	}
}

func mustReq(t *testing.T, ctx context.Context, url, body, key string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	return req
}

// TestShutdownDuringStreams: cancelling Serve's context (what SIGTERM
// does in zonos serve) refuses new requests at once, lets a stream run
// for the grace period, then ends it: the HTTP body ends as a valid WAV
// with X-Zonos-Error, the WebSocket gets a shutting_down error, and Serve
// returns so the engine can be freed.
func TestShutdownDuringStreams(t *testing.T) {
	ts := serve(t, tinyEngineOf(t, 1), Config{ShutdownGrace: 500 * time.Millisecond, Limits: Limits{MaxSeconds: 30, MaxQueue: 4}})
	resp := ts.post(t, "/v1/tts", map[string]any{"text": strings.Repeat(longText, 20), "format": "wav"})
	head := make([]byte, 1024)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatal(err)
	}
	// A WebSocket client and an HTTP request wait in the queue behind it.
	c := wsDial(t, ts, nil)
	wsSend(t, c, map[string]any{"type": "start", "text": "Queued behind."})
	wsSend(t, c, map[string]any{"type": "end"})
	waitFor(t, func() bool { _, q := ts.adm.load(); return q == 1 })
	queuedHTTP := make(chan *http.Response, 1)
	go func() {
		r, err := http.Post(ts.url+"/v1/tts", "application/json", strings.NewReader(`{"text": "Also queued."}`))
		if err != nil {
			queuedHTTP <- nil
			return
		}
		queuedHTTP <- r
	}()
	waitFor(t, func() bool { _, q := ts.adm.load(); return q == 2 })
	ts.stop()
	r := wsRead(t, c, nil)
	if ev, ok := r.find("error"); !ok || ev.Code != "shutting_down" {
		t.Errorf("WebSocket events %v, close %v: want a shutting_down error", r.kinds(), r.closeErr)
	}
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("body: %v", err)
	}
	if msg := resp.Trailer.Get("X-Zonos-Error"); !strings.Contains(msg, "shutting down") {
		t.Errorf("X-Zonos-Error %q", msg)
	}
	if _, s := streamWAV(t, append(head, rest...)); len(s) == 0 {
		t.Error("no audio")
	}
	// The queued request is refused, not started after the shutdown began.
	if qr := <-queuedHTTP; qr == nil {
		t.Error("the queued request failed without an answer")
	} else if msg := apiErr(t, qr, http.StatusServiceUnavailable); !strings.Contains(msg, "shutting down") {
		t.Errorf("the queued request: %q", msg)
	}
	select {
	case err := <-ts.done:
		ts.done <- err // for the cleanup
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return after the grace period")
	}
	if running, queued := ts.adm.load(); running != 0 || queued != 0 {
		t.Errorf("after Serve returned: %d running, %d queued; the engine may be freed only when nothing holds it", running, queued)
	}
}
