package loadtest

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"time"
)

// receiver takes one stream's audio as it arrives: the client's time to
// first audio, the simulated player, the count, the hash, and (for
// Verify) the bytes themselves.
type receiver struct {
	s       *Stream
	sent    time.Time // the request went out
	preRoll time.Duration
	keep    bool
	p       *Player
	h       hash.Hash
}

func newReceiver(s *Stream, sent time.Time, preRoll time.Duration, keep bool) *receiver {
	return &receiver{s: s, sent: sent, preRoll: preRoll, keep: keep, h: sha256.New()}
}

// audio records b, received at now; the stream's sample rate is known by
// its first bytes.
func (r *receiver) audio(now time.Time, b []byte) {
	if len(b) == 0 {
		return
	}
	if r.p == nil {
		r.s.TTFAMs = ms(now.Sub(r.sent))
		r.p = NewPlayer(r.s.SampleRate, r.preRoll)
	}
	r.p.Arrive(now, len(b))
	r.h.Write(b)
	r.s.AudioBytes += int64(len(b))
	if r.keep {
		r.s.audio = append(r.s.audio, b...)
	}
}

// end writes the player's waits and the audio's hash into the stream.
func (r *receiver) end() {
	if r.p != nil {
		r.s.Underruns, r.s.StarvedMs = r.p.Underruns(), ms(r.p.Starved())
	}
	r.s.AudioSHA256 = hex.EncodeToString(r.h.Sum(nil))
}
