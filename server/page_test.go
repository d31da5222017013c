package server_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"zonostream/internal/voices"
	"zonostream/server"
)

// TestPageSpeaksInBrowser: the page at / in a real (headless) browser
// lists the server's voices, speaks over the WebSocket, plays what it
// receives through Web Audio, and shows the time to first audio.
func TestPageSpeaksInBrowser(t *testing.T) {
	lib := &voices.Library{Dir: t.TempDir()}
	emb := make([]float32, voices.EmbeddingSize)
	for i := range emb {
		emb[i] = 0.05 * float32(i%7-3)
	}
	if err := lib.Add(voices.Voice{Name: "narrator", Embedding: emb, Created: time.Now()}, false); err != nil {
		t.Fatal(err)
	}
	// The page asks for no length; the server's limit keeps the
	// utterance to a second of audio.
	addr := serveTiny(t, lib, server.Config{Limits: server.Limits{MaxSeconds: 1}})
	b := newBrowser(t)

	b.do(t, "loading the page",
		chromedp.Navigate("http://"+addr+"/"),
		// The select starts with "default" only; the saved voice
		// appears once the page has read GET /v1/voices.
		chromedp.Poll[chromedp.Void](`document.querySelector('#voice option[value="narrator"]') !== null`, chromedp.WithPollingTimeout(0)),
	)
	voiceNames := eval[[]string](t, b, `[...document.querySelectorAll('#voice option')].map(o => o.value)`)
	if len(voiceNames) != 2 || voiceNames[0] != "default" || voiceNames[1] != "narrator" {
		t.Fatalf("voices listed %q, want [default narrator]", voiceNames)
	}

	type pageState struct {
		Status     string `json:"status"`
		Error      bool   `json:"error"`
		TTFAMs     string `json:"ttfa_ms"`
		EngineTTFA string `json:"engine_ttfa"`
		Samples    string `json:"samples"`
		PlayedSecs string `json:"played"`
	}
	const state = `(() => {
		const $ = (id) => document.getElementById(id);
		return { status: $("status").textContent, error: $("status").className === "error",
			ttfa_ms: $("ttfa").dataset.ms, engine_ttfa: $("engine-ttfa").textContent,
			samples: $("seconds").dataset.samples, played: $("played").dataset.seconds };
	})()`
	b.do(t, "speaking",
		chromedp.SetValue(chromedp.ID("text"), "Hello there."),
		chromedp.SetValue(chromedp.ID("voice"), "narrator"),
		chromedp.Click(chromedp.ID("speak")),
		// Done (or an error), and every buffer scheduled has been played.
		chromedp.Poll[chromedp.Void](`(() => {
			const $ = (id) => document.getElementById(id);
			if ($("status").className === "error") return true;
			const samples = Number($("seconds").dataset.samples);
			return $("status").textContent.startsWith("Done") && samples > 0 &&
				Number($("played").dataset.seconds) >= samples / 44100 - 0.001;
		})()`, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0)),
	)
	st := eval[pageState](t, b, state)
	t.Logf("page: %+v", st)
	if st.Error || !strings.HasPrefix(st.Status, "Done") {
		t.Fatalf("status %q (error %v), want Done", st.Status, st.Error)
	}
	ttfa, err := strconv.ParseFloat(st.TTFAMs, 64)
	if err != nil || ttfa <= 0 {
		t.Errorf("#ttfa data-ms %q, want the client's time to first audio", st.TTFAMs)
	}
	if st.EngineTTFA == "–" || st.EngineTTFA == "" {
		t.Errorf("#engine-ttfa %q, want the engine's time to first audio", st.EngineTTFA)
	}
	samples, _ := strconv.Atoi(st.Samples)
	played, _ := strconv.ParseFloat(st.PlayedSecs, 64)
	if samples <= 0 || samples%512 != 0 || played <= 0 {
		t.Errorf("received %s samples, played %s s; want whole 512-sample frames, all played", st.Samples, st.PlayedSecs)
	}
	if exc := b.exceptions(); len(exc) > 0 {
		t.Errorf("the page threw: %q", exc)
	}
}

// TestPageStopInBrowser: Stop works while the WebSocket is still
// connecting and while audio streams: the page says Stopped, nothing
// stays queued to play, and Speak is usable again.
func TestPageStopInBrowser(t *testing.T) {
	addr := serveTiny(t, nil, server.Config{Limits: server.Limits{MaxSeconds: 1}})
	b := newBrowser(t)
	b.do(t, "loading the page", chromedp.Navigate("http://"+addr+"/"), chromedp.WaitVisible(chromedp.ID("speak")))
	type stopState struct {
		Status  string `json:"status"`
		Speak   bool   `json:"speak_enabled"`
		Stop    bool   `json:"stop_enabled"`
		Queued  int    `json:"queued"`
		Samples string `json:"samples"`
	}
	// queued is the page's set of buffers scheduled to play.
	const state = `({ status: document.getElementById("status").textContent,
		speak_enabled: !document.getElementById("speak").disabled,
		stop_enabled: !document.getElementById("stop").disabled,
		queued: queued.size, samples: document.getElementById("seconds").dataset.samples })`
	stopped := chromedp.Poll[chromedp.Void](`document.getElementById("status").textContent === "Stopped." && !document.getElementById("speak").disabled`,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(0))

	// Stop in the same moment as Speak: the socket is still connecting.
	eval[chromedp.Void](t, b, `document.getElementById("speak").click(); document.getElementById("stop").click()`)
	b.do(t, "stopping while connecting", stopped)
	if st := eval[stopState](t, b, state); st.Stop || st.Queued != 0 {
		t.Errorf("after Stop while connecting: %+v; want Stop disabled and nothing queued", st)
	}

	// Stop once the first audio has arrived.
	b.do(t, "stopping while speaking",
		chromedp.Click(chromedp.ID("speak")),
		chromedp.Poll[chromedp.Void](`document.getElementById("ttfa").dataset.ms !== ""`, chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(0)),
		chromedp.Click(chromedp.ID("stop")),
		stopped,
	)
	st := eval[stopState](t, b, state)
	t.Logf("after Stop while speaking: %+v", st)
	if st.Stop || st.Queued != 0 || st.Samples == "0" {
		t.Errorf("after Stop while speaking: %+v; want audio received, then Stop disabled and nothing queued", st)
	}
	if exc := b.exceptions(); len(exc) > 0 {
		t.Errorf("the page threw: %q", exc)
	}
}

