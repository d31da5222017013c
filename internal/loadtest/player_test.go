package loadtest

import (
	"testing"
	"time"
)

// arrival is n bytes arriving at an offset from the first.
type arrival struct {
	at    time.Duration
	bytes int
}

// play runs a timeline through a player.
func play(rate int, preRoll time.Duration, timeline []arrival) *Player {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	p := NewPlayer(rate, preRoll)
	for _, a := range timeline {
		p.Arrive(t0.Add(a.at), a.bytes)
	}
	return p
}

// chunks is n arrivals of samples each, every `every`, from start.
func chunks(start time.Duration, n, samples int, every time.Duration) []arrival {
	out := make([]arrival, n)
	for i := range out {
		out[i] = arrival{start + time.Duration(i)*every, 2 * samples}
	}
	return out
}

func TestPlayerNeverStarvesAheadOfRealTime(t *testing.T) {
	// 512-sample frames (11.61 ms at 44.1 kHz) every 5 ms, with no
	// pre-roll at all: always ahead.
	p := play(44100, 0, chunks(0, 400, 512, 5*time.Millisecond))
	if p.Underruns() != 0 || p.Starved() != 0 {
		t.Errorf("%d underruns, %v starved: want none for audio faster than real time", p.Underruns(), p.Starved())
	}
	// Exactly real time (441 samples every 10 ms): each chunk arrives
	// the moment the one before has played, which is not overtaking.
	p = play(44100, 0, chunks(0, 100, 441, 10*time.Millisecond))
	if p.Underruns() != 0 || p.Starved() != 0 {
		t.Errorf("exactly real time: %d underruns, %v starved: want none", p.Underruns(), p.Starved())
	}
}

func TestPlayerGapLongerThanLeadStarvesOnce(t *testing.T) {
	// 100 ms of audio at once, played from 200 ms (the pre-roll) to
	// 300 ms; the next arrives at 500 ms: 200 ms starved. The rest then
	// comes faster than real time.
	tl := []arrival{{0, 2 * 4410}}
	tl = append(tl, chunks(500*time.Millisecond, 50, 512, 5*time.Millisecond)...)
	p := play(44100, 200*time.Millisecond, tl)
	if p.Underruns() != 1 || p.Starved() != 200*time.Millisecond {
		t.Errorf("%d underruns, %v starved: want 1 and 200ms", p.Underruns(), p.Starved())
	}

	// The same at 24 kHz: 4410 samples last 183.75 ms, played 200 →
	// 383.75 ms, so the gap to 500 ms is 116.25 ms.
	p = play(24000, 200*time.Millisecond, tl)
	if want := 116250 * time.Microsecond; p.Underruns() != 1 || p.Starved() != want {
		t.Errorf("at 24 kHz: %d underruns, %v starved: want 1 and %v", p.Underruns(), p.Starved(), want)
	}

	// Two gaps: each counted, the times summed. After the first wait
	// the player resumes at the arrival (500 ms) and plays its 100 ms to
	// 600 ms; the third arrival at 900 ms waited 300 ms.
	p = play(44100, 200*time.Millisecond, []arrival{{0, 2 * 4410}, {500 * time.Millisecond, 2 * 4410}, {900 * time.Millisecond, 2 * 4410}})
	if p.Underruns() != 2 || p.Starved() != 500*time.Millisecond {
		t.Errorf("two gaps: %d underruns, %v starved: want 2 and 500ms", p.Underruns(), p.Starved())
	}
}

func TestPlayerPreRoll(t *testing.T) {
	tl := []arrival{{0, 2 * 4410}, {500 * time.Millisecond, 2 * 4410}}
	for _, c := range []struct {
		preRoll time.Duration
		starved time.Duration
	}{
		{0, 400 * time.Millisecond},                      // plays 0–100 ms, waits to 500
		{200 * time.Millisecond, 200 * time.Millisecond}, // plays 200–300 ms
		{400 * time.Millisecond, 0},                      // plays 400–500 ms: the next comes just in time
		{time.Second, 0},                                 // everything has come before playback starts
	} {
		p := play(44100, c.preRoll, tl)
		under := 0
		if c.starved > 0 {
			under = 1
		}
		if p.Underruns() != under || p.Starved() != c.starved {
			t.Errorf("pre-roll %v: %d underruns, %v starved; want %d, %v", c.preRoll, p.Underruns(), p.Starved(), under, c.starved)
		}
	}
}

func TestPlayerEdges(t *testing.T) {
	if p := play(44100, 0, nil); p.Underruns() != 0 || p.Starved() != 0 {
		t.Errorf("nothing arrived: %d underruns, %v starved", p.Underruns(), p.Starved())
	}
	// A long stream's end played out after the last bytes is not a wait;
	// empty reads are not arrivals.
	p := play(44100, 0, []arrival{{0, 2 * 44100}, {10 * time.Millisecond, 0}, {20 * time.Millisecond, 2}})
	if p.Underruns() != 0 {
		t.Errorf("%d underruns for a stream that ended ahead", p.Underruns())
	}
	// Half a sample is not playable: 441 samples and a byte last 10 ms.
	p = play(44100, 0, []arrival{{0, 2*441 + 1}, {11 * time.Millisecond, 1}})
	if p.Underruns() != 1 || p.Starved() != time.Millisecond {
		t.Errorf("an odd byte: %d underruns, %v starved; want 1, 1ms", p.Underruns(), p.Starved())
	}
}
