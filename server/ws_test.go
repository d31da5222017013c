package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"zonostream/engine"
)

// wsDial opens the WebSocket endpoint.
func wsDial(t *testing.T, ts *testServer, hdr http.Header) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, strings.Replace(ts.url, "http:", "ws:", 1)+"/v1/tts/stream",
		&websocket.DialOptions{Subprotocols: []string{"zonos.v1"}, HTTPHeader: hdr})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (status %d)", err, status)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func wsSend(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	data, _ := json.Marshal(v)
	if err := c.Write(context.Background(), websocket.MessageText, data); err != nil {
		t.Fatal(err)
	}
}

// wsResult is what a client heard: events in order and the audio.
type wsResult struct {
	events []wsEvent
	pcm    []int16
	// audioBefore[i] is how many samples had arrived before event i.
	audioBefore []int
	closeErr    error
}

func (r *wsResult) kinds() []string {
	var k []string
	for _, e := range r.events {
		if e.Type != "frame" {
			k = append(k, e.Type)
		}
	}
	return k
}

func (r *wsResult) find(typ string) (wsEvent, bool) {
	for _, e := range r.events {
		if e.Type == typ {
			return e, true
		}
	}
	return wsEvent{}, false
}

// wsRead reads until the server closes the connection; onEvent may act
// on each event (send more text, cancel).
func wsRead(t *testing.T, c *websocket.Conn, onEvent func(wsEvent)) *wsResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := &wsResult{}
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			r.closeErr = err
			return r
		}
		if typ == websocket.MessageBinary {
			r.pcm = append(r.pcm, pcm16(t, data)...)
			continue
		}
		var ev wsEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		r.events = append(r.events, ev)
		r.audioBefore = append(r.audioBefore, len(r.pcm))
		if onEvent != nil {
			onEvent(ev)
		}
	}
}

// TestWebSocketFeedsTextAndStreamsAudio: text sent in pieces as it is
// "produced" is spoken; the events come in order (started, part, first
// audio, frames, done) with the audio between them, and the audio equals
// the same text spoken alone through a feed.
func TestWebSocketFeedsTextAndStreamsAudio(t *testing.T) {
	e := tinyEngine(t)
	ts := serve(t, e, Config{})
	c := wsDial(t, ts, nil)
	// Text by arrival is cut by arrival: parts of 20 phonemes hold one of
	// these sentences (14 and 15 phoneme ids) but not both, so the parts
	// are the same however the pieces and the engine's start interleave.
	wsSend(t, c, map[string]any{"type": "start", "seed": 5, "frame_events": true, "text": "Hello the", "part_phonemes": 20})
	wsSend(t, c, map[string]any{"type": "append", "text": "re. How are"})
	wsSend(t, c, map[string]any{"type": "append", "text": " you?"})
	wsSend(t, c, map[string]any{"type": "end"})
	r := wsRead(t, c, nil)
	if websocket.CloseStatus(r.closeErr) != websocket.StatusNormalClosure {
		t.Fatalf("closed with %v; events %v", r.closeErr, r.kinds())
	}
	k := r.kinds()
	if k[0] != "started" || k[len(k)-1] != "done" {
		t.Fatalf("events %v: want started first and done last", k)
	}
	st, _ := r.find("started")
	if st.SampleRate != engine.SampleRate || st.Format != "pcm" {
		t.Errorf("started %+v: want pcm at 44100", st)
	}
	fa, ok := r.find("first_audio")
	if !ok || fa.TTFAMs <= 0 {
		t.Errorf("first_audio %+v", fa)
	}
	parts := 0
	frames := 0
	for _, ev := range r.events {
		switch ev.Type {
		case "part":
			parts++
		case "frame":
			frames++
		}
	}
	done, _ := r.find("done")
	if parts != 2 || parts != done.Parts || frames != done.Frames || frames == 0 {
		t.Errorf("%d part events, %d frame events; done says %d parts, %d frames", parts, frames, done.Parts, done.Frames)
	}

	feed := engine.NewTextFeed()
	for _, s := range []string{"Hello the", "re. How are", " you?"} {
		if err := feed.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	feed.End()
	want := alone(t, e, engine.Request{Feed: feed, Knobs: engine.DefaultKnobs(), Seed: 5, MaxSeconds: 0.5, PhonemeBudget: 20, DiscardCodes: true})
	if !equal16(r.pcm, want) {
		t.Fatalf("%d samples over the WebSocket, %d alone: not equal", len(r.pcm), len(want))
	}
}

// TestWebSocketCancel: a cancel while audio streams stops generation at
// once: a "cancelled" event, a normal close, and the engine free for the
// next request.
func TestWebSocketCancel(t *testing.T) {
	ts := serve(t, tinyEngine(t), Config{Limits: Limits{MaxSeconds: 20}})
	c := wsDial(t, ts, nil)
	wsSend(t, c, map[string]any{"type": "start", "text": strings.Repeat("This sentence goes on for a while. ", 20)})
	wsSend(t, c, map[string]any{"type": "end"})
	sent := false
	r := wsRead(t, c, func(ev wsEvent) {
		if ev.Type == "first_audio" && !sent {
			sent = true
			wsSend(t, c, map[string]any{"type": "cancel"})
		}
	})
	k := r.kinds()
	if k[len(k)-1] != "cancelled" {
		t.Fatalf("events %v: want cancelled last", k)
	}
	if r.audioBefore[len(r.audioBefore)-1] > 20*engine.SampleRate {
		t.Errorf("%d samples before the cancel took: generation did not stop", len(r.pcm))
	}
	ts.servesNext(t, "next request")
	if n := metricValue(t, ts, `zonos_requests_total{endpoint="ws",outcome="cancelled"}`); n != 1 {
		t.Errorf("cancelled streams metric %g, want 1", n)
	}
}

// TestWebSocketProtocolMistakes: a wrong first message, an unknown field,
// a binary message, an unknown message type, and silence each end the
// stream with an error event naming the problem.
func TestWebSocketProtocolMistakes(t *testing.T) {
	ts := serve(t, tinyEngine(t), Config{Limits: Limits{TextIdleTimeout: 300 * time.Millisecond, MaxTextBytes: 64}})
	cases := []struct {
		name string
		send func(c *websocket.Conn)
		says string
	}{
		{"not-start", func(c *websocket.Conn) { wsSend(t, c, map[string]any{"type": "append", "text": "x"}) }, `type "start"`},
		{"unknown-field", func(c *websocket.Conn) { wsSend(t, c, map[string]any{"type": "start", "pitch": 3}) }, "pitch"},
		{"bad-knob", func(c *websocket.Conn) { wsSend(t, c, map[string]any{"type": "start", "voice": "nobody"}) }, "nobody"},
		{"binary", func(c *websocket.Conn) {
			wsSend(t, c, map[string]any{"type": "start"})
			_ = c.Write(context.Background(), websocket.MessageBinary, []byte{1, 2})
		}, "binary"},
		{"unknown-type", func(c *websocket.Conn) {
			wsSend(t, c, map[string]any{"type": "start"})
			wsSend(t, c, map[string]any{"type": "speak"})
		}, `"speak"`},
		{"bad-language", func(c *websocket.Conn) { wsSend(t, c, map[string]any{"type": "start", "language": "xx-nope"}) }, "xx-nope"},
		{"too-much-text", func(c *websocket.Conn) {
			wsSend(t, c, map[string]any{"type": "start", "text": strings.Repeat("a", 40)})
			wsSend(t, c, map[string]any{"type": "append", "text": strings.Repeat("b", 40)})
		}, "64-byte limit"},
		{"silence", func(c *websocket.Conn) { wsSend(t, c, map[string]any{"type": "start", "text": "Waiting"}) }, "no text arrived"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := wsDial(t, ts, nil)
			tc.send(c)
			r := wsRead(t, c, nil)
			ev, ok := r.find("error")
			if !ok {
				t.Fatalf("events %v, close %v: want an error event", r.kinds(), r.closeErr)
			}
			if !strings.Contains(ev.Message, tc.says) {
				t.Errorf("error %q does not say %q", ev.Message, tc.says)
			}
			if websocket.CloseStatus(r.closeErr) == websocket.StatusNormalClosure {
				t.Errorf("closed normally after an error")
			}
		})
	}
}

