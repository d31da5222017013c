package server

import (
	"bytes"
	"context"
	"net/http"

	"zonostream/audio"
	"zonostream/engine"
	"zonostream/engine/speaker"
)

// prepare finishes a plan's engine request with the parts that need the
// engine: a clip to clone is embedded, a prefix clip encoded with the
// DAC. The caller holds an engine slot.
func (s *Server) prepare(ctx context.Context, p *plan) *apiError {
	if p.speakerAudio != nil {
		if s.speaker.Weights == "" {
			return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "no_speaker_model",
				Message: "the speaker model is not installed, so speaker_audio cannot be cloned: run 'zonos pull' on the server"}
		}
		clip, err := audio.DecodeClip(bytes.NewReader(p.speakerAudio), "speaker_audio", audio.ClipOptions{MaxSeconds: s.cfg.Limits.MaxClipSeconds, Rate: speaker.SampleRate})
		if err != nil {
			return badRequest("speaker_audio", "%v", err)
		}
		if err := speaker.CheckSamples(clip.Samples); err != nil {
			return badRequest("speaker_audio", "%v", err)
		}
		vec, _, err := s.embed(ctx, clip.Samples)
		if err != nil {
			if ctx.Err() != nil {
				return &apiError{Status: 499, Type: "cancelled", Message: "the request ended while its clip was embedded"}
			}
			return s.libraryError("speaker_audio cannot be embedded", err)
		}
		p.req.Speaker = vec
	}
	if p.prefixAudio != nil {
		clip, err := audio.DecodeClip(bytes.NewReader(p.prefixAudio), "audio_prefix", audio.ClipOptions{MaxSeconds: s.cfg.Limits.MaxClipSeconds, Rate: engine.SampleRate})
		if err != nil {
			return badRequest("audio_prefix", "%v", err)
		}
		frames, err := s.eng.EncodePrefix(clip.Samples)
		if err != nil {
			return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "encoding audio_prefix: " + err.Error()}
		}
		p.req.AudioPrefix = frames
	}
	return nil
}
