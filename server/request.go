package server

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"time"

	"zonostream/audio/encode"
	"zonostream/engine"
	"zonostream/internal/voices"
)

// ttsRequest is the native request (POST /v1/tts, and the WebSocket's
// start message): every Zonos control. Absent fields take Zonos' own
// defaults (engine.DefaultKnobs); unknown fields are refused, so a typo
// in a knob's name is reported instead of silently ignored.
type ttsRequest struct {
	Text     string `json:"text"`
	Language string `json:"language"`
	// The voice: a saved voice's name (or "default"), a 128-value
	// speaker embedding, or a clip to clone (base64 WAV/FLAC/MP3/Ogg).
	Voice            string    `json:"voice"`
	SpeakerEmbedding []float32 `json:"speaker_embedding"`
	SpeakerAudio     string    `json:"speaker_audio"`
	// AudioPrefix is a clip (base64) the speech continues from.
	AudioPrefix string `json:"audio_prefix"`

	Emotion       map[string]float32 `json:"emotion"`
	Fmax          *float32           `json:"fmax"`
	PitchStd      *float32           `json:"pitch_std"`
	SpeakingRate  *float32           `json:"speaking_rate"`
	VQScore       *float32           `json:"vq_score"`
	DNSMOS        *float32           `json:"dnsmos"`
	CTCLoss       *float32           `json:"ctc_loss"`
	SpeakerNoised *bool              `json:"speaker_noised"`
	CFGScale      *float32           `json:"cfg_scale"`
	Unconditional *[]string          `json:"unconditional"`
	Sampling      *samplingJSON      `json:"sampling"`
	Seed          *uint64            `json:"seed"`
	MaxSeconds    float64            `json:"max_seconds"`

	// Long texts (engine.LongForm; 0 context parts or trim frames: none).
	PartPhonemes      int      `json:"part_phonemes"`
	ContextParts      *int     `json:"context_parts"`
	Anchor            *bool    `json:"anchor"`
	TrimFrames        *int     `json:"trim_frames"`
	MaxContextSeconds *float64 `json:"max_context_seconds"`

	Format     string `json:"format"`      // wav (default), pcm, flac, opus, mp3
	SampleRate int    `json:"sample_rate"` // 0: 44100
	Bitrate    int    `json:"bitrate"`     // opus and mp3, bits per second

	// FrameEvents asks the WebSocket for a "frame" event per frame.
	FrameEvents bool `json:"frame_events"`
}

type samplingJSON struct {
	Temperature       *float32 `json:"temperature"`
	TopP              *float32 `json:"top_p"`
	TopK              *int     `json:"top_k"`
	MinP              *float32 `json:"min_p"`
	Linear            *float32 `json:"linear"`
	Conf              *float32 `json:"conf"`
	Quad              *float32 `json:"quad"`
	RepetitionPenalty *float32 `json:"repetition_penalty"`
	RepetitionWindow  *int     `json:"repetition_window"`
}

// plan is a request ready to start: the engine request without the
// parts that need the engine (a clip to embed or encode), and the output.
type plan struct {
	req          engine.Request
	voice        string // the voice's name, for logs
	speakerAudio []byte // a clip to embed after admission
	prefixAudio  []byte // a clip to encode after admission
	format       encode.Format
	opts         encode.Options
	rate         int  // the output's sample rate
	sse          bool // the audio framed as OpenAI's server-sent events (sse.go)
}

func setF(dst *float32, v *float32) {
	if v != nil {
		*dst = *v
	}
}

