package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// wsEvent is the part of the WebSocket's JSON events a stream reads.
type wsEvent struct {
	Type       string  `json:"type"`
	SampleRate int     `json:"sample_rate"`
	TTFAMs     float64 `json:"ttfa_ms"`
	Code       string  `json:"code"`
	Message    string  `json:"message"`
}

// wsCodeStatus is the HTTP status of a refusal the WebSocket reports as
// an error event's code (the server's admission and reading limits), so
// that both protocols count refusals alike.
var wsCodeStatus = map[string]int{
	"queue_full":       http.StatusServiceUnavailable,
	"busy":             http.StatusServiceUnavailable,
	"shutting_down":    http.StatusServiceUnavailable,
	"too_many_streams": http.StatusTooManyRequests,
	"bad_message":      http.StatusBadRequest,
	"invalid_request":  http.StatusBadRequest,
	"bad_request":      http.StatusBadRequest,
}

// wsStatus is the HTTP status of an error event's code (500 for a code
// that names no refusal).
func wsStatus(code string) int {
	if status, ok := wsCodeStatus[code]; ok {
		return status
	}
	return http.StatusInternalServerError
}

// streamWS runs s over the WebSocket: the start message with the whole
// text, end at once, then the events and binary audio until the server
// closes; keep holds the audio in s. The client's time to first audio
// counts from the handshake, since every utterance opens a connection.
func (c *client) streamWS(ctx context.Context, s *Stream, keep bool) error {
	u := "ws" + strings.TrimPrefix(c.o.URL, "http") + "/v1/tts/stream"
	h := http.Header{}
	c.authorize(h)
	sent := time.Now()
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{Subprotocols: []string{"zonos.v1"}, HTTPHeader: h, HTTPClient: c.http})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			var data []byte
			if resp.Body != nil {
				data, _ = io.ReadAll(resp.Body)
			}
			code, msg := apiError(data)
			s.Message = msg
			s.Error, err = refusal(resp.StatusCode, code, msg)
			return err
		}
		s.Error, s.Message = errConnection, err.Error()
		return nil
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	start := c.request(s)
	start.Type, start.End = "start", true
	data, _ := json.Marshal(start)
	if err := conn.Write(ctx, websocket.MessageText, data); err != nil {
		s.Error, s.Message = errConnection, "sending the text: "+err.Error()
		return nil
	}
	s.SampleRate = engineRate // the WebSocket's pcm, until started says
	rc := newReceiver(s, sent, c.o.PreRoll, keep)
	defer rc.end()
	done := false
	for {
		typ, data, err := conn.Read(ctx)
		now := time.Now()
		if err != nil {
			if !done && s.Error == "" {
				s.Error, s.Message = errTruncated, "the connection closed before done: "+err.Error()
			}
			break
		}
		if typ == websocket.MessageBinary {
			rc.audio(now, data)
			continue
		}
		var ev wsEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			s.Error, s.Message = errTruncated, fmt.Sprintf("an event is not JSON (%v): %.80q", err, data)
			break
		}
		switch ev.Type {
		case "started":
			if ev.SampleRate > 0 {
				s.SampleRate = ev.SampleRate
			}
		case "first_audio":
			s.EngineTTFAMs = ev.TTFAMs
		case "done":
			done = true
			if s.EngineTTFAMs == 0 {
				s.EngineTTFAMs = ev.TTFAMs
			}
		case "error":
			s.Message = ev.Message
			if s.AudioBytes > 0 {
				s.Error = errTruncated
			} else if s.Error, err = refusal(wsStatus(ev.Code), ev.Code, ev.Message); err != nil {
				return err
			}
		case "cancelled":
			s.Error, s.Message = errTruncated, "the server cancelled the stream"
		}
	}
	return nil
}
