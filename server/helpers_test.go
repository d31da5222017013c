package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"zonostream/audio"
	"zonostream/engine"
	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/internal/golden"
	"zonostream/internal/voices"
)

var (
	tinyOnce sync.Once
	tinyEng  *engine.Engine
	tinyErr  error
)

// tinyEngine is the golden tiny hybrid model and DAC on the CPU, loaded
// once for the package's tests (the engine takes utterances in turn).
func tinyEngine(t *testing.T) *engine.Engine {
	t.Helper()
	tinyOnce.Do(func() {
		tinyEng, tinyErr = engine.Load(cpu.New(0), tinyPaths(t))
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyEng
}

// tinyEngineOf is a fresh tiny engine that generates capacity streams at
// once (tests of what happens once every slot is taken).
func tinyEngineOf(t *testing.T, capacity int) *engine.Engine {
	t.Helper()
	e, err := engine.Load(cpu.New(0), tinyPaths(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetCapacity(capacity); err != nil {
		t.Fatal(err)
	}
	return e
}

func tinyPaths(t *testing.T) engine.Paths {
	return engine.PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny"))
}

// engineOn loads the tiny model on backend b (fault injection).
func engineOn(t *testing.T, b compute.Backend) *engine.Engine {
	t.Helper()
	e, err := engine.Load(b, tinyPaths(t))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// testServer is a server on a loopback port, its log captured.
type testServer struct {
	*Server
	url  string
	lib  *voices.Library
	log  *syncBuffer
	stop context.CancelFunc
	done chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve starts a server for e with cfg (Listen and Log are filled in) and
// stops it when the test ends.
func serve(t *testing.T, e *engine.Engine, cfg Config) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, e, cfg, ln)
}

// serveOn is serve on a listener of the test's.
func serveOn(t *testing.T, e *engine.Engine, cfg Config, ln net.Listener) *testServer {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = ln.Addr().String()
	}
	if cfg.Limits.MaxSeconds == 0 {
		cfg.Limits.MaxSeconds = 0.5 // keeps the tiny model's utterances short
	}
	logs := &syncBuffer{}
	cfg.Log = slog.New(slog.NewJSONHandler(logs, nil))
	lib := &voices.Library{Dir: t.TempDir()}
	srv, err := New(e, lib, SpeakerModel{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.SetReady(true)
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Server: srv, url: "http://" + ln.Addr().String(), lib: lib, log: logs, stop: cancel, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ts.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ts
}

// post sends a JSON body; the caller closes the response.
func (ts *testServer) post(t *testing.T, path string, body any, hdr ...string) *http.Response {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(http.MethodPost, ts.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (ts *testServer) get(t *testing.T, path string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// apiErr reads an error answer and checks its status.
func apiErr(t *testing.T, resp *http.Response, status int) string {
	t.Helper()
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
			Param   string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" {
		t.Fatalf("error body %q is not an OpenAI-style error: %v", body, err)
	}
	return e.Error.Message
}

// streamWAV reads a streamed 16-bit mono WAV (sizes 0xFFFFFFFF) and
// returns its rate and samples.
func streamWAV(t *testing.T, data []byte) (int, []int16) {
	t.Helper()
	if len(data) < 44 || string(data[:4]) != "RIFF" || string(data[8:12]) != "WAVE" {
		t.Fatalf("not a WAV: % x", data[:min(len(data), 16)])
	}
	pos := 12
	rate := 0
	for pos+8 <= len(data) {
		id, size := string(data[pos:pos+4]), binary.LittleEndian.Uint32(data[pos+4:])
		body := data[pos+8:]
		switch id {
		case "fmt ":
			if binary.LittleEndian.Uint16(body[0:]) != 1 || binary.LittleEndian.Uint16(body[2:]) != 1 || binary.LittleEndian.Uint16(body[14:]) != 16 {
				t.Fatalf("fmt chunk % x: want 16-bit mono PCM", body[:16])
			}
			rate = int(binary.LittleEndian.Uint32(body[4:]))
		case "data":
			if size != 0xFFFFFFFF && int(size) != len(body) {
				t.Fatalf("data size %d, %d bytes follow", size, len(body))
			}
			return rate, pcm16(t, body)
		}
		pos += 8 + int(size) + int(size&1)
	}
	t.Fatal("WAV without a data chunk")
	return 0, nil
}

func pcm16(t *testing.T, b []byte) []int16 {
	t.Helper()
	if len(b)%2 != 0 {
		t.Fatalf("%d bytes of 16-bit PCM: odd", len(b))
	}
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out
}

// alone runs req on e directly and returns its audio quantised to 16 bits
// as the WAV and pcm encoders do (round to nearest, clamp).
func alone(t *testing.T, e *engine.Engine, req engine.Request) []int16 {
	t.Helper()
	s, err := e.Synthesize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var pcm []float32
	for ev := range s.Events() {
		if ev.Kind == engine.Audio {
			pcm = append(pcm, ev.PCM...)
		}
	}
	if err := s.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	return quantise(pcm)
}

func quantise(pcm []float32) []int16 {
	out := make([]int16, len(pcm))
	for i, s := range pcm {
		out[i] = audio.PCM16(s)
	}
	return out
}

// servesNext checks that the server still speaks after what the test
// did: a short request is answered 200 with its audio.
func (ts *testServer) servesNext(t *testing.T, what string) {
	t.Helper()
	resp := ts.post(t, "/v1/tts", map[string]any{"text": "Next.", "max_seconds": 0.3})
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || n == 0 {
		t.Fatalf("%s: status %d, %d bytes", what, resp.StatusCode, n)
	}
}