// plan checks r with the rules the CLI uses and turns it into a plan.
func (s *Server) planTTS(r *ttsRequest, needText bool) (*plan, *apiError) {
	if needText && strings.TrimSpace(r.Text) == "" {
		return nil, badRequest("text", "text is empty; give the text to speak")
	}
	if len(r.Text) > s.cfg.Limits.MaxTextBytes {
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Param: "text",
			Message: fmt.Sprintf("text of %d bytes exceeds this server's %d-byte limit; split it into several requests", len(r.Text), s.cfg.Limits.MaxTextBytes)}
	}
	k := engine.DefaultKnobs()
	if r.Emotion != nil {
		k.Emotion = [8]float32{}
		for name, v := range r.Emotion {
			i := emotionIndex(name)
			if i < 0 {
				return nil, badRequest("emotion", "emotion %q is not one of %s", name, strings.Join(engine.Emotions[:], ", "))
			}
			k.Emotion[i] = v
		}
	}
	setF(&k.Fmax, r.Fmax)
	setF(&k.PitchStd, r.PitchStd)
	setF(&k.SpeakingRate, r.SpeakingRate)
	setF(&k.VQScore, r.VQScore)
	setF(&k.DNSMOS, r.DNSMOS)
	setF(&k.CTCLoss, r.CTCLoss)
	setF(&k.CFGScale, r.CFGScale)
	if r.SpeakerNoised != nil {
		k.SpeakerNoised = *r.SpeakerNoised
	}
	if r.Unconditional != nil {
		k.Unconditional = *r.Unconditional
	}
	if sp := r.Sampling; sp != nil {
		p := &k.Sampling
		setF(&p.Temperature, sp.Temperature)
		setF(&p.TopP, sp.TopP)
		setF(&p.MinP, sp.MinP)
		setF(&p.Linear, sp.Linear)
		setF(&p.Conf, sp.Conf)
		setF(&p.Quad, sp.Quad)
		setF(&p.RepetitionPenalty, sp.RepetitionPenalty)
		if sp.TopK != nil {
			p.TopK = *sp.TopK
		}
		if sp.RepetitionWindow != nil {
			p.RepetitionWindow = *sp.RepetitionWindow
		}
	}
	if err := k.Sampling.Validate(); err != nil {
		return nil, badRequest("sampling", "%v", err)
	}
	for _, u := range k.Unconditional {
		if !s.eng.Model().HasConditioner(u) {
			return nil, badRequest("unconditional", "unconditional %q: the model has no conditioner of that name (e.g. speaker, emotion, vqscore_8, dnsmos_ovrl)", u)
		}
	}
	ctxParts, anchor, trim, maxCtx := 1, true, 3, 0.0
	if r.ContextParts != nil {
		ctxParts = *r.ContextParts
	}
	if r.Anchor != nil {
		anchor = *r.Anchor
	}
	if r.TrimFrames != nil {
		trim = *r.TrimFrames
	}
	if r.MaxContextSeconds != nil {
		maxCtx = *r.MaxContextSeconds
	}
	if ctxParts < 0 || trim < 0 || maxCtx < 0 {
		return nil, badRequest("context_parts", "context_parts, trim_frames and max_context_seconds must be ≥ 0")
	}
	if r.MaxSeconds > s.cfg.Limits.MaxSeconds {
		return nil, badRequest("max_seconds", "max_seconds %g exceeds this server's limit of %g", r.MaxSeconds, s.cfg.Limits.MaxSeconds)
	}
	if r.MaxSeconds == 0 {
		r.MaxSeconds = s.cfg.Limits.MaxSeconds
	}
	seed := s.seed()
	if r.Seed != nil {
		seed = *r.Seed
	}
	p := &plan{req: engine.Request{Text: r.Text, Language: r.Language, Knobs: k, Seed: seed, MaxSeconds: r.MaxSeconds,
		PhonemeBudget: r.PartPhonemes, LongForm: engine.LongFormOf(ctxParts, anchor, trim, maxCtx), DiscardCodes: true}}
	if err := p.req.Check(); err != nil && (needText || r.Text != "") {
		return nil, badRequest("", "%v", err)
	}

	chosen := 0
	for _, given := range []bool{r.Voice != "", r.SpeakerEmbedding != nil, r.SpeakerAudio != ""} {
		if given {
			chosen++
		}
	}
	if chosen > 1 {
		return nil, badRequest("voice", "give one of voice, speaker_embedding and speaker_audio")
	}
	switch {
	case r.SpeakerEmbedding != nil:
		if len(r.SpeakerEmbedding) != voices.EmbeddingSize {
			return nil, badRequest("speaker_embedding", "speaker_embedding has %d values, want %d", len(r.SpeakerEmbedding), voices.EmbeddingSize)
		}
		p.req.Speaker, p.voice = r.SpeakerEmbedding, "(embedding)"
	case r.SpeakerAudio != "":
		clip, aerr := s.decodeClipField("speaker_audio", r.SpeakerAudio)
		if aerr != nil {
			return nil, aerr
		}
		p.speakerAudio, p.voice = clip, "(clip)"
	default:
		emb, name, aerr := s.voiceByName(r.Voice)
		if aerr != nil {
			return nil, aerr
		}
		p.req.Speaker, p.voice = emb, name
	}
	if r.AudioPrefix != "" {
		clip, aerr := s.decodeClipField("audio_prefix", r.AudioPrefix)
		if aerr != nil {
			return nil, aerr
		}
		p.prefixAudio = clip
	}
	if r.Format == "" {
		r.Format = string(encode.WAV)
	}
	f, err := encode.Parse(r.Format)
	if err != nil {
		return nil, badRequest("format", "%v", err)
	}
	if r.SampleRate < 0 || r.SampleRate > 192000 || r.Bitrate < 0 {
		return nil, badRequest("sample_rate", "sample_rate must be in [0, 192000] and bitrate ≥ 0")
	}
	p.format, p.opts = f, encode.Options{Rate: r.SampleRate, Bitrate: r.Bitrate}
	// The encoder checks its options (an MP3 rate, an Opus bitrate) as it
	// starts: start one on nothing, so a mistake is a 400, not a 500.
	probe, err := encode.New(f, io.Discard, engine.SampleRate, p.opts)
	if err != nil {
		return nil, badRequest("sample_rate", "%v", err)
	}
	p.rate = probe.Rate()
	_ = probe.Close()
	return p, nil
}

