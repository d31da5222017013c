package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"zonostream/internal/voices"
)

// serveClient bounds a request to the in-app server (the tiny model on a
// shared CPU, under the race detector).
var serveClient = &http.Client{Timeout: 2 * time.Minute}

// tapServe sets the address to listen on and taps the serve check, as a
// user does.
func tapServe(tu testUI, listen string) {
	tu.on(func() {
		tu.settings.ServeListen = listen
		test.Tap(tu.compose.serve.check)
	})
}

// waitServe waits until the service is in phase and the settings line
// shows that state; it returns the state.
func waitServe(t *testing.T, tu testUI, phase ServePhase) ServeState {
	t.Helper()
	var st ServeState
	var line string
	waitFor(t, fmt.Sprintf("serve phase %d on the settings line", phase), func() bool {
		st = tu.Serving.State()
		tu.on(func() { line = tu.compose.serve.line.Text })
		return st.Phase == phase && line == serveLine(st)
	})
	return st
}

// preload loads and warms the selected model as the app does at start.
func preload(t *testing.T, tu testUI) {
	t.Helper()
	done := make(chan error, 1)
	tu.OnPreloaded = func(err error) { done <- err }
	tu.on(func() { tu.Preload() })
	if err := waitPreload(t, done); err != nil {
		t.Fatalf("preload: %v", err)
	}
}

// refused reports whether a connection to addr is refused.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := serveClient.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, body
}

