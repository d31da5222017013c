package app

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"sync"
)

// VoiceEncoder turns a speaker clip into Zonos' 128-d voice embedding
// (engine/speaker). main passes one in when the speaker model is available.
type VoiceEncoder interface {
	Embed(ctx context.Context, samples []float32, rate int) ([]float32, error)
}

// ErrNoVoiceEncoder is what the window says when no encoder was given: the
// clip is kept but cannot shape the voice, and nothing pretends otherwise.
var ErrNoVoiceEncoder = errors.New("voice cloning is not available in this build (no speaker encoder): speech uses the model's default voice")

// voiceCache remembers embeddings by clip content, so speaking twice with
// one clip encodes it once, and a clip already being encoded (Speaker.
// PrepareVoice started it when the clip was set) is waited for, not
// encoded again.
type voiceCache struct {
	mu       sync.Mutex
	m        map[[32]byte][]float32
	inflight map[[32]byte]*voiceJob
}

// voiceJob is one encoding in progress; v and err are set before done
// closes.
type voiceJob struct {
	done chan struct{}
	v    []float32
	err  error
}

func clipKey(c *Clip) [32]byte {
	h := sha256.New()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(c.Rate))
	h.Write(b[:])
	for _, v := range c.Samples {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
		h.Write(b[:])
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// embed returns the cached embedding of c, waits for an encoding of c in
// progress, or computes it with enc. When the encoding it waited for
// failed (its caller was cancelled, say), it tries once itself.
func (vc *voiceCache) embed(ctx context.Context, enc VoiceEncoder, c *Clip) ([]float32, error) {
	if enc == nil {
		return nil, ErrNoVoiceEncoder
	}
	k := clipKey(c)
	for attempt := 0; ; attempt++ {
		vc.mu.Lock()
		if e, ok := vc.m[k]; ok {
			vc.mu.Unlock()
			return e, nil
		}
		j, running := vc.inflight[k]
		if !running || attempt > 0 {
			break // vc.mu still held
		}
		vc.mu.Unlock()
		select {
		case <-j.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if j.err == nil {
			return j.v, nil
		}
	}
	j := &voiceJob{done: make(chan struct{})}
	if vc.inflight == nil {
		vc.inflight = map[[32]byte]*voiceJob{}
	}
	vc.inflight[k] = j
	vc.mu.Unlock()
	j.v, j.err = enc.Embed(ctx, c.Samples, c.Rate)
	vc.mu.Lock()
	if vc.inflight[k] == j {
		delete(vc.inflight, k)
	}
	if j.err == nil {
		if vc.m == nil {
			vc.m = map[[32]byte][]float32{}
		}
		vc.m[k] = j.v
	}
	vc.mu.Unlock()
	close(j.done)
	return j.v, j.err
}
