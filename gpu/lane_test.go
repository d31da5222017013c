//go:build cuda

package gpu

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"zonostream/engine"
	"zonostream/internal/golden"
)

// TestLaneRunsBesideMain: while the side lane's kernel runs (a 300 ms spin)
// and a read-back of it waits, the main lane's work and read-back complete;
// the lane's read returns after its kernel, with the kernel's result. A
// block freed on one lane is not handed to the other.
func TestLaneRunsBesideMain(t *testing.T) {
	need(t)
	lane := gb.Lane().(*Backend)
	if gb.Lane() != lane || lane.Lane() != lane {
		t.Fatal("Lane does not return the one side lane")
	}
	if lane.stream == gb.stream || lane.pool == gb.pool {
		t.Fatal("the side lane shares the main lane's stream or pool")
	}
	probe := lane.FromI32(make([]int32, 6), 6)
	lane.do(func() {
		lane.launch(gb.k["pdl_probe_spin"], [3]int{1, 1, 1}, block256, cast(probe).ptr(), 300_000_000)
	})
	sent := lane.reader.sent.Load()
	laneRead := make(chan []byte, 1)
	go func() { laneRead <- lane.readRaw(cast(probe)) }()
	for lane.reader.sent.Load() == sent { // the lane's read is queued and its waiter waits
		time.Sleep(100 * time.Microsecond)
	}
	x := gb.FromF32([]float32{1, 2, 3}, 3)
	y := gb.ReadF32(gb.Scale(x, 2))
	if y[0] != 2 || y[1] != 4 || y[2] != 6 {
		t.Fatalf("main lane computed %v", y)
	}
	select {
	case <-laneRead:
		t.Fatal("the main lane's read returned only after the side lane's 300 ms kernel: the lanes do not overlap")
	default:
	}
	raw := <-laneRead
	if end := binary.LittleEndian.Uint64(raw); end == 0 {
		t.Fatal("the lane's read returned before its kernel wrote its end time")
	}

	a := lane.Zeros(1 << 16)
	pa := cast(a).ptr()
	lane.Free(a)
	b := gb.Zeros(1 << 16)
	if cast(b).ptr() == pa {
		t.Error("a block freed on the side lane was reused by the main lane")
	}
	gb.Free(b)
	if lane.MemStats().Reserved == 0 {
		t.Error("the side lane's pool reports nothing reserved")
	}
}

// TestEngineVocoderOnLane: the engine loads the DAC on the side lane and
// vocodes beside decoding; the streamed PCM equals one-shot decoding of
// the generated codes, sample for sample, under each plan (whose lane
// priorities differ).
func TestEngineVocoderOnLane(t *testing.T) { forEachPlan(t, testEngineVocoderOnLane) }

func testEngineVocoderOnLane(t *testing.T) {
	e, err := engine.Load(gb, engine.PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny")))
	if err != nil {
		t.Fatal(err)
	}
	streamMatchesOneShot(t, e, 60)
}

// TestEngineShortUtterances: utterances shorter than the codebook delay
// ramp (1–8 frames, where the ramp and the tail overlap and the device-side
// token feedback masks both ends of a column) and around the first
// emission (9–11 frames) run through the step graph and the lane to the
// end, each streaming exactly its frames' samples, equal to one-shot
// decoding of its codes.
func TestEngineShortUtterances(t *testing.T) {
	need(t)
	e, err := engine.Load(gb, engine.PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny")))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3, 4, 8, 9, 10, 11} {
		streamMatchesOneShot(t, e, n)
	}
}

// streamMatchesOneShot synthesises a forced rollout of frames frames and
// checks the streamed PCM against one-shot decoding of its codes.
func streamMatchesOneShot(t *testing.T, e *engine.Engine, frames int) {
	t.Helper()
	req := engine.Request{Text: "Hello there.", Language: "en-us", Knobs: engine.DefaultKnobs(), Seed: 3, FixedFrames: frames}
	s, err := e.Synthesize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var pcm []float32
	for ev := range s.Events() {
		switch ev.Kind {
		case engine.Audio:
			pcm = append(pcm, ev.PCM...)
		case engine.Failed:
			t.Fatalf("%d frames: %v", frames, ev.Err)
		}
	}
	cb := make([][]int32, 9)
	for _, f := range s.Codes() {
		for k := range cb {
			cb[k] = append(cb[k], f[k])
		}
	}
	ref, err := e.Codec().Decode(cb)
	if err != nil {
		t.Fatal(err)
	}
	if len(pcm) != len(ref) || len(ref) != frames*512 {
		t.Fatalf("%d frames: streamed %d samples, one-shot %d, want %d", frames, len(pcm), len(ref), frames*512)
	}
	for i := range ref {
		if pcm[i] != ref[i] {
			t.Fatalf("%d frames, sample %d: streamed %g, one-shot %g", frames, i, pcm[i], ref[i])
		}
	}
}
