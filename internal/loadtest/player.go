package loadtest

import "time"

// Player simulates a real-time player of one stream of 16-bit mono PCM
// from the times its bytes arrived, with no audio output: playback starts
// PreRoll after the first audio byte and plays Rate samples a second.
// When the played position reaches the end of what has arrived before the
// stream is over, the stream starves: the player waits for the next bytes
// (an underrun) and plays on from there once they come, as a device
// playing silence meanwhile would; the wait is the starved time. Playing
// out what is left after the last bytes is the end, not starving.
type Player struct {
	rate    int
	preRoll time.Duration
	started bool
	start   time.Time // when sample 0 plays, moved on by each wait
	bytes   int64     // received so far
	under   int
	starved time.Duration
}

// NewPlayer is a player of rate samples a second that starts preRoll
// after the first audio arrives.
func NewPlayer(rate int, preRoll time.Duration) *Player {
	return &Player{rate: rate, preRoll: preRoll}
}

// Arrive records n bytes received at t; calls come in the order of t.
func (p *Player) Arrive(t time.Time, n int) {
	if n <= 0 {
		return
	}
	if !p.started {
		p.started, p.start = true, t.Add(p.preRoll)
		p.bytes = int64(n)
		return
	}
	// The player has played every whole sample received so far at due;
	// bytes arriving after it found the player waiting.
	due := p.start.Add(time.Duration(p.bytes / 2 * int64(time.Second) / int64(p.rate)))
	if gap := t.Sub(due); gap > 0 {
		p.under++
		p.starved += gap
		p.start = p.start.Add(gap)
	}
	p.bytes += int64(n)
}

// Underruns is how many times the player waited for audio.
func (p *Player) Underruns() int { return p.under }

// Starved is the total time the player waited.
func (p *Player) Starved() time.Duration { return p.starved }
