package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"zonostream/audio/encode"
)

// speechRequest is OpenAI's POST /v1/audio/speech body. Fields it does
// not know are ignored, as clients add fields of their own; sample_rate
// is ours (pcm is 24 kHz by default, as OpenAI's is). stream_format "sse"
// sends the audio as OpenAI's server-sent events instead of a plain body.
type speechRequest struct {
	Model          string        `json:"model"`
	Input          string        `json:"input"`
	Voice          openAIVoiceID `json:"voice"`
	ResponseFormat string        `json:"response_format"`
	Speed          *float64      `json:"speed"`
	Instructions   string        `json:"instructions"`
	StreamFormat   string        `json:"stream_format"`
	SampleRate     int           `json:"sample_rate"`
}

// openAIVoiceID is a voice as OpenAI's API names it: a string, or an
// object {"id": "…"} for a custom voice.
type openAIVoiceID string

func (v *openAIVoiceID) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '{' {
		var o struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		*v = openAIVoiceID(o.ID)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*v = openAIVoiceID(s)
	return nil
}

// OpenAI's speed range; 1 is Zonos' default speaking rate.
const (
	minSpeed, maxSpeed = 0.25, 4.0
	// speakingRatePerSpeed maps speed onto Zonos' speaking_rate
	// conditioning: speed 1 is its default of 15, and the rate scales
	// with speed (the conditioner clamps to its trained range 0–40).
	speakingRatePerSpeed = 15
	// openAIPCMRate is the rate of OpenAI's pcm format, which clients
	// that play it assume.
	openAIPCMRate = 24000
)

func (s *Server) speech(w http.ResponseWriter, r *http.Request, who string) *apiError {
	start := time.Now()
	var req speechRequest
	done, aerr := s.tryRead()
	if aerr != nil {
		return aerr
	}
	aerr = decodeJSON(w, r, s.cfg.Limits.MaxBodyBytes, &req, false)
	done()
	if aerr != nil {
		return aerr
	}
	if req.StreamFormat != "" && req.StreamFormat != "audio" && req.StreamFormat != "sse" {
		return badRequest("stream_format", "stream_format %q is not one of audio (the default) and sse", req.StreamFormat)
	}
	if req.ResponseFormat == "" {
		req.ResponseFormat = string(encode.MP3) // OpenAI's default
	}
	f, err := encode.Parse(req.ResponseFormat)
	if err != nil {
		return badRequest("response_format", "%v", err)
	}
	if strings.TrimSpace(req.Input) == "" {
		return badRequest("input", "input is empty; give the text to speak")
	}
	tr := ttsRequest{Text: req.Input, Voice: string(req.Voice), Format: string(f), SampleRate: req.SampleRate}
	if f == encode.PCM && tr.SampleRate == 0 {
		tr.SampleRate = openAIPCMRate
	}
	if req.Speed != nil {
		if *req.Speed < minSpeed || *req.Speed > maxSpeed || *req.Speed != *req.Speed {
			return badRequest("speed", "speed %g must be between %g and %g", *req.Speed, minSpeed, maxSpeed)
		}
		rate := float32(*req.Speed * speakingRatePerSpeed)
		tr.SpeakingRate = &rate
	}
	p, aerr := s.planTTS(&tr, true)
	if aerr != nil {
		if aerr.Param == "text" {
			aerr.Param = "input"
		}
		return aerr
	}
	p.sse = req.StreamFormat == "sse"
	return s.speakHTTP(w.(*logWriter), r, who, "speech", p, start)
}

// tts is the native POST /v1/tts: every Zonos control (ttsRequest).
func (s *Server) tts(w http.ResponseWriter, r *http.Request, who string) *apiError {
	start := time.Now()
	var req ttsRequest
	done, aerr := s.tryRead()
	if aerr != nil {
		return aerr
	}
	aerr = decodeJSON(w, r, s.ttsBodyLimit(), &req, true)
	if aerr != nil {
		done()
		return aerr
	}
	p, aerr := s.planTTS(&req, true) // holds the decoded clips: still counted as reading
	done()
	if aerr != nil {
		return aerr
	}
	return s.speakHTTP(w.(*logWriter), r, who, "tts", p, start)
}

// ttsBodyLimit is the native request's body limit: the JSON limit plus
// room for two clips in base64 (speaker_audio and audio_prefix).
func (s *Server) ttsBodyLimit() int64 {
	l := s.cfg.Limits
	return l.MaxBodyBytes + 2*(l.MaxClipBytes/3*4+8)
}
