package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestFaultDeviceLostWithRoomInRing: after the device stops on its own,
// WriteAll reports the loss even when the ring still has room (the CLI
// writes into a 5-minute ring, so a loss was otherwise never reported), and
// an utterance's Wait returns the loss instead of waiting for playback
// that will never happen.
func TestFaultDeviceLostWithRoomInRing(t *testing.T) {
	p := newNullPlayer(t, PlayerConfig{Buffer: time.Minute})
	u := p.BeginUtterance()
	if err := p.WriteAll(context.Background(), ramp(0, 4410)); err != nil {
		t.Fatal(err)
	}
	if err := p.dev.Stop(); err != nil { // as an unplugged device does
		t.Fatal(err)
	}
	waitFor(t, "the loss to be signalled", func() bool { return p.Err() != nil })
	if err := p.WriteAll(context.Background(), ramp(0, 10)); !errors.Is(err, ErrDeviceLost) {
		t.Fatalf("WriteAll of 10 samples into a ring with room after a loss: %v, want ErrDeviceLost", err)
	}
	p.EndUtterance()
	if err := u.Wait(context.Background()); !errors.Is(err, ErrDeviceLost) {
		t.Fatalf("Utterance.Wait after a loss: %v, want ErrDeviceLost", err)
	}
	if !strings.Contains(p.Err().Error(), "unplugged") {
		t.Errorf("loss message %q does not say what happened", p.Err())
	}
}

// TestFaultDeviceFailsToStart: a device that cannot be opened is an error
// naming it and the way out, not a panic or a silent null device.
func TestFaultDeviceFailsToStart(t *testing.T) {
	for _, cfg := range []PlayerConfig{
		{Null: true, Device: "no such device 7f3a"},
		{Null: true, Period: time.Hour},
		{Null: true, Buffer: 1000 * time.Hour},
		{Null: true, PreRoll: time.Hour},
	} {
		p, err := NewPlayer(cfg)
		if err == nil {
			p.Close()
			t.Errorf("%+v: player opened", cfg)
			continue
		}
		t.Logf("%+v: %v", cfg, err)
	}
}

// TestLimitsClipHeaders: rates, channel counts and lengths claimed by a
// clip's header outside the bounds are refused before anything is
// allocated for them; a long clip is trimmed to the limit with a notice.
func TestLimitsClipHeaders(t *testing.T) {
	pcm := make([]byte, 3200)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"rate 0", wavBytes(0, 1, 16, 1, pcm), "sample rate"},
		{"rate 999", wavBytes(999, 1, 16, 1, pcm), "sample rate"},
		{"rate 384001", wavBytes(384001, 1, 16, 1, pcm), "sample rate"},
		{"rate 4 GHz", wavBytes(math.MaxUint32, 1, 16, 1, pcm), ""},
		{"0 channels", wavBytes(16000, 0, 16, 1, pcm), ""},
		{"65 channels", wavBytes(16000, 65, 16, 1, make([]byte, 65*2*10)), "channels"},
		{"12-bit", wavBytes(16000, 1, 12, 1, pcm), ""},
		{"format 2 (ADPCM)", wavBytes(16000, 1, 4, 2, pcm), ""},
	}
	for _, c := range cases {
		_, err := DecodeClip(bytes.NewReader(c.data), c.name, ClipOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	// A header claiming 4 GiB of data with 3200 bytes present: bounded.
	claim := wavBytes(16000, 1, 16, 1, pcm)
	binary.LittleEndian.PutUint32(claim[40:], math.MaxUint32-64)
	binary.LittleEndian.PutUint32(claim[4:], math.MaxUint32-28)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, err := DecodeClip(bytes.NewReader(claim), "claims 4 GiB", ClipOptions{})
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("a 3 KiB file claiming 4 GiB allocated %d bytes", alloc)
	}
	if err == nil && len(c.Samples) > 1600 {
		t.Errorf("%d samples from 1600 present", len(c.Samples))
	}
	t.Logf("4 GiB claim: %d bytes allocated, err %v", after.TotalAlloc-before.TotalAlloc, err)
}

// TestLimitsClipLength: a 2-minute clip is cut to the 30 s default (and
// to a smaller explicit limit) with a notice saying so.
func TestLimitsClipLength(t *testing.T) {
	const rate, secs = 8000, 120
	data := make([]byte, 2*rate*secs)
	for i := 0; i < rate*secs; i++ {
		binary.LittleEndian.PutUint16(data[2*i:], uint16(int16(8000*math.Sin(float64(i)/7))))
	}
	p := filepath.Join(t.TempDir(), "long.wav")
	if err := os.WriteFile(p, wavBytes(rate, 1, 16, 1, data), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		max  float64
		want float64
	}{{0, DefaultClipSeconds}, {5, 5}, {0.5, 0.5}} {
		clip, err := LoadClip(p, ClipOptions{MaxSeconds: c.max})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(clip.Seconds()-c.want) > 0.01 || !clip.Trimmed || !strings.Contains(clip.Notice, "first") {
			t.Errorf("limit %g: %.3f s, trimmed %v, notice %q", c.max, clip.Seconds(), clip.Trimmed, clip.Notice)
		}
		if clip.SourceSeconds != secs {
			t.Errorf("limit %g: source %g s, want %d", c.max, clip.SourceSeconds, secs)
		}
	}
}

// TestLimitsRates: the WAV writer, the resampler and the ring refuse rates
// and sizes out of range with an error instead of allocating for them.
func TestLimitsRates(t *testing.T) {
	for _, r := range []int{0, -44100, MaxResampleRate + 1, math.MaxInt32} {
		if w, err := NewWAVWriter(&bytes.Buffer{}, r, WAVPCM16); err == nil {
			t.Errorf("WAV writer at %d Hz: %v", r, w)
		}
		if _, err := NewResampler(r, 16000); err == nil {
			t.Errorf("resampler from %d Hz accepted", r)
		}
		if _, err := NewResampler(16000, r); err == nil {
			t.Errorf("resampler to %d Hz accepted", r)
		}
		if _, err := NewRing(time.Second, r); err == nil && r <= 0 {
			t.Errorf("ring at %d Hz accepted", r)
		}
	}
	for _, d := range []time.Duration{0, -time.Second, 1000 * time.Hour} {
		if _, err := NewRing(d, SampleRate); err == nil {
			t.Errorf("ring of %v accepted", d)
		}
	}
	if _, err := DecodeClip(bytes.NewReader(wavBytes(16000, 1, 16, 1, make([]byte, 64))), "x", ClipOptions{Rate: 10_000_000}); err == nil {
		t.Error("clip output rate of 10 MHz accepted")
	}
}
