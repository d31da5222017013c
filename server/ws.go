package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"zonostream/audio/encode"
	"zonostream/engine"
)

// The WebSocket protocol (GET /v1/tts/stream, subprotocol "zonos.v1"):
// the client's first message is {"type": "start", …} with any field of
// the native request (ttsRequest; format defaults to pcm: 16-bit
// little-endian at 44.1 kHz) and "end": true when its text is the whole
// text; else it sends text as it is produced:
// {"type": "append", "text": …}, {"type": "flush"} (speak what has come
// even without a sentence end), {"type": "end"} (no more text), and
// {"type": "cancel"} at any moment. The server sends JSON events —
// queued {position}, started {sample_rate, format}, first_audio
// {ttfa_ms}, part {index, start, end, text, first_sample}, frame {frame,
// step_ms} (when frame_events is set), notice {message}, done {metrics},
// cancelled, error {message, code} — and the audio as binary messages in
// order between them. One utterance per connection; the server closes it
// after done, cancelled or error.

// wsClient is one message from the client.
type wsClient struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// wsEvent is one JSON event to the client.
type wsEvent struct {
	Type           string  `json:"type"`
	Position       int     `json:"position,omitempty"`
	SampleRate     int     `json:"sample_rate,omitempty"`
	Format         string  `json:"format,omitempty"`
	Voice          string  `json:"voice,omitempty"`
	TTFAMs         float64 `json:"ttfa_ms,omitempty"`
	Index          *int    `json:"index,omitempty"`
	Start          *int    `json:"start,omitempty"`
	End            *int    `json:"end,omitempty"`
	Text           string  `json:"text,omitempty"`
	FirstSample    *int64  `json:"first_sample,omitempty"`
	ContextFrames  *int    `json:"context_frames,omitempty"`
	Frame          *int    `json:"frame,omitempty"`
	StepMs         float64 `json:"step_ms,omitempty"`
	Message        string  `json:"message,omitempty"`
	Code           string  `json:"code,omitempty"`
	AudioSeconds   float64 `json:"audio_seconds,omitempty"`
	Frames         int     `json:"frames,omitempty"`
	RTF            float64 `json:"rtf,omitempty"`
	Parts          int     `json:"parts,omitempty"`
	BoundaryP50Ms  float64 `json:"boundary_p50_ms,omitempty"`
	BoundaryMaxMs  float64 `json:"boundary_max_ms,omitempty"`
	StepP50Ms      float64 `json:"step_p50_ms,omitempty"`
	FrameLatP90Ms  float64 `json:"frame_latency_p90_ms,omitempty"`
	ElapsedSeconds float64 `json:"elapsed_seconds,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// wsStart is the first message: the native request's fields and type.
type wsStart struct {
	Type string `json:"type"`
	// End says the start's text is the whole text (as an end message
	// right after it would, but decided before the engine starts, so the
	// text is cut into parts as /v1/tts cuts it, whatever the timing).
	End bool `json:"end"`
	ttsRequest
}

func (s *Server) websocket(w http.ResponseWriter, r *http.Request, who string) *apiError {
	lw := w.(*logWriter)
	// guard has checked Origin against the allow-list already (a browser
	// on another origin never gets this far), so the library's own
	// same-origin check would only refuse the allowed ones.
	c, err := websocket.Accept(lw, r, &websocket.AcceptOptions{Subprotocols: []string{"zonos.v1"}, InsecureSkipVerify: true})
	if err != nil {
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "WebSocket handshake: " + err.Error()}
	}
	c.SetReadLimit(s.ttsBodyLimit())
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	// Tracked from the handshake to the close frame, so a shutdown waits
	// for the frame that says how the stream ended.
	untrack := s.track(func(err error) { cancel(err) })
	defer untrack()
	ws := &wsConn{s: s, c: c, lw: lw, who: who, timeout: s.cfg.Limits.SlowClientTimeout}
	code, reason := ws.serve(r.Context(), ctx, cancel)
	lw.outcome, lw.reason = ws.outcome, reason
	_ = c.Close(code, truncateReason(reason))
	return nil
}

type wsConn struct {
	s       *Server
	c       *websocket.Conn
	lw      *logWriter
	who     string
	timeout time.Duration
	outcome string
}

func (ws *wsConn) send(ctx context.Context, ev wsEvent) error {
	b, _ := json.Marshal(ev)
	return ws.write(ctx, websocket.MessageText, b)
}

func (ws *wsConn) write(ctx context.Context, typ websocket.MessageType, b []byte) error {
	ctx, cancel := context.WithTimeout(ctx, ws.timeout)
	defer cancel()
	return ws.c.Write(ctx, typ, b)
}

// fail sends an error event and says how to close.
func (ws *wsConn) fail(ctx context.Context, outcome, code, msg string, status websocket.StatusCode) (websocket.StatusCode, string) {
	ws.outcome = outcome
	_ = ws.send(ctx, wsEvent{Type: "error", Code: code, Message: msg})
	return status, msg
}

// serve runs one utterance: rctx is the connection's (events are written
// under it), ctx the utterance's, which cancel ends (the client's cancel,
// a mistake, the shutdown).
func (ws *wsConn) serve(rctx, ctx context.Context, cancel context.CancelCauseFunc) (websocket.StatusCode, string) {
	start := time.Now()
	ws.outcome = "ok"
	doneReading, aerr := ws.s.tryRead()
	if aerr != nil {
		return ws.refuse(rctx, aerr)
	}
	readCtx, cancelRead := context.WithTimeout(rctx, ws.s.cfg.Limits.TextIdleTimeout)
	typ, data, err := ws.c.Read(readCtx)
	cancelRead()
	doneReading()
	if err != nil {
		ws.outcome = "client_gone"
		return websocket.StatusNormalClosure, "no start message: " + err.Error()
	}
	if typ != websocket.MessageText {
		return ws.fail(rctx, "bad_request", "bad_message", "the first message must be a JSON start message", websocket.StatusUnsupportedData)
	}
	var st wsStart
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		aerr := jsonError(err, ws.s.ttsBodyLimit())
		return ws.fail(rctx, "bad_request", "bad_message", aerr.Message, websocket.StatusPolicyViolation)
	}
	if st.Type != "start" {
		return ws.fail(rctx, "bad_request", "bad_message", fmt.Sprintf("the first message must have type \"start\", not %q", st.Type), websocket.StatusPolicyViolation)
	}
	if st.Format == "" {
		st.Format = string(encode.PCM)
	}
	initial := st.Text
	if strings.TrimSpace(st.Text) == "" {
		// The text is yet to come: the request is checked with a word in
		// its place (language, knobs, limits), so a mistake is refused now,
		// not after the wait for the engine.
		st.Text = "Hello."
	}
	p, aerr := ws.s.planTTS(&st.ttsRequest, true)
	if aerr != nil {
		return ws.refuse(rctx, aerr)
	}
	p.req.Text = ""
	ws.lw.voice = p.voice
	feed := engine.NewTextFeed()
	p.req.Feed = feed
	if initial != "" {
		if err := feed.Append(initial); err != nil {
			return ws.fail(rctx, "bad_request", "invalid_request", err.Error(), websocket.StatusPolicyViolation)
		}
	}
	if st.End {
		if strings.TrimSpace(initial) == "" {
			return ws.fail(rctx, "bad_request", "invalid_request", "end is set but the start gives no text", websocket.StatusPolicyViolation)
		}
		if err := feed.End(); err != nil {
			return ws.fail(rctx, "bad_request", "invalid_request", err.Error(), websocket.StatusPolicyViolation)
		}
	}

	// The client's messages are read throughout: text goes to the feed,
	// cancel ends the utterance, a closed connection ends it too.
	go ws.readClient(feed, cancel, len(initial))

	positions := make(chan int, 1)
	admitted := make(chan struct{})
	told := make(chan struct{})
	go func() {
		defer close(told)
		for {
			select {
			case <-admitted:
				return
			case n := <-positions:
				select {
				case <-admitted: // a place that no longer holds
					return
				default:
				}
				_ = ws.send(rctx, wsEvent{Type: "queued", Position: n})
			}
		}
	}()
	release, aerr := ws.s.adm.admit(ctx, ws.who, func(n int) {
		select {
		case positions <- n:
		default:
			select {
			case <-positions:
			default:
			}
			positions <- n
		}
	})
	close(admitted)
	<-told // no queued event after this point
	if aerr != nil {
		return ws.ended(ctx, rctx, aerr)
	}
	defer release()
	if aerr := ws.s.prepare(ctx, p); aerr != nil {
		return ws.ended(ctx, rctx, aerr)
	}
	stream, err := ws.s.eng.Synthesize(ctx, p.req)
	if err != nil {
		return ws.ended(ctx, rctx, badRequest("", "%v", err))
	}
	keep := func(k engine.EventKind) bool {
		return k == engine.PartStart || k == engine.Notice || (k == engine.FrameDone && st.FrameEvents)
	}
	pm := newPump(stream, int(ws.s.cfg.Limits.MaxBufferedSeconds*engine.SampleRate), ws.timeout, keep, ws.s.observe)
	defer pm.wait()
	var buf bytes.Buffer
	enc, err := encode.New(p.format, &buf, engine.SampleRate, p.opts)
	if err != nil {
		pm.abandon()
		return ws.fail(rctx, "failed", "server_error", err.Error(), websocket.StatusInternalError)
	}
	defer enc.Close()
	if err := ws.send(rctx, wsEvent{Type: "started", SampleRate: enc.Rate(), Format: string(p.format), Voice: p.voice}); err != nil {
		pm.abandon()
		return ws.gone(err)
	}
	sendAudio := func() error {
		if buf.Len() == 0 {
			return nil
		}
		err := ws.write(rctx, websocket.MessageBinary, buf.Bytes())
		buf.Reset()
		return err
	}
	first := true
	for {
		ev, ok := pm.next(ctx)
		if !ok {
			pm.abandon()
			if pm.slowClient() {
				return ws.fail(rctx, "slow_client", "slow_client", errSlowClient.Error(), websocket.StatusPolicyViolation)
			}
			return ws.ended(ctx, rctx, nil)
		}
		var out *wsEvent
		switch ev.Kind {
		case engine.Audio:
			if err := enc.Write(ev.PCM); err != nil {
				pm.abandon()
				return ws.fail(rctx, "failed", "server_error", "encoding: "+err.Error(), websocket.StatusInternalError)
			}
			if err := sendAudio(); err != nil {
				pm.abandon()
				return ws.gone(err)
			}
			ws.lw.audioSeconds += float64(len(ev.PCM)) / engine.SampleRate
			ws.s.met.audioSecs.Add(float64(len(ev.PCM)) / engine.SampleRate)
			if first {
				first = false
				ws.lw.ttfa = time.Since(start)
				ws.s.met.ttfa.WithLabelValues("ws").Observe(ws.lw.ttfa.Seconds())
				out = &wsEvent{Type: "first_audio", TTFAMs: ms(ev.Metrics.TTFA)}
			}
		case engine.PartStart:
			pt := ev.Part
			out = &wsEvent{Type: "part", Index: &pt.Index, Start: &pt.Start, End: &pt.End, Text: pt.Text, FirstSample: &pt.FirstSample, ContextFrames: &pt.ContextFrames}
		case engine.FrameDone:
			f := ev.Frame
			out = &wsEvent{Type: "frame", Frame: &f, StepMs: ms(ev.Step)}
		case engine.Notice:
			out = &wsEvent{Type: "notice", Message: ev.Message}
		case engine.Done:
			if err := enc.Close(); err == nil {
				_ = sendAudio()
			}
			m := ev.Metrics
			_ = ws.send(rctx, wsEvent{Type: "done", TTFAMs: ms(m.TTFA), AudioSeconds: m.AudioSeconds, Frames: m.Frames, RTF: m.RTF, Parts: m.Parts,
				BoundaryP50Ms: ms(m.BoundaryP50), BoundaryMaxMs: ms(m.BoundaryMax), StepP50Ms: ms(m.StepP50), FrameLatP90Ms: ms(m.FrameLatencyP90), ElapsedSeconds: m.Elapsed.Seconds()})
			return websocket.StatusNormalClosure, "done"
		case engine.Failed:
			if errors.Is(ev.Err, context.Canceled) {
				continue // the cause is read once the pump closes
			}
			if err := enc.Close(); err == nil {
				_ = sendAudio()
			}
			return ws.fail(rctx, "failed", "generation_failed", ev.Err.Error(), websocket.StatusInternalError)
		}
		if out != nil {
			if err := ws.send(rctx, *out); err != nil {
				pm.abandon()
				return ws.gone(err)
			}
		}
	}
}

// ended says how a stream that stopped early ends: cancelled by the
// client, the server shutting down, the client gone, or refused.
func (ws *wsConn) ended(ctx, rctx context.Context, aerr *apiError) (websocket.StatusCode, string) {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errCancelled):
		ws.outcome = "cancelled"
		_ = ws.send(rctx, wsEvent{Type: "cancelled"})
		return websocket.StatusNormalClosure, "cancelled"
	case errors.Is(cause, errShutdown):
		return ws.fail(rctx, "cancelled", "shutting_down", errShutdown.Error(), websocket.StatusGoingAway)
	case cause != nil && !errors.Is(cause, errCancelled):
		var ce *clientError
		if errors.As(cause, &ce) {
			return ws.fail(rctx, "bad_request", ce.code, ce.msg, websocket.StatusPolicyViolation)
		}
		ws.outcome = "client_gone"
		return websocket.StatusNormalClosure, "the client went away"
	}
	if aerr != nil {
		return ws.refuse(rctx, aerr)
	}
	ws.outcome = "client_gone"
	return websocket.StatusNormalClosure, "the client went away"
}

// refuse ends the stream with a refusal's code and message, closing as
// its status says: a mistake 1008 (policy), busy or shutting down 1013
// (try again later), the server's failure 1011.
func (ws *wsConn) refuse(rctx context.Context, aerr *apiError) (websocket.StatusCode, string) {
	code := aerr.Code
	if code == "" {
		code = strings.ToLower(strings.ReplaceAll(http.StatusText(aerr.Status), " ", "_"))
	}
	status := websocket.StatusPolicyViolation
	switch {
	case aerr.Status == http.StatusTooManyRequests || aerr.Status == http.StatusServiceUnavailable:
		status = websocket.StatusTryAgainLater
	case aerr.Status >= 500:
		status = websocket.StatusInternalError
	}
	return ws.fail(rctx, aerr.outcome(), code, aerr.Message, status)
}

func (ws *wsConn) gone(err error) (websocket.StatusCode, string) {
	if errors.Is(err, context.DeadlineExceeded) {
		ws.outcome = "slow_client"
		return websocket.StatusPolicyViolation, errSlowClient.Error()
	}
	ws.outcome = "client_gone"
	return websocket.StatusNormalClosure, "writing to the client: " + err.Error()
}

// errCancelled is the client's cancel message.
var errCancelled = errors.New("cancelled by the client")

// clientError is a protocol mistake by the client, which ends the stream.
type clientError struct{ code, msg string }

func (e *clientError) Error() string { return e.msg }

// readClient reads the client's messages into feed until the connection
// closes. A mistake, a cancel, or no message for the text idle timeout
// before end ends the utterance through cancel. The reads are not given
// a deadline: the WebSocket library closes a connection whose read is
// cancelled, and the events of the end must still reach the client.
func (ws *wsConn) readClient(feed *engine.TextFeed, cancel context.CancelCauseFunc, total int) {
	idle := ws.s.cfg.Limits.TextIdleTimeout
	limit := ws.s.cfg.Limits.MaxTextBytes
	timer := time.AfterFunc(idle, func() {
		cancel(&clientError{"text_timeout", fmt.Sprintf("no text arrived for %s; send {\"type\": \"end\"} when the text is complete", idle)})
	})
	defer timer.Stop()
	for {
		typ, data, err := ws.c.Read(context.Background())
		if err != nil {
			cancel(err)
			return
		}
		if typ != websocket.MessageText {
			cancel(&clientError{"bad_message", "send text messages of JSON, not binary"})
			return
		}
		var m wsClient
		if err := json.Unmarshal(data, &m); err != nil {
			cancel(&clientError{"bad_message", "a message is not JSON: " + err.Error()})
			return
		}
		timer.Reset(idle)
		switch m.Type {
		case "append":
			if total += len(m.Text); total > limit {
				cancel(&clientError{"text_too_long", fmt.Sprintf("the text sent reached %d bytes, over this server's %d-byte limit for one stream", total, limit)})
				return
			}
			err = feed.Append(m.Text)
		case "flush":
			err = feed.Flush()
		case "end": // again after start's end: nothing more to do
			err = feed.End()
			timer.Stop()
		case "cancel":
			cancel(errCancelled)
			return
		default:
			err = fmt.Errorf("unknown message type %q (want append, flush, end or cancel)", m.Type)
		}
		if err != nil {
			cancel(&clientError{"bad_message", err.Error()})
			return
		}
	}
}

// truncateReason fits a close reason into a control frame (123 bytes).
func truncateReason(s string) string {
	if len(s) <= 120 {
		return s
	}
	s = s[:120]
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0xC0 {
		s = s[:len(s)-1]
	}
	return s
}