// TestServeSettingServesTheAppEngine: turning the setting on with a model
// loaded serves that engine and the app's voice library on loopback (the
// probes, OpenAI's speech endpoint with audio from the engine, the
// voices), the line names the URLs and the setting is remembered; turning
// it off closes the port and the line says so.
func TestServeSettingServesTheAppEngine(t *testing.T) {
	lib := &voices.Library{Dir: filepath.Join(t.TempDir(), "voices")}
	if err := lib.Add(voices.Voice{Name: "Bob", Embedding: embeddingOf(1), ClipSeconds: 9.5, Created: time.Now()}, false); err != nil {
		t.Fatal(err)
	}
	tu := newTestUI(t, false, func(c *Config) { c.Voices = lib })
	m := tu.cfg.Models.(*tinyModels)
	preload(t, tu)
	tapServe(tu, "127.0.0.1:0")
	st := waitServe(t, tu, ServeServing)
	base := "http://" + st.Addr
	tu.on(func() {
		want := "Serving on " + base + " — OpenAI base_url " + base + "/v1"
		if line := tu.compose.serve.line.Text; line != want {
			t.Errorf("line %q, want %q", line, want)
		}
	})
	if !LoadSettings(tu.App.Preferences()).Serve {
		t.Error("the serve setting was not saved")
	}

	if code, _ := getJSON(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d", code)
	}
	if code, body := getJSON(t, base+"/readyz"); code != http.StatusOK || body["ready"] != true || body["model"] != "hybrid" {
		t.Errorf("/readyz %d %v", code, body)
	}
	_, list := getJSON(t, base+"/v1/voices")
	bob := false
	vs, _ := list["voices"].([]any)
	for _, v := range vs {
		if v, ok := v.(map[string]any); ok && v["name"] == "Bob" {
			bob = true
		}
	}
	if !bob {
		t.Errorf("/v1/voices %v: want the app's library (Bob)", list)
	}
	resp, err := serveClient.Post(base+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"Hi.","response_format":"wav"}`))
	if err != nil {
		t.Fatal(err)
	}
	audio, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(audio, []byte("RIFF")) || len(audio) <= 44 {
		t.Fatalf("speech: status %d, %d bytes starting %q", resp.StatusCode, len(audio), audio[:min(len(audio), 16)])
	}
	m.mu.Lock()
	loads := m.loads
	m.mu.Unlock()
	if loads != 1 {
		t.Errorf("%d models loaded: the server must speak with the app's engine", loads)
	}

	tu.on(func() { test.Tap(tu.compose.serve.check) })
	waitServe(t, tu, ServeOff)
	if !refused(st.Addr) {
		t.Errorf("the port %s still answers after the setting was turned off", st.Addr)
	}
	tu.on(func() {
		if line := tu.compose.serve.line.Text; !strings.HasPrefix(line, "Off") {
			t.Errorf("line %q after turning it off", line)
		}
	})
	if LoadSettings(tu.App.Preferences()).Serve {
		t.Error("turning the setting off was not saved")
	}
}

// TestServePortInUse: a port another program holds is named on the line,
// and the window goes on speaking. The setting turned on before any
// model is loaded waits for the first Speak's.
func TestServePortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	tu := newTestUI(t, false)
	tapServe(tu, ln.Addr().String())
	waitServe(t, tu, ServeWaiting)
	tu.speak(t, "Hello there.")
	if u := tu.Speaker.History.Last(); u == nil || u.Outcome != PhaseDone {
		t.Fatalf("utterance while the port is taken: %+v", u)
	}
	st := waitServe(t, tu, ServeFailed)
	tu.on(func() {
		if line := tu.compose.serve.line.Text; !strings.Contains(line, "port "+port+" is in use") {
			t.Errorf("line %q does not say port %s is in use", line, port)
		}
	})
	if st.Err == nil {
		t.Fatal("failed without an error")
	}
	tu.speak(t, "Still here.")
	if u := tu.Speaker.History.Last(); u == nil || u.Outcome != PhaseDone {
		t.Fatalf("second utterance: %+v", u)
	}
}

// TestServeFollowsModelSwitch: speaking with another model restarts the
// server on that model's engine, and the old server is gone.
func TestServeFollowsModelSwitch(t *testing.T) {
	tu := newTestUI(t, false)
	preload(t, tu)
	tapServe(tu, "127.0.0.1:0")
	first := waitServe(t, tu, ServeServing)
	tu.on(func() { tu.compose.model.SetSelected("transformer") })
	tu.speak(t, "Hello there.")
	var st ServeState
	waitFor(t, "the server on a new address, on the line", func() bool {
		st = tu.Serving.State()
		var line string
		tu.on(func() { line = tu.compose.serve.line.Text })
		return st.Phase == ServeServing && st.Addr != first.Addr && line == serveLine(st)
	})
	if code, body := getJSON(t, "http://"+st.Addr+"/readyz"); code != http.StatusOK || body["model"] != "transformer" {
		t.Errorf("/readyz after the switch: %d %v", code, body)
	}
	if !refused(first.Addr) {
		t.Errorf("the server on the first model (%s) still answers", first.Addr)
	}
}

// TestServeServiceLifecycle: the Service alone — waiting for an engine, the
// server's refusal of an address beyond loopback, a stop before another
// model loads that has closed the port when Loading returns, and Close:
// the last state reported is off.
func TestServeServiceLifecycle(t *testing.T) {
	eng, err := newTinyModels(t).Load(context.Background(), "hybrid")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var last ServeState
	s := NewService(ServiceOptions{MaxSeconds: func() float64 { return 0.5 }, OnState: func(st ServeState) {
		mu.Lock()
		last = st
		mu.Unlock()
	}})
	t.Cleanup(func() { s.Close(); s.Wait() })
	wait := func(phase ServePhase) ServeState {
		t.Helper()
		var st ServeState
		waitFor(t, fmt.Sprintf("phase %d", phase), func() bool { st = s.State(); return st.Phase == phase })
		return st
	}

	s.Set(true, "0.0.0.0:8790")
	if st := s.State(); st.Phase != ServeWaiting {
		t.Fatalf("on without an engine: %+v", st)
	}
	s.Loaded("hybrid", eng)
	if st := wait(ServeFailed); !strings.Contains(st.Err.Error(), "beyond this computer") || !strings.Contains(st.Err.Error(), "serve_listen") {
		t.Errorf("a non-loopback address: %v", st.Err)
	}

	s.Set(true, "127.0.0.1:0")
	st := wait(ServeServing)
	s.Loading("hybrid") // the model in use: nothing to stop
	if got := s.State(); got != st {
		t.Fatalf("Loading the served variant changed the state to %+v", got)
	}
	s.Loading("transformer")
	if !refused(st.Addr) {
		t.Errorf("the port %s still answers once Loading another model returned", st.Addr)
	}
	if got := s.State(); got.Phase != ServeWaiting {
		t.Errorf("after Loading another model: %+v", got)
	}

	s.Loaded("hybrid", eng)
	wait(ServeServing)
	s.Close()
	s.Wait()
	mu.Lock()
	defer mu.Unlock()
	if last.Phase != ServeOff || s.State().Phase != ServeOff {
		t.Errorf("after Close and Wait: reported %+v, state %+v", last, s.State())
	}
}
