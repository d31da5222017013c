package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"zonostream/engine"
	"zonostream/internal/voices"
)

// Server serves one loaded engine.
type Server struct {
	cfg      Config
	eng      *engine.Engine
	lib      *voices.Library
	speaker  SpeakerModel
	keys     [][sha256.Size]byte
	loopback bool
	adm      *admission
	met      *metrics
	mux      *http.ServeMux
	ready    atomic.Bool
	// seed picks the seed of a request that names none (random; tests pin it).
	seed func() uint64
	// streams are the cancels of the requests that wait for or hold the
	// engine, ended at shutdown once the grace period is over (ending
	// set); idle is signalled each time one leaves.
	mu      sync.Mutex
	streams map[*streamEntry]struct{}
	ending  bool
	idle    *sync.Cond
	// reading bounds the requests whose bodies are being read and the
	// WebSocket connections that have not started (tryRead).
	reading chan struct{}
}

type streamEntry struct{ end func(error) }

// New makes a server for e, with lib as its voice library (nil: none)
// and sp the speaker model for voices made from uploaded clips. The
// engine should be warmed (engine.Warmup) before the server is marked
// ready with SetReady; until then /readyz answers 503.
func New(e *engine.Engine, lib *voices.Library, sp SpeakerModel, cfg Config) (*Server, error) {
	cfg.APIKeys = append([]string(nil), cfg.APIKeys...)
	cfg.AllowOrigins = append([]string(nil), cfg.AllowOrigins...)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(cfg.Listen)
	s := &Server{cfg: cfg, eng: e, lib: lib, speaker: sp, keys: hashKeys(cfg.APIKeys), loopback: isLoopbackHost(host),
		streams: map[*streamEntry]struct{}{}, seed: rand.Uint64, reading: make(chan struct{}, cfg.Limits.MaxQueue+1)}
	s.idle = sync.NewCond(&s.mu)
	mem, _ := e.Backend().(memoryReporter)
	s.met = newMetrics(func() float64 { return float64(s.adm.capacity()) }, e.Capacity(), mem)
	s.adm = newAdmission(e.Capacity(), cfg.Limits.MaxQueue, cfg.Limits.MaxStreamsPerKey, func(running, queued int) {
		s.met.active.Set(float64(running))
		s.met.queued.Set(float64(queued))
	})
	s.routes()
	return s, nil
}

// SetReady marks the model loaded and warmed (or not): /readyz follows.
func (s *Server) SetReady(ok bool) { s.ready.Store(ok) }

// Handler is the server's HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.mux }

// endpoint is a handler that answers an error by returning it.
type endpoint func(w http.ResponseWriter, r *http.Request, who string) *apiError

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	type route struct {
		methods []string
		name    string
		public  bool
	}
	paths := map[string]*route{}
	var order []string
	api := func(pattern, name string, h endpoint, public bool) {
		if method, path, ok := strings.Cut(pattern, " "); ok {
			if paths[path] == nil {
				paths[path] = &route{name: name, public: public}
				order = append(order, path)
			}
			paths[path].methods = append(paths[path].methods, method)
		}
		s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			lw := &logWriter{ResponseWriter: w}
			var who string
			var ok bool
			who, ok = s.guard(lw, r, !public)
			outcome := "ok"
			if !ok {
				outcome = statusOutcome(lw.status)
			} else if aerr := h(lw, r, who); aerr != nil {
				outcome = aerr.outcome()
				if aerr.Status == 499 {
					outcome = "client_gone"
				} else if !lw.wrote {
					writeError(lw, aerr)
				}
				lw.reason = aerr.Message
			} else if lw.outcome != "" {
				outcome = lw.outcome
			}
			s.met.requests.WithLabelValues(name, outcome).Inc()
			s.logRequest(r, lw, name, who, outcome, time.Since(start))
		})
	}
	api("POST /v1/audio/speech", "speech", s.speech, false)
	api("POST /v1/tts", "tts", s.tts, false)
	api("GET /v1/tts/stream", "ws", s.websocket, false)
	api("GET /v1/voices", "voices", func(w http.ResponseWriter, r *http.Request, _ string) *apiError { return s.listVoices(w, r) }, false)
	api("POST /v1/voices", "voices", s.addVoice, false)
	api("DELETE /v1/voices/{name}", "voices", func(w http.ResponseWriter, r *http.Request, _ string) *apiError { return s.removeVoice(w, r) }, false)
	api("GET /v1/models", "models", s.models, false)
	api("GET /healthz", "healthz", func(w http.ResponseWriter, r *http.Request, _ string) *apiError {
		writeJSON(w, http.StatusOK, map[string]string{"status": "alive"})
		return nil
	}, true)
	api("GET /readyz", "readyz", s.readyz, true)
	metricsHandler := promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{})
	api("GET /metrics", "metrics", func(w http.ResponseWriter, r *http.Request, _ string) *apiError {
		metricsHandler.ServeHTTP(w, r)
		return nil
	}, true)
	api("GET /{$}", "page", s.page, true)
	// Everything else: a CORS preflight reaches guard, which answers it
	// for an allowed origin (or refuses it); another method on an
	// endpoint's path is a 405 naming the ones it takes; any other
	// request names no endpoint.
	preflight := &apiError{Status: http.StatusForbidden, Type: "forbidden", Message: "cross-origin requests need an Origin on the allow-list"}
	for _, path := range order {
		rt := paths[path]
		allow := strings.Join(rt.methods, ", ")
		api(path, rt.name, func(w http.ResponseWriter, r *http.Request, _ string) *apiError {
			if r.Method == http.MethodOptions {
				return preflight
			}
			w.Header().Set("Allow", allow)
			return &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
				Message: fmt.Sprintf("%s takes %s, not %s", r.URL.Path, allow, r.Method)}
		}, rt.public)
	}
	api("/", "unknown", func(w http.ResponseWriter, r *http.Request, _ string) *apiError {
		if r.Method == http.MethodOptions {
			return preflight
		}
		return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("no endpoint %s %s; the endpoints are listed on the page at /", r.Method, r.URL.Path)}
	}, false)
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ string) *apiError {
	running, queued := s.adm.load()
	body := map[string]any{"ready": s.ready.Load(), "active_streams": running, "queued": queued, "capacity": s.adm.capacity(),
		"engine_slots": s.adm.slots, "free_slots": s.adm.slots - running,
		"backend": s.eng.Backend().Name(), "device": s.eng.Backend().Device(), "model": string(s.eng.Variant())}
	status := http.StatusOK
	switch {
	case !s.ready.Load():
		status, body["reason"] = http.StatusServiceUnavailable, "the model is loading or warming up"
	case s.adm.capacity() == 0:
		status, body["reason"] = http.StatusServiceUnavailable, "no capacity left: the engine is busy and the queue is full"
	}
	writeJSON(w, status, body)
	return nil
}

