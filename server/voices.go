package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"zonostream/audio"
	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/speaker"
	"zonostream/internal/voices"
)

// openAIVoices are the voice names OpenAI's API documents. Clients send
// them unchanged (often with no way to type another), so each speaks in
// the model's default voice unless the library holds a voice of that
// name, which then wins.
var openAIVoices = []string{"alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse", "marin", "cedar"}

// DefaultVoice names the model's own voice: the speaker conditioner left
// unconditional.
const DefaultVoice = "default"

// SpeakerModel locates the speaker-embedding model's two files, for
// voices created from uploaded clips; empty when it is not installed.
type SpeakerModel struct {
	Weights, LDA string
}

// voiceByName resolves a voice name: "" or "default", a saved voice, or
// an OpenAI name. It returns the embedding (nil: the default voice) and
// the name to log.
func (s *Server) voiceByName(name string) ([]float32, string, *apiError) {
	if name == "" || strings.EqualFold(name, DefaultVoice) {
		return nil, DefaultVoice, nil
	}
	if s.lib != nil {
		v, err := s.lib.Get(name)
		if err == nil {
			return v.Embedding, v.Name, nil
		}
		if !errors.Is(err, voices.ErrNotFound) && voices.CheckName(name) == nil {
			return nil, "", s.libraryError(fmt.Sprintf("the saved voice %q cannot be read", name), err)
		}
	}
	for _, o := range openAIVoices {
		if strings.EqualFold(o, name) {
			return nil, o, nil
		}
	}
	known := []string{DefaultVoice}
	if s.lib != nil {
		if vs, _, err := s.lib.List(); err == nil {
			known = append(known, voices.Names(vs)...)
		}
	}
	return nil, "", &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "voice", Code: "unknown_voice",
		Message: fmt.Sprintf("no voice is named %q; this server has: %s (and OpenAI's names, which speak in the default voice)", name, strings.Join(known, ", "))}
}

// voiceJSON is a voice as listed.
type voiceJSON struct {
	Name         string    `json:"name"`
	ClipSeconds  float64   `json:"clip_seconds,omitempty"`
	ClipSHA256   string    `json:"clip_sha256,omitempty"`
	SpeakerModel string    `json:"speaker_model,omitempty"`
	Created      time.Time `json:"created,omitzero"`
	BuiltIn      bool      `json:"built_in,omitempty"`
}

