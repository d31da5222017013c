package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// nextEvent reads c's next JSON event, skipping audio.
func nextEvent(t *testing.T, c *websocket.Conn) wsEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("reading an event: %v", err)
		}
		if typ != websocket.MessageText {
			continue
		}
		var ev wsEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
}

// TestAdmitsEngineCapacity: the server runs as many streams at once as the
// engine generates at once; the next waits in the queue, told its
// position, and starts when a running one ends. readyz and metrics report
// the slots.
func TestAdmitsEngineCapacity(t *testing.T) {
	ts := serve(t, tinyEngineOf(t, 3), Config{Limits: Limits{MaxQueue: 4, MaxStreamsPerKey: 8}})
	// WebSocket streams that have not sent their text yet hold slots.
	var holders []*websocket.Conn
	for i := 0; i < 3; i++ {
		c := wsDial(t, ts, nil)
		wsSend(t, c, map[string]any{"type": "start"})
		if ev := nextEvent(t, c); ev.Type != "started" {
			t.Fatalf("holder %d: first event %q, want started", i, ev.Type)
		}
		holders = append(holders, c)
	}
	if running, queued := ts.adm.load(); running != 3 || queued != 0 {
		t.Fatalf("%d running and %d queued with 3 slots taken", running, queued)
	}
	resp := ts.get(t, "/readyz")
	var ready map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&ready); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ready["engine_slots"] != 3.0 || ready["free_slots"] != 0.0 || ready["active_streams"] != 3.0 {
		t.Errorf("readyz %v: want 3 engine slots, none free, 3 active", ready)
	}
	if n := metricValue(t, ts, "zonos_engine_slots"); n != 3 {
		t.Errorf("zonos_engine_slots %g, want 3", n)
	}
	late := wsDial(t, ts, nil)
	wsSend(t, late, map[string]any{"type": "start", "text": "Now it is my turn.", "end": true})
	if ev := nextEvent(t, late); ev.Type != "queued" || ev.Position != 1 {
		t.Fatalf("the fourth stream's first event %+v, want queued at position 1", ev)
	}
	wsSend(t, holders[1], map[string]any{"type": "cancel"})
	if ev := nextEvent(t, late); ev.Type != "started" {
		t.Fatalf("after a slot freed the fourth stream got %q, want started", ev.Type)
	}
	r := wsRead(t, late, nil)
	if _, ok := r.find("done"); !ok || len(r.pcm) == 0 {
		t.Errorf("the fourth stream: events %v, %d samples; want audio and done", r.kinds(), len(r.pcm))
	}
}
