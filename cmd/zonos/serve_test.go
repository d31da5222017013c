package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"zonostream/internal/golden"
)

// TestServeRefusesUnsafeOrBadFlags: listening beyond loopback without a
// key, a key file that is missing or empty, and stray arguments are
// refused before the model loads (exit 2, with what to do).
func TestServeRefusesUnsafeOrBadFlags(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(empty, []byte("# no keys yet\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, "API key"},
		{[]string{"--api-key-file", filepath.Join(t.TempDir(), "absent")}, "API keys"},
		{[]string{"--api-key-file", empty}, "holds no key"},
		{[]string{"stray"}, "unexpected arguments"},
		{[]string{"--max-text-bytes", "99999999"}, "engine's"},
	} {
		var code int
		stderr := captureStderr(t, func() { code = runServe(append(tinyArgs(t), c.args...)) })
		if code != 2 || !strings.Contains(stderr, c.says) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.says)
		}
	}
}

// TestAPIKeysFromFile: keys are one a line; blank lines and # comments
// are skipped, and the spaces around a key.
func TestAPIKeysFromFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(f, []byte("# local clients\nsk-one-0123456789abcdef\n\n  sk-two-0123456789abcdef  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := apiKeys(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sk-one-0123456789abcdef", "sk-two-0123456789abcdef"}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("keys %q, want %q", keys, want)
	}
}

// TestServeSIGTERMDuringStream: `zonos serve` on the tiny model answers
// /readyz once warmed and streams speech; SIGTERM mid-stream ends the
// stream within the grace period as a valid body with the reason in the
// trailer, and the process exits 0 after freeing the engine.
func TestServeSIGTERMDuringStream(t *testing.T) {
	if addr := os.Getenv("ZONOS_SERVE_ADDR"); addr != "" {
		os.Exit(runServe(append(tinyArgs(t), "--backend", "cpu", "--listen", addr, "--shutdown-grace", "300ms")))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeSIGTERMDuringStream$")
	cmd.Env = append(os.Environ(), "ZONOS_SERVE_ADDR="+addr, "ZONOS_GOLDEN_DIR="+golden.Dir(), "XDG_DATA_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	for ready := false; !ready; {
		select {
		case err := <-exited:
			t.Fatalf("serve ended (%v) before it was ready; stderr:\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			ready = resp.StatusCode == 200
			resp.Body.Close()
		}
	}
	resp, err := http.Post("http://"+addr+"/v1/tts", "application/json",
		strings.NewReader(`{"text": "A long sentence that will not finish. And another one after it, to be sure.", "max_seconds": 20}`))
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 2048)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("body: %v", err)
	}
	if msg := resp.Trailer.Get("X-Zonos-Error"); !strings.Contains(msg, "shutting down") {
		t.Errorf("trailer X-Zonos-Error %q", msg)
	}
	if body := append(head, rest...); string(body[:4]) != "RIFF" || (len(body)-44)%2 != 0 {
		t.Errorf("body of %d bytes is not a whole 16-bit WAV", len(body))
	}
	err = <-exited
	if err != nil {
		t.Fatalf("serve after SIGTERM: %v; stderr:\n%s", err, stderr.String())
	}
}
