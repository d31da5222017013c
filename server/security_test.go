package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestKeysRequiredBeyondLoopback: a server listening on every interface
// without a key refuses to start; short keys are refused.
func TestKeysRequiredBeyondLoopback(t *testing.T) {
	e := tinyEngine(t)
	for _, c := range []struct {
		cfg  Config
		says string
	}{
		{Config{Listen: "0.0.0.0:8790"}, "API key"},
		{Config{Listen: ":8790"}, "API key"},
		{Config{Listen: "192.168.1.5:8790"}, "API key"},
		{Config{Listen: "0.0.0.0:8790", APIKeys: []string{"short"}}, "too easy"},
		{Config{Listen: "nonsense"}, "host:port"},
		{Config{AllowOrigins: []string{"evil.com"}}, "scheme://host"},
		{Config{Limits: Limits{MaxSeconds: 100}}, "engine's"},
	} {
		if _, err := New(e, nil, SpeakerModel{}, c.cfg); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: error %v, want one saying %q", c.cfg.Listen, err, c.says)
		}
	}
	if _, err := New(e, nil, SpeakerModel{}, Config{Listen: "0.0.0.0:8790", APIKeys: []string{"0123456789abcdef0123"}}); err != nil {
		t.Errorf("with a key: %v", err)
	}
	if _, err := New(e, nil, SpeakerModel{}, Config{Listen: "[::1]:8790"}); err != nil {
		t.Errorf("IPv6 loopback without a key: %v", err)
	}
}

// TestAPIKeys: with keys, every API call needs one (as a bearer token, or
// a WebSocket subprotocol for browsers), probes and the page do not, and
// no log line carries a key.
func TestAPIKeys(t *testing.T) {
	key := "sk-local-0123456789abcdef"
	ts := serve(t, tinyEngine(t), Config{APIKeys: []string{"another-key-0123456789", key}})
	apiErr(t, ts.get(t, "/v1/voices"), http.StatusUnauthorized)
	apiErr(t, ts.get(t, "/v1/voices", "Authorization", "Bearer sk-local-0123456789abcdeX"), http.StatusUnauthorized)
	apiErr(t, ts.get(t, "/v1/voices", "Authorization", "Basic "+key), http.StatusUnauthorized)
	resp := ts.get(t, "/v1/voices", "Authorization", "Bearer "+key)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("with the key: %d", resp.StatusCode)
	}
	r := ts.post(t, "/v1/audio/speech", map[string]any{"input": "Hi.", "response_format": "wav"}, "Authorization", "Bearer "+key)
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("speech with the key: %d", r.StatusCode)
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/"} {
		resp := ts.get(t, p)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s without a key: %d", p, resp.StatusCode)
		}
	}
	c := wsDial(t, ts, http.Header{"Sec-WebSocket-Protocol": {"zonos.v1, bearer." + key}})
	if c.Subprotocol() != "zonos.v1" {
		t.Errorf("subprotocol %q: the key must not be echoed", c.Subprotocol())
	}
	c.CloseNow()
	if logs := ts.log.String(); strings.Contains(logs, key) || strings.Contains(logs, "0123456789abcdeX") {
		t.Errorf("a key reached the log:\n%s", logs)
	}
	if !strings.Contains(ts.log.String(), `"key":"key:`) {
		t.Errorf("the log does not name the key by its hash:\n%s", ts.log.String())
	}
}

// TestBrowserRules: on loopback a request must be addressed to a loopback
// name (DNS rebinding) and a page of another origin is refused unless it
// is on the allow-list, for which CORS preflights are answered.
func TestBrowserRules(t *testing.T) {
	ts := serve(t, tinyEngine(t), Config{AllowOrigins: []string{"http://localhost:3000"}})
	apiErr(t, ts.get(t, "/v1/voices", "Host", "evil.example:8790"), http.StatusForbidden)
	apiErr(t, ts.get(t, "/", "Host", "rebound.example"), http.StatusForbidden)
	apiErr(t, ts.get(t, "/v1/voices", "Origin", "http://evil.example"), http.StatusForbidden)
	apiErr(t, ts.post(t, "/v1/audio/speech", `{"input": "Hi."}`, "Origin", "http://evil.example", "Content-Type", "text/plain"), http.StatusForbidden)
	apiErr(t, ts.get(t, "/v1/voices", "Origin", "null"), http.StatusForbidden)
	apiErr(t, ts.get(t, "/v1/voices", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"), http.StatusForbidden)
	for _, h := range [][]string{
		{"Host", "localhost:1234"}, {"Host", "127.0.0.1"}, {"Host", "[::1]:8790"},
		{"Origin", ts.url}, // the page the server serves
		{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate"},
	} {
		resp := ts.get(t, "/v1/voices", h...)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%v: %d", h, resp.StatusCode)
		}
	}
	resp := ts.get(t, "/v1/voices", "Origin", "http://localhost:3000")
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
		t.Errorf("allowed origin: %d, ACAO %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	req, _ := http.NewRequest(http.MethodOptions, ts.url+"/v1/audio/speech", nil)
	req.Header.Set("Origin", "http://localhost:3000")
	req.Header.Set("Access-Control-Request-Method", "POST")
	pre, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pre.Body.Close()
	if pre.StatusCode != http.StatusNoContent || !strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", pre.StatusCode, pre.Header)
	}
	req.Header.Set("Origin", "http://evil.example")
	pre, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pre.Body.Close()
	if pre.StatusCode != http.StatusForbidden || pre.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %d %v", pre.StatusCode, pre.Header)
	}
	// Beyond loopback (keys required) any Host is served.
	if !loopbackHostHeader("localhost:80") || loopbackHostHeader("localhost.evil.example") || loopbackHostHeader("127.0.0.1.nip.io") {
		t.Error("loopbackHostHeader")
	}
}
