package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"zonostream/audio"
	"zonostream/engine"
	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/speaker"
	"zonostream/engine/weights"
	"zonostream/engine/zonos"
)

// voice is --speaker read and checked before the model loads: a saved
// vector, or a decoded clip with the speaker model's files found.
type voice struct {
	vector       []float32
	path         string
	clip         *audio.Clip
	weights, lda string
	// model is the speaker model's hash once embed has run on a clip
	// (what `zonos voice add` records); "" for a saved vector.
	model string
}

// readVoice reads --speaker: a saved vector (.npy from `zonos embed -o`,
// or .safetensors) as is; any other file is a clip, decoded and checked
// here and embedded later by embed. dir is --speaker-dir ("" for the
// Hugging Face cache).
func readVoice(path, dir string, logf func(string, ...any)) (*voice, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		v, err := readNpyVector(path)
		return &voice{vector: v, path: path}, err
	case ".safetensors":
		v, err := readSafetensorsVector(path)
		return &voice{vector: v, path: path}, err
	}
	clip, err := audio.LoadClip(path, audio.ClipOptions{MaxSeconds: audio.DefaultClipSeconds, Rate: speaker.SampleRate})
	if err != nil {
		return nil, err
	}
	if clip.Notice != "" {
		logf("note: %s", clip.Notice)
	}
	if err := speaker.CheckSamples(clip.Samples); err != nil {
		return nil, err
	}
	wp, lp := "", ""
	if dir != "" {
		wp, lp = filepath.Join(dir, speaker.WeightsFile), filepath.Join(dir, speaker.LDAFile)
		for _, p := range []string{wp, lp} {
			if _, err := os.Stat(p); err != nil {
				return nil, fmt.Errorf("the speaker model: %w; --speaker-dir must hold %s and %s", err, speaker.WeightsFile, speaker.LDAFile)
			}
		}
	}
	wp, lp, err = speakerFiles(wp, lp, "pass --speaker-dir with the folder that holds "+speaker.WeightsFile+" and "+speaker.LDAFile)
	if err != nil {
		return nil, err
	}
	return &voice{path: path, clip: clip, weights: wp, lda: lp}, nil
}

// readSafetensorsVector reads the 128-value tensor "speaker" of a
// .safetensors file.
func readSafetensorsVector(path string) ([]float32, error) {
	f, err := weights.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := f.Tensor("speaker")
	if err != nil {
		return nil, err
	}
	if t.NumElements() != 128 {
		return nil, fmt.Errorf("%s: speaker vector has %d values, want 128", path, t.NumElements())
	}
	return t.Float32s()
}

// embed is the voice's 128-d vector: the saved one, or the clip embedded
// with the speaker model (cached by clip and model hash). The speaker
// model runs on b when b implements its ops, else on the CPU: it runs once
// per clip.
func (v *voice) embed(ctx context.Context, b compute.Backend, logf func(string, ...any)) ([]float32, error) {
	if v.clip == nil {
		return v.vector, nil
	}
	sb, ok := b.(compute.SpeakerBackend)
	if !ok {
		sb = cpu.New(0)
	}
	m, err := speaker.Load(v.weights, v.lda, sb)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	v.model = m.ID
	cache, err := speaker.DefaultCache()
	if err != nil {
		logf("warning: %v (embedding without a cache)", err)
		cache = nil
	}
	logf("embedding the voice of %s (%.1f s)…", v.path, v.clip.Seconds())
	vec, _, err := m.EmbedCached(ctx, cache, v.clip.Samples)
	return vec, err
}

// readNpyVector reads a float32 vector of 128 values from a .npy file.
func readNpyVector(path string) ([]float32, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	// A 128-value vector is under 1 KiB; never read a large file whole.
	data, err := io.ReadAll(io.LimitReader(fh, 64<<10+1))
	if err != nil {
		return nil, err
	}
	if len(data) > 64<<10 {
		return nil, fmt.Errorf("%s: over 64 KiB; a speaker vector .npy holds 128 float32 values", path)
	}
	if len(data) < 10 || string(data[:6]) != "\x93NUMPY" {
		return nil, fmt.Errorf("%s: not a .npy file", path)
	}
	var hlen, off int
	if data[6] == 1 {
		hlen, off = int(binary.LittleEndian.Uint16(data[8:])), 10
	} else {
		if len(data) < 12 {
			return nil, fmt.Errorf("%s: truncated .npy header", path)
		}
		hlen, off = int(binary.LittleEndian.Uint32(data[8:])), 12
	}
	if off+hlen > len(data) {
		return nil, fmt.Errorf("%s: truncated .npy header", path)
	}
	hdr := string(data[off : off+hlen])
	if !strings.Contains(hdr, "'<f4'") || strings.Contains(hdr, "'fortran_order': True") {
		return nil, fmt.Errorf("%s: want a little-endian float32 vector, header %q", path, strings.TrimSpace(hdr))
	}
	body := data[off+hlen:]
	if len(body) != 4*128 {
		return nil, fmt.Errorf("%s: %d bytes of data, want 128 float32 values", path, len(body))
	}
	v := make([]float32, 128)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
	}
	return v, nil
}

// readPrefix decodes --prefix at the DAC's rate, before the model loads.
func readPrefix(path string, logf func(string, ...any)) (*audio.Clip, error) {
	clip, err := audio.LoadClip(path, audio.ClipOptions{MaxSeconds: audio.DefaultClipSeconds, Rate: engine.SampleRate})
	if err != nil {
		return nil, err
	}
	if clip.Notice != "" {
		logf("note: %s", clip.Notice)
	}
	return clip, nil
}

// prefixCodes encodes an audio clip with the engine's DAC: Zonos continues
// speech from these frames (the reference's audio_prefix_codes).
func prefixCodes(e *engine.Engine, clip *audio.Clip) ([][zonos.NumCodebooks]int32, error) {
	return e.EncodePrefix(clip.Samples)
}
