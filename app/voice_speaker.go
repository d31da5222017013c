package app

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"zonostream/audio"
	"zonostream/engine/compute"
	"zonostream/engine/speaker"
	"zonostream/engine/weights"
)

func init() {
	// engine/speaker leaves resampling to the program (it does not link
	// the audio device library); audio.Resampler is torchaudio-exact.
	speaker.SetResampler(func(from, to int) (speaker.Resampler, error) { return audio.NewResampler(from, to) })
}

// ErrSpeakerModelMissing: voice cloning needs the speaker-embedding files,
// which are not on disk. Speech goes on with the default voice.
var ErrSpeakerModelMissing = errors.New("voice cloning needs the speaker-embedding model (Zyphra/Zonos-v0.1-speaker-embedding), which is not installed: download a model in the Models tab; speech uses the model's default voice")

// SpeakerEncoder is the VoiceEncoder of engine/speaker: the clip is
// resampled to 16 kHz, checked, embedded by ResNet293-SimAM-ASP + LDA and
// cached on disk. The model loads on first use, on the engine's goroutine
// (utterances run one at a time, so the backend has one user).
type SpeakerEncoder struct {
	Backend compute.SpeakerBackend
	// Files locates the two checkpoints (ResNet and LDA).
	Files func() (resnet, lda string, err error)
	Cache *speaker.Cache // nil: no disk cache

	mu     sync.Mutex
	m      *speaker.Model
	loaded string
}

// Embed implements VoiceEncoder.
func (e *SpeakerEncoder) Embed(ctx context.Context, samples []float32, rate int) ([]float32, error) {
	w, l, err := e.Files()
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrSpeakerModelMissing, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil || e.loaded != w+"\x00"+l {
		m, err := speaker.Load(w, l, e.Backend)
		if err != nil {
			return nil, err
		}
		if e.m != nil {
			e.m.Close()
		}
		e.m, e.loaded = m, w+"\x00"+l
	}
	s16, err := speaker.ResampleTo16k(samples, rate)
	if err != nil {
		return nil, err
	}
	if err := speaker.CheckSamples(s16); err != nil {
		return nil, err
	}
	v, _, err := e.m.EmbedCached(ctx, e.Cache, s16)
	return v, err
}

// ModelID is the hash of the speaker model last loaded ("" before the
// first Embed): a voice saved from a clip records which model made its
// embedding.
func (e *SpeakerEncoder) ModelID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		return ""
	}
	return e.m.ID
}

// SpeakerFilesIn finds the speaker checkpoints in a Hugging Face cache
// (cache is read at each call, so a folder chosen later is used).
func SpeakerFilesIn(cache func() weights.Cache) func() (string, string, error) {
	return func() (string, string, error) {
		c := cache()
		var paths [2]string
		for i, name := range []string{speaker.WeightsFile, speaker.LDAFile} {
			e, ok, err := c.Lookup(weights.RepoFile{Repo: weights.SpeakerRepo, Name: name}, weights.DefaultRevision)
			if err != nil {
				return "", "", err
			}
			if !ok {
				return "", "", fmt.Errorf("%s/%s is not in %s", weights.SpeakerRepo, name, c.Dir)
			}
			paths[i] = e.Path
		}
		return paths[0], paths[1], nil
	}
}
