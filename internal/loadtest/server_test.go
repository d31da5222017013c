package loadtest_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"zonostream/audio"
	"zonostream/engine"
	"zonostream/engine/compute/cpu"
	"zonostream/internal/golden"
	"zonostream/internal/loadtest"
	"zonostream/server"
)

var (
	tinyOnce sync.Once
	tinyEng  *engine.Engine
	tinyErr  error
)

// tinyEngine is the golden tiny hybrid model and DAC on the CPU, loaded
// once; the tests' servers use it one after another.
func tinyEngine(t *testing.T) *engine.Engine {
	t.Helper()
	tinyOnce.Do(func() {
		tinyEng, tinyErr = engine.Load(cpu.New(0), engine.PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny")))
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyEng
}

// maxSeconds keeps the tiny model's utterances short (it rarely ends one
// by itself).
const maxSeconds = 0.5

// serveTiny runs the real server on the tiny engine on a loopback port
// until the test ends and returns its URL.
func serveTiny(t *testing.T, cfg server.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = ln.Addr().String()
	cfg.Limits.MaxSeconds = maxSeconds
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = time.Second
	}
	srv, err := server.New(tinyEngine(t), nil, server.SpeakerModel{}, cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	srv.SetReady(true)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("serving: %v", err)
		}
	})
	return "http://" + cfg.Listen
}

