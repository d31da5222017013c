package engine

import (
	"fmt"

	"zonostream/engine/zonos"
)

// EncodePrefix encodes 44.1 kHz audio with the engine's DAC into the
// frames Request.AudioPrefix takes: Zonos continues speech from them (the
// reference's audio_prefix_codes). It runs on the engine's backend, so a
// caller serving several requests calls it between utterances.
func (e *Engine) EncodePrefix(samples []float32) ([][zonos.NumCodebooks]int32, error) {
	enc, err := e.codec.Encode(samples)
	if err != nil {
		return nil, err
	}
	if len(enc.Codes) != zonos.NumCodebooks {
		return nil, fmt.Errorf("the DAC makes %d codebooks, Zonos needs %d", len(enc.Codes), zonos.NumCodebooks)
	}
	frames := make([][zonos.NumCodebooks]int32, enc.Frames)
	for k, row := range enc.Codes {
		for t, c := range row {
			frames[t][k] = c
		}
	}
	return frames, nil
}
