package audio

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gen2brain/malgo"
)

// The tests drive the callback in two ways: directly (fakePlayer: exact,
// no device, no timing) for the accounting rules, and through miniaudio's
// null backend for the real device path. Timeouts only bound a hung test;
// nothing asserts on wall-clock durations.

// fakePlayer is a Player without a device whose callback the test calls.
func fakePlayer(t testing.TB, preroll int) *Player {
	ring, err := NewRingSamples(10000)
	if err != nil {
		t.Fatal(err)
	}
	return &Player{
		cfg:     PlayerConfig{Period: 10 * time.Millisecond, Periods: 3},
		ring:    ring,
		preroll: preroll,
		epoch:   time.Now(),
		lostCh:  make(chan struct{}),
	}
}

// period runs one callback of n frames and returns what it played.
func period(p *Player, n int) []float32 {
	out := make([]float32, n)
	bytes := unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 4*n)
	p.onData(bytes, nil, uint32(n))
	return out
}

func ramp(from, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(from + i + 1) // never 0, so silence is recognisable
	}
	return s
}

// TestDoneWaitsForTheCallbacksCounts: an utterance is Done only once the
// callback has counted its last samples, so Wait never returns with Played
// short of what was written. (The ring's Consumed moves inside Read, before
// the callback credits what it read; CI once saw Wait return in between,
// with Played one period short.)
func TestDoneWaitsForTheCallbacksCounts(t *testing.T) {
	p := fakePlayer(t, 0)
	u := p.BeginUtterance()
	p.Write(ramp(0, 100))
	p.EndUtterance()
	period(p, 50)
	if u.Done() {
		t.Fatal("Done with 50 of 100 samples played")
	}
	p.ring.Read(make([]float32, 50)) // the callback's Read, before its bookkeeping
	if u.Done() {
		t.Fatalf("Done while the callback had not yet counted the last 50 samples (Played %d of 100)", u.Played())
	}

	p = fakePlayer(t, 0)
	u = p.BeginUtterance()
	p.Write(ramp(0, 100))
	p.EndUtterance()
	period(p, 64)
	period(p, 64)
	if !u.Done() || u.Played() != 100 || p.Played() != 100 {
		t.Fatalf("after two periods: Done %v, played %d (player %d), want true and 100", u.Done(), u.Played(), p.Played())
	}
}

func TestCallbackPreRollAndEnd(t *testing.T) {
	p := fakePlayer(t, 100)
	u := p.BeginUtterance()
	p.Write(ramp(0, 60))
	for range 3 {
		if out := period(p, 32); out[0] != 0 {
			t.Fatal("played before the pre-roll was buffered")
		}
	}
	if _, ok := u.FirstSound(); ok || u.Played() != 0 {
		t.Fatal("first sound recorded during pre-roll")
	}
	p.Write(ramp(60, 60)) // 120 buffered ≥ 100: starts
	out := period(p, 32)
	if out[0] != 1 || out[31] != 32 {
		t.Fatalf("first period %v…, want 1…32", out[:3])
	}
	if _, ok := u.FirstSound(); !ok {
		t.Fatal("no first sound after the first played period")
	}
	period(p, 32)
	period(p, 32)       // 96 played, 24 left
	out = period(p, 32) // 24 samples then silence: an underrun (not ended)
	if out[23] != 120 || out[24] != 0 {
		t.Fatalf("short period %v", out[20:28])
	}
	if p.Underruns() != 1 || u.Underruns() != 1 {
		t.Fatalf("underruns %d/%d after one short period, want 1", p.Underruns(), u.Underruns())
	}
	period(p, 32) // still waiting: another underrun
	if p.Underruns() != 2 {
		t.Fatalf("underruns %d, want 2", p.Underruns())
	}
	p.Write(ramp(120, 10))
	p.EndUtterance()
	out = period(p, 32) // the tail, then the end: not an underrun
	if out[0] != 121 || out[9] != 130 || out[10] != 0 {
		t.Fatalf("tail period %v", out[:12])
	}
	if p.Underruns() != 2 {
		t.Fatalf("the end of the utterance counted as an underrun (%d)", p.Underruns())
	}
	if !u.Done() || u.Played() != 130 || p.Played() != 130 {
		t.Fatalf("done %v, played %d/%d, want true, 130", u.Done(), u.Played(), p.Played())
	}
	first, _ := u.FirstSound()
	fin, ok := u.Finished()
	if !ok || fin.Before(first) {
		t.Fatalf("finished %v (ok %v) before first sound %v", fin, ok, first)
	}
	period(p, 32) // idle: silence, no underrun
	if p.Underruns() != 2 {
		t.Fatal("idle period counted as underrun")
	}
}