// TestBrowserCrossOrigin: in a real browser, a page from another origin
// can neither read the server's API nor make it speak, over fetch or the
// WebSocket, and a page whose host name was rebound to 127.0.0.1 (DNS
// rebinding) is refused by its Host; the server's own page uses both.
func TestBrowserCrossOrigin(t *testing.T) {
	addr := serveTiny(t, nil, server.Config{Limits: server.Limits{MaxSeconds: 1}})
	_, port, _ := net.SplitHostPort(addr)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!doctype html><title>another site</title><p>another site")
	}))
	defer other.Close()
	// rebound.test resolves to 127.0.0.1, as an attacker's name does once
	// its DNS answer is rebound.
	b := newBrowser(t, chromedp.Flag("host-resolver-rules", "MAP rebound.test 127.0.0.1"))

	type attempt struct {
		Voices string `json:"voices"`
		Speech string `json:"speech"`
		WS     string `json:"ws"`
	}
	// try uses the API at base from the page loaded in the tab: it reads
	// the voices, posts a speech request the way a form or a no-cors
	// fetch can (the browser sends it without asking first), and opens
	// the WebSocket.
	try := func(base string) attempt {
		t.Helper()
		return eval[attempt](t, b, `(async () => {
			const base = `+strconv.Quote(base)+`;
			const out = {};
			try { const r = await fetch(base + "/v1/voices"); out.voices = "status " + r.status; }
			catch (e) { out.voices = "failed: " + e.name; }
			try {
				await fetch(base + "/v1/audio/speech", { method: "POST", mode: "no-cors",
					headers: { "Content-Type": "text/plain" }, body: JSON.stringify({ input: "Hello.", response_format: "wav" }) });
				out.speech = "sent";
			} catch (e) { out.speech = "failed: " + e.name; }
			out.ws = await new Promise((resolve) => {
				const ws = new WebSocket(base.replace(/^http/, "ws") + "/v1/tts/stream", ["zonos.v1"]);
				ws.onopen = () => { resolve("open"); ws.close(); };
				ws.onclose = (e) => resolve("closed " + e.code);
			});
			return out;
		})()`)
	}

	b.do(t, "opening the other site", chromedp.Navigate(other.URL))
	got := try("http://" + addr)
	t.Logf("from %s: %+v", other.URL, got)
	if !strings.HasPrefix(got.Voices, "failed") || got.WS != "closed 1006" {
		t.Errorf("a page from another origin read the voices (%s) or opened the WebSocket (%s)", got.Voices, got.WS)
	}

	b.do(t, "opening the rebound name", chromedp.Navigate("http://rebound.test:"+port+"/"))
	got = try("http://rebound.test:" + port)
	t.Logf("from rebound.test: %+v", got)
	if got.Voices != "status 403" || got.WS != "closed 1006" {
		t.Errorf("a page on a rebound name: voices %s, WebSocket %s; want status 403 and a refused handshake", got.Voices, got.WS)
	}

	// The cross-site and rebound requests were refused by the server, not
	// only hidden from the page: none reached a handler, none spoke; each
	// endpoint was refused at least twice (another origin, a rebound name).
	m := metricsOf(t, addr)
	for _, ep := range []string{"voices", "speech", "ws"} {
		prefix := `zonos_requests_total{endpoint="` + ep + `",`
		forbidden := m[prefix+`outcome="forbidden"}`]
		if forbidden < 2 {
			t.Errorf("%s: %g requests refused as forbidden, want 2 or more (another origin, a rebound name)", ep, forbidden)
		}
		for k, n := range m {
			if strings.HasPrefix(k, prefix) && !strings.HasSuffix(k, `outcome="forbidden"}`) && n > 0 {
				t.Errorf("%s = %g: a request from a page that may not use the server was not refused", k, n)
			}
		}
	}
	if n := m["zonos_audio_seconds_total"]; n != 0 {
		t.Errorf("the server spoke %g s of audio for pages that may not use it", n)
	}

	b.do(t, "opening the server's page", chromedp.Navigate("http://"+addr+"/"))
	got = try("http://" + addr)
	t.Logf("from the server's page: %+v", got)
	if got.Voices != "status 200" || got.WS != "open" {
		t.Errorf("the server's own page: voices %s, WebSocket %s; want status 200 and open", got.Voices, got.WS)
	}
}

// metricsOf reads the server's /metrics into a map from a sample's name
// and labels, as written, to its value.
func metricsOf(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); i > 0 && err == nil {
			m[line[:i]] = v
		}
	}
	return m
}
