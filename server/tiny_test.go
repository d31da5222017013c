package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"zonostream/engine"
	"zonostream/engine/compute/cpu"
	"zonostream/internal/golden"
	"zonostream/internal/voices"
	"zonostream/server"
)

// serveTiny starts a server on the tiny golden models (CPU) with lib as
// its voice library (nil: none), listening on a free loopback port, and
// returns that address (host:port). cfg.Listen is set to it; the server
// is shut down when the test ends.
func serveTiny(t *testing.T, lib *voices.Library, cfg server.Config) string {
	t.Helper()
	e, err := engine.Load(cpu.New(0), engine.PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny")))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = ln.Addr().String()
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = time.Second
	}
	srv, err := server.New(e, lib, server.SpeakerModel{}, cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	srv.SetReady(true)
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serving: %v", err)
		}
		e.Backend().Close()
	})
	return cfg.Listen
}