func TestCallbackShortUtteranceEndsBeforePreRoll(t *testing.T) {
	p := fakePlayer(t, 1000)
	u := p.BeginUtterance()
	p.Write(ramp(0, 50))
	period(p, 32)
	if u.Played() != 0 {
		t.Fatal("played below pre-roll")
	}
	p.EndUtterance()
	period(p, 32)
	period(p, 32)
	if u.Played() != 50 || !u.Done() || p.Underruns() != 0 {
		t.Fatalf("played %d, done %v, underruns %d; want 50, true, 0", u.Played(), u.Done(), p.Underruns())
	}
}

func TestCallbackBackToBackUtterances(t *testing.T) {
	p := fakePlayer(t, 0)
	a := p.BeginUtterance()
	p.Write(ramp(0, 40))
	b := p.BeginUtterance() // ends a at 40
	p.Write(ramp(40, 40))
	p.EndUtterance()
	period(p, 32) // a: 32
	period(p, 32) // a: 8, b: 24
	if a.Played() != 40 || b.Played() != 24 || !a.Done() {
		t.Fatalf("a played %d (done %v), b %d; want 40 (true), 24", a.Played(), a.Done(), b.Played())
	}
	fa, _ := a.FirstSound()
	fb, ok := b.FirstSound()
	if !ok || !fb.After(fa) {
		t.Fatalf("b's first sound %v (ok %v) not after a's %v", fb, ok, fa)
	}
	period(p, 32)
	if b.Played() != 40 || !b.Done() || p.Underruns() != 0 {
		t.Fatalf("b played %d done %v underruns %d", b.Played(), b.Done(), p.Underruns())
	}
}

func TestCallbackCancel(t *testing.T) {
	p := fakePlayer(t, 0)
	u := p.BeginUtterance()
	p.Write(ramp(0, 500))
	period(p, 32)
	p.Cancel()
	out := period(p, 32)
	if out[0] != 0 {
		t.Fatalf("played %v after Cancel", out[0])
	}
	if !u.Done() || u.Played() != 32 || p.Underruns() != 0 {
		t.Fatalf("after Cancel: done %v played %d underruns %d; want true 32 0", u.Done(), u.Played(), p.Underruns())
	}
	if _, ok := u.Finished(); ok {
		t.Error("a cancelled utterance reports Finished")
	}
	v := p.BeginUtterance()
	p.Write(ramp(1000, 10))
	p.EndUtterance()
	if out := period(p, 32); out[0] != 1001 || v.Played() != 10 {
		t.Fatalf("next utterance after Cancel: %v, played %d", out[:2], v.Played())
	}
}

func TestCallbackCancelDuringPreRoll(t *testing.T) {
	p := fakePlayer(t, 1000)
	u := p.BeginUtterance()
	p.Write(ramp(0, 100))
	period(p, 32)
	p.Cancel()
	period(p, 32)
	if !u.Done() || u.Played() != 0 {
		t.Fatalf("cancel during pre-roll: done %v played %d", u.Done(), u.Played())
	}
}

