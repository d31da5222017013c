package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"zonostream/engine"
	"zonostream/internal/voices"
	"zonostream/server"
)

// serveGrace is how long requests in flight may run on when the app stops
// its server (the setting turned off, another model, the app quitting)
// before they are ended, a shorter but valid file: the window should not
// wait on other programs' long texts.
const serveGrace = 2 * time.Second

// ServePhase is where the in-app speech server stands.
type ServePhase int

const (
	ServeOff      ServePhase = iota // the setting is off and no server runs
	ServeStopping                   // turned off; a server is finishing its requests
	ServeWaiting                    // on, but no model is loaded yet
	ServeStarting                   // listening; the model is warming up (/readyz answers 503)
	ServeServing                    // ready
	ServeFailed                     // it could not start or stopped on an error (Err)
)

// ServeState is what the settings' status line shows.
type ServeState struct {
	Phase ServePhase
	// Addr is the address listened on (host:port) while starting or
	// serving: the port the system chose when the setting names port 0.
	Addr string
	Err  error // why, when failed
}

// ServiceOptions are what a Service serves with.
type ServiceOptions struct {
	// Voices is the voice library shared with the window and the CLI
	// (nil: the server has none).
	Voices *voices.Library
	// Speaker finds the speaker model's files when a server starts
	// (server.SpeakerModel{} when it is not installed: voices from clips
	// are then refused with what to install).
	Speaker func() server.SpeakerModel
	// MaxSeconds bounds each part's audio when a server starts, as the
	// window's utterances are bounded (0: the server's 30 s).
	MaxSeconds func() float64
	// Log receives the server's request log (nil: discarded).
	Log *slog.Logger
	// OnState is called with the new state after every change, from the
	// Service's own goroutines (never from the caller of a method), in
	// order: the last call carries the current state.
	OnState func(ServeState)
}

// Service runs the speech server of `zonos serve` (package server) inside
// the app, on the engine the window speaks with, so that other programs
// on this computer use the loaded model through the OpenAI-compatible API
// while the app is open, as ollama's desktop app serves its API. Running
// in the app's process, it shares the one resident model instead of
// loading a second copy: the engine speaks one utterance at a time, the
// window's and other programs' in turn. It follows the setting (Set), the
// engine the utterances use (Loading and Loaded: it is the Speaker's
// EngineWatcher) and stops for good at Close. No method waits for a
// server except Loading and Wait.
type Service struct {
	opts ServiceOptions

	mu       sync.Mutex
	on       bool
	listen   string
	closed   bool
	variant  string         // the Models variant eng was loaded as
	eng      *engine.Engine // the loaded engine, nil before the first load
	cur      *serveRun      // the server of the current setting and engine
	stopping map[*serveRun]struct{}
	runs     sync.WaitGroup // server goroutines
	notes    sync.WaitGroup // OnState calls on their way
	notifyMu sync.Mutex     // one OnState call at a time
}

// serveRun is one server: started on one engine and address, stopped by
// cancel; done is closed once its Serve has returned and the port is
// free.
type serveRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	state  ServeState
	exited bool
}

// NewService makes a service that is off.
func NewService(o ServiceOptions) *Service {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Speaker == nil {
		o.Speaker = func() server.SpeakerModel { return server.SpeakerModel{} }
	}
	if o.MaxSeconds == nil {
		o.MaxSeconds = func() float64 { return 0 }
	}
	if o.OnState == nil {
		o.OnState = func(ServeState) {}
	}
	return &Service{opts: o, listen: server.DefaultListen, stopping: map[*serveRun]struct{}{}}
}

// Set turns serving on or off, on address listen (host:port; "" is
// server.DefaultListen). A running server on another address restarts.
// Turning it on before a model is loaded waits for Loaded.
func (s *Service) Set(on bool, listen string) {
	if listen == "" {
		listen = server.DefaultListen
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || (on == s.on && listen == s.listen) {
		return
	}
	s.on, s.listen = on, listen
	s.restart()
}

// Loading implements EngineWatcher: before another variant's model is
// loaded, the server on the model in use stops, and Loading returns once
// it has (its requests ended), so the old model can be let go as the
// loader lets it go (one model is resident at a time).
func (s *Service) Loading(variant string) {
	s.mu.Lock()
	if s.closed || s.eng == nil || s.variant == variant {
		s.mu.Unlock()
		return
	}
	s.eng, s.variant = nil, ""
	old := s.cur
	s.restart()
	s.mu.Unlock()
	if old != nil {
		<-old.done
	}
}

// Loaded implements EngineWatcher: the server (re)starts on e, a loaded
// and warmed engine.
func (s *Service) Loaded(variant string, e *engine.Engine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || e == s.eng {
		return
	}
	s.eng, s.variant = e, variant
	s.restart()
}

// Close stops the server for good (the app is quitting) without waiting
// for it; Wait does.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.on, s.closed = false, true
	s.restart()
}