func (s *Server) listVoices(w http.ResponseWriter, r *http.Request) *apiError {
	out := struct {
		Voices  []voiceJSON `json:"voices"`
		Damaged []string    `json:"damaged,omitempty"`
	}{Voices: []voiceJSON{{Name: DefaultVoice, BuiltIn: true}}}
	if s.lib != nil {
		vs, damaged, err := s.lib.List()
		if err != nil {
			return s.libraryError("the voice library cannot be listed", err)
		}
		for _, v := range vs {
			out.Voices = append(out.Voices, voiceJSON{Name: v.Name, ClipSeconds: v.ClipSeconds, ClipSHA256: v.ClipSHA256, SpeakerModel: v.SpeakerModel, Created: v.Created})
		}
		for _, d := range damaged {
			out.Damaged = append(out.Damaged, d.File) // the file's name only: its path and error go to the log
			s.cfg.Log.Warn("damaged voice file", "file", d.File, "error", d.Err.Error())
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// addVoice makes a named voice from an uploaded clip: POST /v1/voices as
// multipart/form-data with fields name and file (the clip), and replace
// (true/false). The clip is embedded by the speaker model on the engine's
// device, in turn with the streams.
func (s *Server) addVoice(w http.ResponseWriter, r *http.Request, who string) *apiError {
	if s.lib == nil {
		return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Message: "this server has no voice library"}
	}
	if s.speaker.Weights == "" {
		return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "no_speaker_model",
			Message: "the speaker model is not installed, so clips cannot become voices: run 'zonos pull' on the server"}
	}
	doneReading, aerr := s.tryRead()
	if aerr != nil {
		return aerr
	}
	defer doneReading()
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.Limits.MaxClipBytes+64<<10)
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Param: "file",
				Message: fmt.Sprintf("the clip is over this server's %d-byte limit", s.cfg.Limits.MaxClipBytes)}
		}
		return badRequest("", "send the voice as multipart/form-data with fields name and file: %v", err)
	}
	defer r.MultipartForm.RemoveAll()
	name := r.FormValue("name")
	if err := voices.CheckName(name); err != nil {
		return badRequest("name", "%v", err)
	}
	replace := r.FormValue("replace") == "true"
	f, hdr, err := r.FormFile("file")
	if err != nil {
		return badRequest("file", "the form has no clip in its field \"file\"")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, s.cfg.Limits.MaxClipBytes+1))
	if err != nil {
		return badRequest("file", "reading the clip: %v", err)
	}
	if int64(len(data)) > s.cfg.Limits.MaxClipBytes {
		return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Param: "file",
			Message: fmt.Sprintf("the clip is over this server's %d-byte limit", s.cfg.Limits.MaxClipBytes)}
	}
	if !replace {
		if _, err := s.lib.Get(name); err == nil {
			return &apiError{Status: http.StatusConflict, Type: "invalid_request_error", Param: "name",
				Message: fmt.Sprintf("a voice named %q exists; send replace=true to replace it", name)}
		}
	}
	clip, err := audio.DecodeClip(bytes.NewReader(data), hdr.Filename, audio.ClipOptions{MaxSeconds: s.cfg.Limits.MaxClipSeconds, Rate: speaker.SampleRate})
	if err != nil {
		return badRequest("file", "%v", err)
	}
	if err := speaker.CheckSamples(clip.Samples); err != nil {
		return badRequest("file", "%v", err)
	}
	release, aerr := s.adm.admit(r.Context(), who, nil)
	if aerr != nil {
		return aerr
	}
	vec, model, err := s.embed(r.Context(), clip.Samples)
	release()
	if err != nil {
		if r.Context().Err() != nil {
			return &apiError{Status: 499, Type: "cancelled", Message: "the client went away"}
		}
		return s.libraryError("the clip cannot be embedded", err)
	}
	v := voices.Voice{Name: name, Embedding: vec, ClipSHA256: sha256Hex(data), ClipSeconds: clip.Seconds(), SpeakerModel: model, Created: time.Now().UTC()}
	if err := s.lib.Add(v, replace); err != nil {
		if errors.Is(err, voices.ErrExists) {
			return &apiError{Status: http.StatusConflict, Type: "invalid_request_error", Param: "name", Message: err.Error()}
		}
		return s.libraryError("the voice cannot be saved", err)
	}
	out := voiceJSON{Name: v.Name, ClipSeconds: v.ClipSeconds, ClipSHA256: v.ClipSHA256, SpeakerModel: v.SpeakerModel, Created: v.Created}
	if clip.Notice != "" {
		w.Header().Set("X-Zonos-Notice", clip.Notice)
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// embed runs the speaker model over a 16 kHz clip, on the engine's
// backend when it has the speaker ops, else on the CPU. The caller holds
// an engine slot, so nothing else runs on the device meanwhile.
func (s *Server) embed(ctx context.Context, samples []float32) ([]float32, string, error) {
	sb, ok := s.eng.Backend().(compute.SpeakerBackend)
	if !ok {
		sb = cpu.New(0)
	}
	m, err := speaker.Load(s.speaker.Weights, s.speaker.LDA, sb)
	if err != nil {
		return nil, "", err
	}
	defer m.Close()
	vec, err := m.Embed(ctx, samples)
	return vec, m.ID, err
}

func (s *Server) removeVoice(w http.ResponseWriter, r *http.Request) *apiError {
	if s.lib == nil {
		return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Message: "this server has no voice library"}
	}
	name := r.PathValue("name")
	if err := voices.CheckName(name); err != nil {
		return badRequest("name", "%v", err)
	}
	if err := s.lib.Remove(name); err != nil {
		if errors.Is(err, voices.ErrNotFound) {
			return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "name", Code: "unknown_voice", Message: err.Error()}
		}
		return s.libraryError("the voice cannot be deleted", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// libraryError answers a failure of the server's own files with what
// failed, and logs the detail: errors from the file system name paths on
// the server, which a client has no business seeing.
func (s *Server) libraryError(what string, err error) *apiError {
	s.cfg.Log.Error(what, "error", err.Error())
	return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: what + " (the server's log says why)"}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