func TestCallbackDoesNotAllocate(t *testing.T) {
	p := fakePlayer(t, 0)
	out := make([]byte, 4*441)
	src := ramp(0, 300)
	p.BeginUtterance()
	allocs := testing.AllocsPerRun(200, func() {
		p.Write(src)
		p.onData(out, nil, 441)
	})
	if allocs != 0 {
		t.Fatalf("the callback allocates %.1f times per period, want 0", allocs)
	}
}

// TestNullBackendQuirk pins malgo v0.11.24's enumeration skew: BackendNull
// is miniaudio's custom backend (fails), BackendNull+1 the null backend.
func TestNullBackendQuirk(t *testing.T) {
	if ctx, err := malgo.InitContext([]malgo.Backend{malgo.BackendNull}, malgo.ContextConfig{}, nil); err == nil {
		ctx.Uninit()
		ctx.Free()
		t.Fatal("malgo.BackendNull now initializes: malgo fixed its Backend enumeration; make nullBackend malgo.BackendNull")
	}
	ds, err := ListDevices(true)
	if err != nil {
		t.Fatalf("nullBackend (malgo.BackendNull+1): %v", err)
	}
	if len(ds) != 1 || !strings.Contains(ds[0].Name, "NULL") || !ds[0].Default {
		t.Fatalf("null backend devices %+v, want one default NULL Playback Device", ds)
	}
}