func emotionIndex(name string) int {
	for i, e := range engine.Emotions {
		if strings.EqualFold(e, name) {
			return i
		}
	}
	return -1
}

// decodeClipField reads a base64 clip from a JSON field, within the clip
// size limit; the decoding itself waits until it is needed.
func (s *Server) decodeClipField(field, b64 string) ([]byte, *apiError) {
	if int64(base64.StdEncoding.DecodedLen(len(b64))) > s.cfg.Limits.MaxClipBytes+3 {
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Param: field,
			Message: fmt.Sprintf("%s is over this server's %d-byte clip limit", field, s.cfg.Limits.MaxClipBytes)}
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, badRequest(field, "%s is not base64: %v", field, err)
	}
	return data, nil
}

// bodyReadTimeout bounds reading a request's body (JSON or an upload).
const bodyReadTimeout = 60 * time.Second

// decodeJSON reads a JSON body of at most limit bytes into v. strict
// refuses fields v does not have.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any, strict bool) *apiError {
	// The Content-Type is not checked: `curl -d` labels JSON as a form,
	// and the body is read as JSON whatever its label (a browser on
	// another origin is stopped by guard, labels notwithstanding).
	// A client that trickles its body holds a handler, not the engine
	// (admission comes after), but not for long.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	body := http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(body)
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return jsonError(err, limit)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return jsonError(err, limit)
		}
		return badRequest("", "the body holds more than one JSON value")
	}
	return nil
}

func jsonError(err error, limit int64) *apiError {
	var tooBig *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &tooBig):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Message: fmt.Sprintf("the request body is over this server's %d-byte limit", limit)}
	case errors.As(err, &typeErr):
		t := typeErr.Type
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		return badRequest(typeErr.Field, "field %q must be %s, not a JSON %s", typeErr.Field, jsonKind(t.Kind()), typeErr.Value)
	case errors.As(err, &syntax):
		return badRequest("", "the body is not valid JSON: %v (at byte %d)", err, syntax.Offset)
	case errors.Is(err, io.EOF):
		return badRequest("", "the body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "the body ends in the middle of its JSON")
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return badRequest(strings.Trim(f, `"`), "unknown field %s", f)
	}
	return badRequest("", "the body is not a valid request: %v", err)
}

func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int64, reflect.Uint64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return k.String()
}