// models answers GET /v1/models as OpenAI's API does, naming the loaded
// model (clients list models before they speak).
func (s *Server) models(w http.ResponseWriter, r *http.Request, _ string) *apiError {
	id := "zonos-" + string(s.eng.Variant())
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{
		{"id": id, "object": "model", "owned_by": "zyphra", "created": 0},
	}})
	return nil
}

// track registers a request that will wait for or hold the engine, so a
// shutdown can end it; the returned function unregisters it. One that
// arrives after the grace period of a shutdown is ended at once.
func (s *Server) track(end func(error)) func() {
	e := &streamEntry{end: end}
	s.mu.Lock()
	s.streams[e] = struct{}{}
	ending := s.ending
	s.mu.Unlock()
	if ending {
		end(errShutdown)
	}
	return func() {
		s.mu.Lock()
		delete(s.streams, e)
		s.idle.Broadcast()
		s.mu.Unlock()
	}
}

// tryRead takes a place among the requests being read, or answers 503:
// a body (up to the native request's clips) is held whole while it is
// parsed, before admission counts it, so their number is bounded too.
func (s *Server) tryRead() (func(), *apiError) {
	select {
	case s.reading <- struct{}{}:
		return func() { <-s.reading }, nil
	default:
		return nil, &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "busy",
			Message: fmt.Sprintf("%d requests are being read already; retry later", cap(s.reading)), RetryAfter: time.Second}
	}
}

// untilIdle is closed once no tracked request is left.
func (s *Server) untilIdle() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		s.mu.Lock()
		for len(s.streams) > 0 {
			s.idle.Wait()
		}
		s.mu.Unlock()
		close(ch)
	}()
	return ch
}

// errShutdown ends the streams still running when the grace period of a
// shutdown is over.
var errShutdown = errors.New("the server is shutting down")

// endStreamsWithin is how long streams ended by a shutdown have to write
// their end (an encoder's last bytes, a WebSocket's error event).
const endStreamsWithin = 5 * time.Second

// Serve answers on ln until ctx ends, then shuts down gracefully: it stops
// accepting and refuses new streams at once (readyz turns 503), lets
// running streams finish for Config.ShutdownGrace, then ends the rest
// (an HTTP body is ended where it is, still a valid file; a WebSocket
// gets an error event) and returns once every handler has returned, so
// the caller can free the engine.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// The listener decides what is reachable, whatever Config.Listen said.
	if host, _, err := net.SplitHostPort(ln.Addr().String()); err == nil && !isLoopbackHost(host) {
		if len(s.keys) == 0 {
			ln.Close()
			return fmt.Errorf("listening on %s reaches beyond this computer: give an API key", ln.Addr())
		}
		s.loopback = false
	}
	hs := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		MaxHeaderBytes: 64 << 10, BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.ready.Store(false)
	s.adm.close() // new and queued requests are refused from now on
	grace, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	// The HTTP server waits past the grace period for the streams ended
	// at its close to write their last bytes, then closes what is left.
	closing, cancelClosing := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace+endStreamsWithin)
	defer cancelClosing()
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(closing) }()
	select {
	case <-s.untilIdle():
	case <-grace.Done():
		s.mu.Lock()
		s.ending = true
		for e := range s.streams {
			e.end(errShutdown)
		}
		s.mu.Unlock()
		<-s.untilIdle()
	}
	// Whatever holds the engine without a stream (a clip being embedded)
	// is let go by its request's context when its connection closes.
	<-s.adm.idle()
	err := <-shut
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	if err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}