// TestWebSocketClientGone: a client that disconnects mid-stream has its
// generation stopped at once; the server serves the next request.
func TestWebSocketClientGone(t *testing.T) {
	ts := serve(t, tinyEngine(t), Config{Limits: Limits{MaxSeconds: 20}})
	c := wsDial(t, ts, nil)
	wsSend(t, c, map[string]any{"type": "start", "text": strings.Repeat("A long sentence to speak now. ", 20)})
	wsSend(t, c, map[string]any{"type": "end"})
	ctx := context.Background()
	for {
		typ, _, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if typ == websocket.MessageBinary {
			break
		}
	}
	c.CloseNow()
	waitFor(t, func() bool {
		return metricValue(t, ts, `zonos_requests_total{endpoint="ws",outcome="client_gone"}`) == 1
	})
	if running, _ := ts.adm.load(); running != 0 {
		t.Fatalf("%d streams still hold the engine after the client left", running)
	}
	ts.servesNext(t, "next request")
}

// waitFor polls cond (bounded by count, not asserting a time).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 600; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("condition never became true")
}

// TestWebSocketWholeTextInStart: a start with "end": true speaks its text
// as /v1/tts does — cut into the same parts whatever the timing — so the
// audio equals the same request alone with the whole text.
func TestWebSocketWholeTextInStart(t *testing.T) {
	e := tinyEngine(t)
	ts := serve(t, e, Config{})
	text := "The first sentence is here. And a second one follows it."
	c := wsDial(t, ts, nil)
	wsSend(t, c, map[string]any{"type": "start", "seed": 6, "text": text, "end": true})
	r := wsRead(t, c, nil)
	if k := r.kinds(); k[len(k)-1] != "done" {
		t.Fatalf("events %v", k)
	}
	want := alone(t, e, engine.Request{Text: text, Knobs: engine.DefaultKnobs(), Seed: 6, MaxSeconds: 0.5, DiscardCodes: true})
	if !equal16(r.pcm, want) {
		t.Fatalf("%d samples over the WebSocket, %d alone: not equal", len(r.pcm), len(want))
	}
	c2 := wsDial(t, ts, nil)
	wsSend(t, c2, map[string]any{"type": "start", "end": true})
	if ev, ok := wsRead(t, c2, nil).find("error"); !ok || !strings.Contains(ev.Message, "no text") {
		t.Errorf("end without text: %+v", ev)
	}
}