// Wait returns once every server has returned from Serve and every
// OnState call has been made; after Close, the engine's backend can then
// be closed.
func (s *Service) Wait() {
	s.runs.Wait()
	s.notes.Wait()
}

// State is where the service stands now.
func (s *Service) State() ServeState {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.cur != nil:
		return s.cur.state
	case s.on && s.eng == nil:
		return ServeState{Phase: ServeWaiting}
	case len(s.stopping) > 0:
		return ServeState{Phase: ServeStopping}
	}
	return ServeState{Phase: ServeOff}
}

// restart stops the current server and starts one for the setting and
// engine now (s.mu held). The new one waits for the old to have returned
// before it listens, since both may want the same port.
func (s *Service) restart() {
	prev := s.cur
	if prev != nil {
		prev.cancel()
		if !prev.exited {
			s.stopping[prev] = struct{}{}
		}
		s.cur = nil
	}
	if s.on && s.eng != nil && !s.closed {
		ctx, cancel := context.WithCancel(context.Background())
		r := &serveRun{cancel: cancel, done: make(chan struct{}), state: ServeState{Phase: ServeStarting, Addr: s.listen}}
		s.cur = r
		s.runs.Add(1)
		go s.serve(ctx, r, prev, s.eng, s.listen)
	}
	s.changed()
}

// serve is one server's life: start, warm, serve until cancelled.
func (s *Service) serve(ctx context.Context, r, prev *serveRun, e *engine.Engine, listen string) {
	defer s.runs.Done()
	defer s.exited(r)
	if prev != nil {
		<-prev.done // even when cancelled meanwhile: the next one waits on r.done alone
	}
	if ctx.Err() != nil {
		return
	}
	cfg := server.Config{Listen: listen, Log: s.opts.Log, ShutdownGrace: serveGrace,
		Limits: server.Limits{MaxSeconds: s.opts.MaxSeconds()}}
	srv, err := server.New(e, s.opts.Voices, s.opts.Speaker(), cfg)
	if err != nil { // the address: the app sets nothing else
		s.report(r, ServeState{Phase: ServeFailed, Err: fmt.Errorf("serve_listen %q in the settings: %w — the app serves this computer only: use a loopback address such as %s", listen, err, server.DefaultListen)})
		return
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		s.report(r, ServeState{Phase: ServeFailed, Err: listenError(listen, err)})
		return
	}
	addr := ln.Addr().String()
	s.report(r, ServeState{Phase: ServeStarting, Addr: addr})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	// The engine was warmed before Loaded (once per engine: this returns
	// at once); it is here so that ready always means warmed.
	if err := e.Warmup(ctx, engine.Request{Text: "Warm up.", Knobs: engine.DefaultKnobs(), MaxSeconds: 2}); err != nil && ctx.Err() == nil {
		s.opts.Log.Warn("warm-up failed; serving anyway", "err", err.Error())
	}
	if ctx.Err() == nil {
		srv.SetReady(true)
		s.report(r, ServeState{Phase: ServeServing, Addr: addr})
	}
	if err := <-served; err != nil {
		if ctx.Err() != nil {
			s.opts.Log.Warn("stopping the speech server", "err", err.Error())
			return
		}
		s.report(r, ServeState{Phase: ServeFailed, Err: fmt.Errorf("serving on %s: %w", addr, err)})
	}
}

// speakerModelOf finds the speaker model's files through the window's
// voice encoder, when it is the speaker model's (SpeakerEncoder): the
// server loads its own copy for voices made from uploaded clips.
func speakerModelOf(v VoiceEncoder) func() server.SpeakerModel {
	return func() server.SpeakerModel {
		enc, ok := v.(*SpeakerEncoder)
		if !ok || enc.Files == nil {
			return server.SpeakerModel{}
		}
		w, l, err := enc.Files()
		if err != nil {
			return server.SpeakerModel{}
		}
		return server.SpeakerModel{Weights: w, LDA: l}
	}
}

// listenError words a failure to listen; a port in use is the one a user
// meets (another zonos serve, or a second app).
func listenError(listen string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		_, port, _ := net.SplitHostPort(listen)
		return fmt.Errorf("port %s is in use by another program (another zonos serve?): stop it, then turn serving off and on again (%w)", port, err)
	}
	return fmt.Errorf("listening on %s: %w", listen, err)
}

// report sets r's state if r is still the current server.
func (s *Service) report(r *serveRun, st ServeState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == r {
		r.state = st
		s.changed()
	}
}

// exited records that r's goroutine has ended and its port is free.
func (s *Service) exited(r *serveRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.exited = true
	delete(s.stopping, r)
	close(r.done)
	s.changed()
}

// changed sends the state to OnState on a goroutine of its own (s.mu
// held), so no method calls back into its caller. Each call reads the
// state when its turn comes, so the last call made carries the current
// state whatever the order the goroutines run in.
func (s *Service) changed() {
	s.notes.Add(1)
	go func() {
		defer s.notes.Done()
		s.notifyMu.Lock()
		defer s.notifyMu.Unlock()
		s.opts.OnState(s.State())
	}()
}
