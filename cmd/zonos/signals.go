package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// stopSignals turns the first SIGINT (Ctrl-C) or SIGTERM (what timeout,
// systemd and Kubernetes send) into a cancelled context, so a command ends
// the way it ends when cancelled — `zonos say --out` finalizes the WAV with
// what was generated — instead of dying with a half-written file. A second
// signal has its default effect: it ends the process at once.
type stopSignals struct {
	ctx    context.Context
	cancel context.CancelFunc
	ch     chan os.Signal
	once   sync.Once
	mu     sync.Mutex
	got    os.Signal
}

// catchStopSignals starts catching SIGINT and SIGTERM; call stop when the
// work they would cancel is over.
func catchStopSignals() *stopSignals {
	ctx, cancel := context.WithCancel(context.Background())
	s := &stopSignals{ctx: ctx, cancel: cancel, ch: make(chan os.Signal, 1)}
	signal.Notify(s.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-s.ch:
			s.mu.Lock()
			s.got = sig
			s.mu.Unlock()
			signal.Stop(s.ch)
			cancel()
		case <-ctx.Done(): // stop was called
		}
	}()
	return s
}

// stop restores the signals' default effect.
func (s *stopSignals) stop() {
	s.once.Do(func() {
		signal.Stop(s.ch)
		s.cancel()
	})
}

// exitCode is the status a shell gives a process ended by the signal
// received (128 + its number: 130 for SIGINT, 143 for SIGTERM), or 0 when
// none arrived.
func (s *stopSignals) exitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sig, ok := s.got.(syscall.Signal); ok {
		return 128 + int(sig)
	}
	return 0
}