func newNullPlayer(t *testing.T, cfg PlayerConfig) *Player {
	t.Helper()
	cfg.Null = true
	p, err := NewPlayer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// waitFor polls cond; the deadline only stops a hung test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestPlayerNullBackend(t *testing.T) {
	p := newNullPlayer(t, PlayerConfig{PreRoll: 20 * time.Millisecond, Buffer: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sig := ramp(0, 4410) // 100 ms
	u := p.BeginUtterance()
	if err := p.WriteAll(ctx, sig); err != nil {
		t.Fatal(err)
	}
	p.EndUtterance()
	if err := u.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if u.Played() != int64(len(sig)) || p.Played() != int64(len(sig)) {
		t.Fatalf("played %d (player %d), wrote %d", u.Played(), p.Played(), len(sig))
	}
	if u.Underruns() != 0 {
		t.Errorf("%d underruns with everything buffered up front", u.Underruns())
	}
	first, ok1 := u.FirstSound()
	fin, ok2 := u.Finished()
	if !ok1 || !ok2 || fin.Before(first) {
		t.Fatalf("first sound %v (%v), finished %v (%v)", first, ok1, fin, ok2)
	}
	if p.PeriodFrames() <= 0 || p.Callbacks() <= 0 {
		t.Fatalf("period %d frames, %d callbacks", p.PeriodFrames(), p.Callbacks())
	}
	t.Logf("null device: %d-frame periods, latency %v", p.PeriodFrames(), p.Latency())
}

// TestPlayerWriteAllWaits writes more than the ring holds: WriteAll must
// wait for playback to make room and deliver every sample in order.
func TestPlayerWriteAllWaits(t *testing.T) {
	p := newNullPlayer(t, PlayerConfig{PreRoll: -1, Period: 5 * time.Millisecond, Buffer: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	u := p.BeginUtterance()
	if err := p.WriteAll(ctx, ramp(0, 3*p.ring.Cap())); err != nil {
		t.Fatal(err)
	}
	p.EndUtterance()
	if err := u.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if u.Played() != int64(3*p.ring.Cap()) {
		t.Fatalf("played %d of %d", u.Played(), 3*p.ring.Cap())
	}
	// A cancelled context stops a waiting WriteAll.
	p.BeginUtterance()
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := p.WriteAll(cctx, ramp(0, 10*p.ring.Cap())); !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteAll with a cancelled context: %v", err)
	}
	p.Cancel()
}

func TestPlayerUnderrunOnNullDevice(t *testing.T) {
	p := newNullPlayer(t, PlayerConfig{PreRoll: -1})
	u := p.BeginUtterance()
	p.Write(ramp(0, 441))
	waitFor(t, "an underrun after the ring ran dry", func() bool { return u.Underruns() > 0 })
	p.Write(ramp(441, 441))
	p.EndUtterance()
	if err := u.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if u.Played() != 882 {
		t.Fatalf("played %d, want 882", u.Played())
	}
}

func TestPlayerDeviceLoss(t *testing.T) {
	p := newNullPlayer(t, PlayerConfig{})
	if p.Err() != nil {
		t.Fatal(p.Err())
	}
	// Stop the device behind the player's back, as an unplugged device
	// or a dying sound server does.
	if err := p.dev.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Lost():
	case <-time.After(20 * time.Second):
		t.Fatal("no loss signalled after the device stopped")
	}
	if !errors.Is(p.Err(), ErrDeviceLost) {
		t.Fatalf("Err() = %v, want ErrDeviceLost", p.Err())
	}
	if _, err := p.Write(ramp(0, 10)); !errors.Is(err, ErrDeviceLost) {
		t.Fatalf("Write after loss: %v", err)
	}
	if err := p.WriteAll(context.Background(), ramp(0, p.ring.Cap()+1)); !errors.Is(err, ErrDeviceLost) {
		t.Fatalf("WriteAll after loss: %v", err)
	}
}

func TestPlayerDeviceChoice(t *testing.T) {
	p := newNullPlayer(t, PlayerConfig{Device: "null playback"})
	if !strings.Contains(p.Device().Name, "NULL") {
		t.Fatalf("device %+v", p.Device())
	}
	p2 := newNullPlayer(t, PlayerConfig{Device: p.Device().ID})
	if p2.Device().ID != p.Device().ID {
		t.Fatalf("by id: %+v", p2.Device())
	}
	_, err := NewPlayer(PlayerConfig{Null: true, Device: "no such speaker"})
	if err == nil || !strings.Contains(err.Error(), "NULL Playback Device") {
		t.Fatalf("unknown device: %v, want an error listing the devices", err)
	}
}

func TestPlayerConfigErrors(t *testing.T) {
	for _, c := range []PlayerConfig{
		{Null: true, Period: time.Microsecond},
		{Null: true, Periods: 100},
		{Null: true, PreRoll: time.Second, Buffer: time.Second},
	} {
		if _, err := NewPlayer(c); err == nil || !strings.Contains(err.Error(), "use") && !strings.Contains(err.Error(), "make it") {
			t.Errorf("%+v: %v, want an error with the fix", c, err)
		}
	}
}

// TestPlayerRealBackends opens the default device on the real backends.
// Without a sound card (CI) that must fail with an error that says what to
// do; with one it plays a moment of silence.
func TestPlayerRealBackends(t *testing.T) {
	if testing.Short() {
		t.Skip("touches the system's sound devices")
	}
	p, err := NewPlayer(PlayerConfig{})
	if err != nil {
		if !strings.Contains(err.Error(), "WAV") {
			t.Fatalf("no device: %v, want an error suggesting a WAV file", err)
		}
		t.Logf("no sound card here: %v", err)
		return
	}
	p.Close()
}

// TestPauseHoldsPlaybackWithoutLosingASample: while paused the callback
// plays silence and takes nothing from the ring; nothing counts as played
// or as an underrun, and Resume goes on with the next sample.
func TestPauseHoldsPlaybackWithoutLosingASample(t *testing.T) {
	p := fakePlayer(t, 0)
	u := p.BeginUtterance()
	p.Write(ramp(0, 100))
	period(p, 32)
	p.Pause()
	if !p.Paused() {
		t.Fatal("Paused() false after Pause")
	}
	for range 5 {
		out := period(p, 32)
		for i, v := range out {
			if v != 0 {
				t.Fatalf("paused period plays %g at %d", v, i)
			}
		}
	}
	if p.Played() != 32 || u.Played() != 32 || p.Buffered() != 68 || p.Underruns() != 0 || u.Underruns() != 0 {
		t.Fatalf("while paused: played %d/%d, buffered %d, underruns %d/%d; want 32/32, 68, 0/0",
			p.Played(), u.Played(), p.Buffered(), p.Underruns(), u.Underruns())
	}
	p.Resume()
	if p.Paused() {
		t.Fatal("Paused() true after Resume")
	}
	out := period(p, 32)
	if out[0] != 33 || out[31] != 64 {
		t.Fatalf("after Resume %v…%v, want 33…64", out[0], out[31])
	}
	p.EndUtterance()
	period(p, 64)
	if !u.Done() || u.Played() != 100 || p.Underruns() != 0 {
		t.Fatalf("done %v played %d underruns %d; want true 100 0", u.Done(), u.Played(), p.Underruns())
	}
}

// TestPauseOnAnEmptyRingIsNoUnderrun: a pause while the producer is behind
// does not count the waiting periods as underruns.
func TestPauseOnAnEmptyRingIsNoUnderrun(t *testing.T) {
	p := fakePlayer(t, 0)
	u := p.BeginUtterance()
	p.Write(ramp(0, 32))
	period(p, 32)
	p.Pause()
	period(p, 32)
	period(p, 32)
	if p.Underruns() != 0 || u.Underruns() != 0 {
		t.Fatalf("%d underruns while paused", p.Underruns())
	}
	p.Resume()
	period(p, 32) // not paused, not ended, nothing queued: this one is
	if p.Underruns() != 1 {
		t.Fatalf("underruns %d after resuming on an empty ring, want 1", p.Underruns())
	}
}

// TestPauseThenCancel: Cancel drops the queued audio of a paused player, so
// its utterance is Done; the player stays paused for the next one.
func TestPauseThenCancel(t *testing.T) {
	p := fakePlayer(t, 0)
	u := p.BeginUtterance()
	p.Write(ramp(0, 500))
	period(p, 32)
	p.Pause()
	p.Cancel()
	period(p, 32)
	if !u.Done() || u.Played() != 32 || p.Buffered() != 0 {
		t.Fatalf("cancel while paused: done %v played %d buffered %d", u.Done(), u.Played(), p.Buffered())
	}
	v := p.BeginUtterance()
	p.Write(ramp(1000, 10))
	p.EndUtterance()
	if out := period(p, 32); out[0] != 0 || v.Played() != 0 {
		t.Fatal("the next utterance played while still paused")
	}
	p.Resume()
	if out := period(p, 32); out[0] != 1001 || v.Played() != 10 {
		t.Fatalf("after Resume %v, played %d", out[0], v.Played())
	}
}

// TestPauseBoundsTheProducer: on a running device, a writer ahead of a
// paused player fills the ring and then waits; nothing is played until
// Resume, and then every sample is, in order.
func TestPauseBoundsTheProducer(t *testing.T) {
	p := newNullPlayer(t, PlayerConfig{PreRoll: -1, Period: 5 * time.Millisecond, Buffer: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p.Pause()
	u := p.BeginUtterance()
	total := 3 * p.ring.Cap()
	wrote := make(chan error, 1)
	go func() { wrote <- p.WriteAll(ctx, ramp(0, total)) }()
	waitFor(t, "the ring to fill", func() bool { return p.Buffered() == p.ring.Cap() })
	c := p.Callbacks()
	waitFor(t, "ten more device periods", func() bool { return p.Callbacks() >= c+10 })
	select {
	case err := <-wrote:
		t.Fatalf("WriteAll returned (%v) while the paused ring was full", err)
	default:
	}
	if p.Played() != 0 || p.Underruns() != 0 || p.Buffered() != p.ring.Cap() {
		t.Fatalf("paused: played %d, underruns %d, buffered %d of %d", p.Played(), p.Underruns(), p.Buffered(), p.ring.Cap())
	}
	p.Resume()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	p.EndUtterance()
	if err := u.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if u.Played() != int64(total) {
		t.Fatalf("played %d of %d", u.Played(), total)
	}
}
