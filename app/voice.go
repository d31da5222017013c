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
// one clip encodes it once.
type voiceCache struct {
	mu sync.Mutex
	m  map[[32]byte][]float32
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

// embed returns the cached embedding of c or computes it with enc.
func (vc *voiceCache) embed(ctx context.Context, enc VoiceEncoder, c *Clip) ([]float32, error) {
	if enc == nil {
		return nil, ErrNoVoiceEncoder
	}
	k := clipKey(c)
	vc.mu.Lock()
	if e, ok := vc.m[k]; ok {
		vc.mu.Unlock()
		return e, nil
	}
	vc.mu.Unlock()
	e, err := enc.Embed(ctx, c.Samples, c.Rate)
	if err != nil {
		return nil, err
	}
	vc.mu.Lock()
	if vc.m == nil {
		vc.m = map[[32]byte][]float32{}
	}
	vc.m[k] = e
	vc.mu.Unlock()
	return e, nil
}
