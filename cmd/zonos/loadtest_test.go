package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"zonostream/engine"
	"zonostream/engine/compute/cpu"
	"zonostream/internal/golden"
	"zonostream/internal/loadtest"
	"zonostream/server"
)

// TestLoadtestRefusesBadFlags: mistakes in the flags are exit 2 with what
// is wrong, before any request.
func TestLoadtestRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--streams", "0"}, "at least 1"},
		{[]string{"--streams-max", "0"}, "at least 1"},
		{[]string{"--streams", "4", "--find"}, "not both"},
		{[]string{"--pre-roll", "-1s"}, "≥ 0"},
		{[]string{"--text", "  "}, "empty"},
		{[]string{"stray"}, "unexpected arguments"},
		{[]string{"--api-key-file", filepath.Join(t.TempDir(), "absent")}, "API keys"},
	} {
		var code int
		stderr := captureStderr(t, func() { code = runLoadtest(c.args) })
		if code != 2 || !strings.Contains(stderr, c.says) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.says)
		}
	}
	help := captureStderr(t, func() { runLoadtest([]string{"-h"}) })
	if !strings.Contains(help, "usage: zonos loadtest") {
		t.Errorf("-h: want the usage:\n%s", help)
	}
}

// TestLoadtestUnreachable: with nothing listening at --url the command
// says so and how to point it elsewhere (exit 1).
func TestLoadtestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	var code int
	stderr := captureStderr(t, func() { code = runLoadtest([]string{"--url", url}) })
	if code != 1 || !strings.Contains(stderr, "cannot reach the speech server at "+url) || !strings.Contains(stderr, "--url") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestLoadtestAgainstServer: the command against the real server on the
// tiny model (in this process, on loopback) with an API key: without the
// key it says to pass --api-key-file; with the key in a file it runs, verifies
// and prints JSON and the table.
func TestLoadtestAgainstServer(t *testing.T) {
	const key = "sk-loadtest-cmd-0123456789abcdef"
	e, err := engine.Load(cpu.New(0), engine.PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny")))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(e, nil, server.SpeakerModel{}, server.Config{Listen: ln.Addr().String(), APIKeys: []string{key},
		ShutdownGrace: time.Second, Limits: server.Limits{MaxSeconds: 0.5, MaxQueue: 16, MaxStreamsPerKey: 8}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Backend().Close() // after Serve has returned
	srv.SetReady(true)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("serving: %v", err)
		}
	}()
	url := "http://" + ln.Addr().String()
	args := []string{"--url", url, "--max-seconds", "0.5", "--text", "Hello there."}

	var code int
	stderr := captureStderr(t, func() { code = runLoadtest(args) })
	if code != 1 || !strings.Contains(stderr, "--api-key-file") {
		t.Errorf("without a key: exit %d, stderr %q; want 1 and how to pass one", code, stderr)
	}

	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("# the load test's key\n"+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args = append(args, "--api-key-file", keyFile)
	var stdout string
	stderr = captureStderr(t, func() {
		stdout = captureStdout(t, func() { code = runLoadtest(append(args, "--streams", "3", "--verify", "--json")) })
	})
	var r loadtest.Result
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 {
		t.Fatalf("--json: exit %d, %v; stdout %q, stderr %q", code, err, stdout, stderr)
	}
	if r.Streams != 3 || r.Complete != 3 || r.Verified != 3 || r.Mismatches != 0 || r.Protocol != "http" {
		t.Errorf("--json: %d streams over %s, %d complete, %d verified, %d differ", r.Streams, r.Protocol, r.Complete, r.Verified, r.Mismatches)
	}

	captureStderr(t, func() {
		stdout = captureStdout(t, func() { code = runLoadtest(append(args, "--streams", "2", "--ws")) })
	})
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "streams") || !strings.HasPrefix(lines[1], "2 ") {
		t.Errorf("table: exit %d, stdout:\n%s", code, stdout)
	}
}