// aloneSHA256 is the hash of req's audio from the engine directly,
// quantised to 16-bit little-endian as the server's pcm is.
func aloneSHA256(t *testing.T, req engine.Request) string {
	t.Helper()
	s, err := tinyEngine(t).Synthesize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	var b [2]byte
	for ev := range s.Events() {
		if ev.Kind == engine.Audio {
			for _, v := range ev.PCM {
				binary.LittleEndian.PutUint16(b[:], uint16(audio.PCM16(v)))
				h.Write(b[:])
			}
		}
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

const text = "Hello there. How are you?"

// TestLoadtestStreamsEqualAlone: 8 concurrent streams against the real
// server on the tiny model, over HTTP and over the WebSocket, every one
// complete (no error trailer or event), whole 512-sample frames at
// 44.1 kHz, and equal byte for byte to the same request run alone: on
// the engine directly, and through the server (Verify). Only correctness
// is checked, never a time.
func TestLoadtestStreamsEqualAlone(t *testing.T) {
	if engine.SampleRate != 44100 {
		t.Fatalf("the engine's rate is %d; the load test checks frames at 44100", engine.SampleRate)
	}
	url := serveTiny(t, server.Config{Limits: server.Limits{MaxQueue: 16, MaxStreamsPerKey: 8}})
	const n, seed = 8, 40
	for _, ws := range []bool{false, true} {
		r, err := loadtest.Run(context.Background(), loadtest.Options{URL: url, WebSocket: ws, Text: text, Seed: seed,
			MaxSeconds: maxSeconds, PreRoll: 200 * time.Millisecond, Verify: true}, n)
		if err != nil {
			t.Fatalf("websocket %v: %v", ws, err)
		}
		if r.Streams != n || r.Complete != n || len(r.Errors) != 0 || r.Invalid != 0 {
			t.Fatalf("websocket %v: %d of %d complete, %d invalid, errors %v; streams %+v", ws, r.Complete, n, r.Invalid, r.Errors, r.PerStream)
		}
		if r.Verified != n || r.Mismatches != 0 {
			t.Errorf("websocket %v: %d verified alone through the server, %d differ", ws, r.Verified, r.Mismatches)
		}
		if r.Server.Samples == 0 || r.Server.DeviceMemoryPeakBytes <= 0 {
			t.Errorf("websocket %v: /metrics sampled %d times, device memory %d (the CPU backend reports its heap): %s",
				ws, r.Server.Samples, r.Server.DeviceMemoryPeakBytes, r.Server.Err)
		}
		seen := map[string]bool{}
		for i, s := range r.PerStream {
			if s.Index != i || s.Seed != seed+uint64(i) || s.SampleRate != 44100 || s.AudioBytes == 0 || s.AudioBytes%(2*512) != 0 {
				t.Errorf("websocket %v: stream %d: index %d, seed %d, %d bytes at %d Hz; want seed %d, whole 512-sample frames at 44100",
					ws, i, s.Index, s.Seed, s.AudioBytes, s.SampleRate, seed+i)
			}
			if s.Mismatch != "" {
				t.Errorf("websocket %v: stream %d alone: %s", ws, i, s.Mismatch)
			}
			if s.EngineTTFAMs <= 0 {
				t.Errorf("websocket %v: stream %d: no engine TTFA from the server", ws, i)
			}
			req := engine.Request{Text: text, Knobs: engine.DefaultKnobs(), Seed: seed + uint64(i), MaxSeconds: maxSeconds, DiscardCodes: true}
			if ws {
				// The WebSocket speaks its text through a feed.
				feed := engine.NewTextFeed()
				if err := feed.Append(text); err != nil {
					t.Fatal(err)
				}
				feed.End()
				req.Text, req.Feed = "", feed
			}
			if want := aloneSHA256(t, req); s.AudioSHA256 != want {
				t.Errorf("websocket %v: stream %d (seed %d): SHA-256 %s under load, %s from the engine alone", ws, i, s.Seed, s.AudioSHA256, want)
			}
			seen[s.AudioSHA256] = true
		}
		if len(seen) != n {
			t.Errorf("websocket %v: %d distinct streams of %d: the seeds did not reach the server", ws, len(seen), n)
		}
		if r.TTFA.N != n || r.EngineTTFA.N != n || r.AudioSeconds <= 0 {
			t.Errorf("websocket %v: TTFA of %d streams, engine's of %d, %g s of audio", ws, r.TTFA.N, r.EngineTTFA.N, r.AudioSeconds)
		}
	}
}

// metric reads one series' value from /metrics (0 when absent).
func metric(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if err := json.Unmarshal([]byte(v), &f); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// waitFor polls cond until it holds; the bound only stops a hung test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
	}
}

// TestLoadtestCountsRefusals: with every engine slot held by other
// clients and a queue of 2, a run of 5 streams has 2 queued (they complete once the
// engine is free) and 3 refused with 503 queue_full, counted by status,
// not an error of the run.
func TestLoadtestCountsRefusals(t *testing.T) {
	url := serveTiny(t, server.Config{Limits: server.Limits{MaxQueue: 2, MaxStreamsPerKey: 16}})
	// WebSocket streams that have not sent their text yet hold the slots.
	ctx := context.Background()
	slots := tinyEngine(t).Capacity()
	var holders []*websocket.Conn
	for i := 0; i < slots; i++ {
		holder, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/v1/tts/stream", &websocket.DialOptions{Subprotocols: []string{"zonos.v1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer holder.CloseNow()
		if err := holder.Write(ctx, websocket.MessageText, []byte(`{"type": "start", "seed": 1}`)); err != nil {
			t.Fatal(err)
		}
		holders = append(holders, holder)
	}
	waitFor(t, "the holders to take every slot", func() bool { return metric(t, url, "zonos_active_streams") == float64(slots) })

	type outcome struct {
		r   *loadtest.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := loadtest.Run(ctx, loadtest.Options{URL: url, Text: text, Seed: 3, MaxSeconds: maxSeconds}, 5)
		done <- outcome{r, err}
	}()
	waitFor(t, "2 queued and 3 refused", func() bool {
		return metric(t, url, "zonos_queue_length") == 2 && metric(t, url, `zonos_requests_total{endpoint="tts",outcome="unavailable"}`) == 3
	})
	for _, holder := range holders {
		if err := holder.Write(ctx, websocket.MessageText, []byte(`{"type": "cancel"}`)); err != nil {
			t.Fatal(err)
		}
	}
	o := <-done
	if o.err != nil {
		t.Fatalf("a run with refusals failed: %v", o.err)
	}
	r := o.r
	if r.Complete != 2 || r.Errors["503 queue_full"] != 3 || len(r.Errors) != 1 || r.Good() {
		t.Fatalf("%d complete, errors %v, good %v; want 2 complete and 503 queue_full ×3, not good", r.Complete, r.Errors, r.Good())
	}
	if why := loadtest.Why(r); !strings.Contains(why, "503 queue_full ×3") {
		t.Errorf("Why: %q", why)
	}
	for _, s := range r.PerStream {
		if s.Error == "503 queue_full" && (s.Message == "" || s.AudioBytes != 0) {
			t.Errorf("refused stream %d: message %q, %d bytes", s.Index, s.Message, s.AudioBytes)
		}
	}
}

// TestLoadtestFindsAndReports: the search against the real server makes
// its runs in the order its rule gives for their outcomes (doubling while
// good, then bisecting), and writes a table with a row per run and its
// answer. Whether the tiny model on a CPU keeps up is not asserted.
func TestLoadtestFindsAndReports(t *testing.T) {
	url := serveTiny(t, server.Config{Limits: server.Limits{MaxQueue: 16, MaxStreamsPerKey: 8}})
	var heard int
	s, err := loadtest.Find(context.Background(), loadtest.Options{URL: url, Text: text, MaxSeconds: maxSeconds, PreRoll: loadtest.DefaultPreRoll}, 4, func(*loadtest.Result) { heard++ })
	if err != nil {
		t.Fatal(err)
	}
	if heard != len(s.Runs) || len(s.Runs) == 0 || s.Max != 4 {
		t.Fatalf("%d runs heard, %d made, limit %d", heard, len(s.Runs), s.Max)
	}
	// Replay the rule on the runs' outcomes.
	lo, hi := 0, 0
	for i, r := range s.Runs {
		want := 0
		switch {
		case hi == 0 && lo == 0:
			want = 1
		case hi == 0:
			want = min(2*lo, 4)
		default:
			want = (lo + hi) / 2
		}
		if r.Streams != want {
			t.Fatalf("run %d had %d streams; the rule gives %d (runs %v)", i, r.Streams, want, streamsOf(s.Runs))
		}
		for _, st := range r.PerStream {
			if st.Error != "" {
				t.Errorf("run of %d: stream %d: %s (%s)", r.Streams, st.Index, st.Error, st.Message)
			}
		}
		if r.Good() {
			lo = r.Streams
		} else {
			hi = r.Streams
		}
	}
	if s.Largest != lo || (lo != 4 && hi != lo+1) {
		t.Errorf("largest %d after runs %v", s.Largest, streamsOf(s.Runs))
	}
	var b strings.Builder
	if err := loadtest.WriteSearch(&b, s); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(b.String(), "\n"); lines != len(s.Runs)+3 || !strings.Contains(b.String(), "without starving") {
		t.Errorf("report of %d runs:\n%s", len(s.Runs), b.String())
	}
}

func streamsOf(runs []*loadtest.Result) []int {
	var n []int
	for _, r := range runs {
		n = append(n, r.Streams)
	}
	return n
}

// TestLoadtestClearErrors: a server that needs a key is refused without
// it (ErrUnauthorized) and served with it; a request the server refuses
// as such (400) ends the run (ErrRefused), over either protocol; a URL
// without a scheme is refused before any request, and an address with
// nothing listening is ErrUnreachable.
func TestLoadtestClearErrors(t *testing.T) {
	const key = "sk-loadtest-0123456789abcdef"
	url := serveTiny(t, server.Config{APIKeys: []string{key}, Limits: server.Limits{MaxQueue: 16}})
	o := loadtest.Options{URL: url, Text: text, MaxSeconds: maxSeconds}
	if _, err := loadtest.Run(context.Background(), o, 1); !errors.Is(err, loadtest.ErrUnauthorized) {
		t.Errorf("no key: %v; want ErrUnauthorized", err)
	}
	for _, ws := range []bool{false, true} {
		o.APIKey, o.WebSocket, o.MaxSeconds = key, ws, maxSeconds
		if r, err := loadtest.Run(context.Background(), o, 1); err != nil || r.Complete != 1 {
			t.Errorf("websocket %v, with the key: %v %+v", ws, err, r)
		}
		// A request every stream would have refused ends the run.
		o.MaxSeconds = 10 * maxSeconds
		if _, err := loadtest.Run(context.Background(), o, 2); !errors.Is(err, loadtest.ErrRefused) || !strings.Contains(err.Error(), "max_seconds") {
			t.Errorf("websocket %v, max_seconds over the server's limit: %v; want ErrRefused with the server's words", ws, err)
		}
	}
	if _, err := loadtest.Run(context.Background(), loadtest.Options{URL: strings.TrimPrefix(url, "http://")}, 1); err == nil || !strings.Contains(err.Error(), "want http://host:port") {
		t.Errorf("a URL without its scheme: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	if _, err := loadtest.Run(context.Background(), loadtest.Options{URL: closed}, 1); !errors.Is(err, loadtest.ErrUnreachable) {
		t.Errorf("nothing listening: %v; want ErrUnreachable", err)
	}
}
