package app

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"time"

	"zonostream/internal/voices"
)

// EmbedClip embeds speaker clip c to save it as a named voice, or takes
// the embedding PrepareVoice or an utterance already made. It runs on its
// own goroutine and claims the speaker as an utterance does, since the
// encoder shares the backend with the model: it is refused (ErrBusy)
// while speech runs, and Stop cancels it. done gets the embedding and the
// speaker model's hash ("" when the encoder cannot say), on that
// goroutine; OnEnd(nil) follows, as after a playback.
func (s *Speaker) EmbedClip(c *Clip, done func(emb []float32, model string, err error)) error {
	enc := s.Voice
	if enc == nil {
		return ErrNoVoiceEncoder
	}
	ctx, finish, err := s.start()
	if err != nil {
		return err
	}
	go func() {
		emb, err := s.voices.embed(ctx, enc, c)
		model := ""
		if id, ok := enc.(interface{ ModelID() string }); ok && err == nil {
			model = id.ModelID()
		}
		finish()
		done(emb, model, err)
		if s.OnEnd != nil {
			s.OnEnd(nil)
		}
	}()
	return nil
}

// savedVoice is the library entry for clip c's embedding.
func savedVoice(name string, c *Clip, emb []float32, model string) voices.Voice {
	return voices.Voice{
		Name:         name,
		Embedding:    emb,
		ClipSHA256:   clipSHA256(c),
		ClipSeconds:  c.Duration().Seconds(),
		SpeakerModel: model,
		Created:      time.Now().UTC().Truncate(time.Second),
	}
}

// clipSHA256 is the hash of the file c came from, or of its samples
// (float32, little-endian) for a recording.
func clipSHA256(c *Clip) string {
	if c.SHA256 != "" {
		return c.SHA256
	}
	h := sha256.New()
	var b [4]byte
	for _, x := range c.Samples {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}
