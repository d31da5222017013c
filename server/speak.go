package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"zonostream/audio/encode"
	"zonostream/engine"
)

// speakHTTP runs a plan and streams its audio as the response body: the
// status and headers go out with the first audio, so an error before any
// audio is still answered with its status; after that the body is ended
// where the stream ended, a valid (if truncated) file, and the trailer
// X-Zonos-Error says why.
func (s *Server) speakHTTP(w *logWriter, r *http.Request, who, endpoint string, p *plan, start time.Time) *apiError {
	w.voice = p.voice
	w.text = p.req.Text
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	untrack := s.track(func(err error) { cancel(err) })
	defer untrack()
	release, aerr := s.adm.admit(ctx, who, nil)
	if aerr != nil {
		if errors.Is(context.Cause(ctx), errShutdown) {
			return errShuttingDown()
		}
		return aerr
	}
	defer release()
	if aerr := s.prepare(ctx, p); aerr != nil {
		return aerr
	}
	st, err := s.eng.Synthesize(ctx, p.req)
	if err != nil {
		return badRequest("", "%v", err)
	}
	pm := newPump(st, int(s.cfg.Limits.MaxBufferedSeconds*engine.SampleRate), s.cfg.Limits.SlowClientTimeout, nil, s.observe)
	defer pm.wait()

	rc := http.NewResponseController(w)
	out := &deadlineWriter{w: w, rc: rc, timeout: s.cfg.Limits.SlowClientTimeout}
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }() // the connection may serve another request
	var enc encode.Encoder
	defer func() {
		if enc != nil {
			_ = enc.Close() // frees a codec's C state on every path (a second Close does nothing)
		}
	}()
	var body io.Writer = out
	var sse *sseBody
	if p.sse {
		sse = &sseBody{w: out}
		body = sse
	}
	finish := func(reason error) {
		if enc != nil {
			_ = enc.Close()
		}
		if sse != nil {
			_ = sse.done(reason)
		}
		if reason != nil {
			w.Header().Set("X-Zonos-Error", reason.Error())
		}
		_ = rc.Flush()
	}
	for {
		ev, ok := pm.next(ctx)
		if !ok {
			pm.abandon()
			switch {
			case pm.slowClient():
				w.outcome, w.reason = "slow_client", errSlowClient.Error()
			case errors.Is(context.Cause(ctx), errShutdown):
				w.outcome, w.reason = "cancelled", errShutdown.Error()
				finish(errShutdown)
			default:
				w.outcome, w.reason = "client_gone", "the client disconnected"
			}
			if enc == nil && w.outcome != "client_gone" {
				return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Message: w.reason, RetryAfter: time.Second}
			}
			return nil
		}
		switch ev.Kind {
		case engine.Audio:
			if enc == nil {
				if enc, err = s.startBody(w, body, p); err != nil {
					pm.abandon()
					return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
				}
			}
			err := enc.Write(ev.PCM)
			if err == nil && sse != nil {
				err = sse.event()
			}
			if err == nil {
				err = out.flush()
			}
			if err != nil && out.err == nil {
				pm.abandon()
				w.outcome, w.reason = "failed", "encoding: "+err.Error()
				return nil
			}
			if err != nil {
				err = out.err
				pm.abandon()
				if errors.Is(err, os.ErrDeadlineExceeded) {
					w.outcome, w.reason = "slow_client", errSlowClient.Error()
				} else {
					w.outcome, w.reason = "client_gone", "writing to the client: "+err.Error()
				}
				return nil
			}
			if w.ttfa == 0 {
				w.ttfa = time.Since(start)
				s.met.ttfa.WithLabelValues(endpoint).Observe(w.ttfa.Seconds())
			}
			w.audioSeconds += float64(len(ev.PCM)) / engine.SampleRate
			s.met.audioSecs.Add(float64(len(ev.PCM)) / engine.SampleRate)
		case engine.Done:
			if enc == nil { // no audio at all (the model ended at once)
				if enc, err = s.startBody(w, body, p); err != nil {
					return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
				}
			}
			w.Header().Set("X-Zonos-TTFA-Ms", strconv.FormatFloat(float64(ev.Metrics.TTFA.Microseconds())/1000, 'f', 2, 64))
			finish(nil)
			return nil
		case engine.Failed:
			if errors.Is(ev.Err, context.Canceled) {
				continue // the pump closes next; the cause is read there
			}
			if enc == nil {
				return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "generation_failed", Message: ev.Err.Error()}
			}
			w.outcome, w.reason = "failed", ev.Err.Error()
			finish(ev.Err)
			return nil
		}
	}
}

// startBody sends the status and headers and starts the encoder.
func (s *Server) startBody(w *logWriter, out io.Writer, p *plan) (encode.Encoder, error) {
	h := w.Header()
	h.Set("Content-Type", p.format.ContentType())
	if p.sse {
		h.Set("Content-Type", "text/event-stream")
	}
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Trailer", "X-Zonos-TTFA-Ms, X-Zonos-Error")
	h.Set("X-Zonos-Sample-Rate", strconv.Itoa(p.rate))
	// The encoder writes its file header as it starts, which sends the
	// status and headers with it.
	enc, err := encode.New(p.format, out, engine.SampleRate, p.opts)
	if err != nil {
		return nil, fmt.Errorf("starting the %s encoder: %w", p.format, err)
	}
	w.WriteHeader(http.StatusOK)
	return enc, nil
}

// observe feeds the engine's events to the metrics.
func (s *Server) observe(ev engine.Event) {
	switch ev.Kind {
	case engine.FrameDone:
		if ev.Step > 0 {
			s.met.step.Observe(ev.Step.Seconds())
		}
		s.met.rtf.Set(ev.Metrics.RTF)
	case engine.Done, engine.Failed:
		s.met.rtf.Set(0)
	}
}

// deadlineWriter writes the body, each piece within the slow-client
// timeout, and keeps the first write error (the client's side).
type deadlineWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	err     error
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	n, err := d.w.Write(b)
	if err != nil {
		d.err = err
	}
	return n, err
}

func (d *deadlineWriter) flush() error {
	if d.err != nil {
		return d.err
	}
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	if err := d.rc.Flush(); err != nil {
		d.err = err
	}
	return d.err
}
