package server

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"zonostream/audio/encode"
	"zonostream/engine"
	"zonostream/internal/voices"
)

// TestTTSStreamsTheEngineAudio: POST /v1/tts answers a WAV streamed in
// chunks whose samples are exactly the engine's for the same request
// alone, with the engine's TTFA in a trailer. (OpenAI's body names no
// seed: TestSpeechSpeedMapsToSpeakingRate compares it with this one.)
func TestTTSStreamsTheEngineAudio(t *testing.T) {
	e := tinyEngine(t)
	ts := serve(t, e, Config{})
	resp := ts.post(t, "/v1/tts", map[string]any{"text": "Hello there.", "seed": 7, "format": "wav"})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "audio/wav" {
		t.Errorf("Content-Type %q", ct)
	}
	if len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
		t.Errorf("transfer encoding %v: want chunked (streamed)", resp.TransferEncoding)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	rate, got := streamWAV(t, body)
	if rate != engine.SampleRate {
		t.Fatalf("rate %d", rate)
	}
	if resp.Trailer.Get("X-Zonos-TTFA-Ms") == "" || resp.Trailer.Get("X-Zonos-Error") != "" {
		t.Errorf("trailers %v: want the engine's TTFA and no error", resp.Trailer)
	}
	want := alone(t, e, engine.Request{Text: "Hello there.", Knobs: engine.DefaultKnobs(), Seed: 7, MaxSeconds: 0.5, DiscardCodes: true})
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%d samples over HTTP, %d alone", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("sample %d: %d over HTTP, %d alone", i, got[i], want[i])
		}
	}
}

// TestSpeechOpenAIShape: the OpenAI body with its defaults (mp3), every
// format, voice names, speed, instructions and unknown fields.
func TestSpeechOpenAIShape(t *testing.T) {
	ts := serve(t, tinyEngine(t), Config{})
	for _, f := range encode.Formats {
		t.Run(string(f), func(t *testing.T) {
			resp := ts.post(t, "/v1/audio/speech", map[string]any{"model": "tts-1", "input": "Hi.", "voice": "alloy",
				"response_format": f, "speed": 1.25, "instructions": "Speak warmly.", "user": "someone", "stream_format": "audio"})
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || len(body) == 0 {
				t.Fatalf("status %d, %d bytes: %s", resp.StatusCode, len(body), body[:min(len(body), 200)])
			}
			if ct := resp.Header.Get("Content-Type"); ct != f.ContentType() {
				t.Errorf("Content-Type %q, want %q", ct, f.ContentType())
			}
			wantRate := "44100"
			switch f {
			case encode.PCM:
				wantRate = "24000" // OpenAI's pcm rate
			case encode.Opus:
				wantRate = "48000"
			}
			if got := resp.Header.Get("X-Zonos-Sample-Rate"); got != wantRate {
				t.Errorf("sample rate %s, want %s", got, wantRate)
			}
		})
	}
	t.Run("default-format-is-mp3", func(t *testing.T) {
		resp := ts.post(t, "/v1/audio/speech", map[string]any{"model": "tts-1", "input": "Hi.", "voice": "nova"})
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "audio/mpeg" {
			t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
		}
	})
	t.Run("voice-object", func(t *testing.T) {
		resp := ts.post(t, "/v1/audio/speech", `{"model":"tts-1","input":"Hi.","voice":{"id":"default"},"response_format":"pcm"}`)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

// TestSpeechSpeedMapsToSpeakingRate: OpenAI's speed s conditions Zonos'
// speaking rate at 15·s: with the seed pinned, the audio of speed 2 is
// that of the native request with speaking_rate 30, and not that of 15.
func TestSpeechSpeedMapsToSpeakingRate(t *testing.T) {
	ts := serve(t, tinyEngine(t), Config{})
	ts.Server.seed = func() uint64 { return 9 }
	get := func(path string, body map[string]any) []int16 {
		resp := ts.post(t, path, body)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", path, resp.StatusCode, data)
		}
		_, s := streamWAV(t, data)
		return s
	}
	fast := get("/v1/audio/speech", map[string]any{"model": "tts-1", "input": "Quick now.", "voice": "alloy", "response_format": "wav", "speed": 2})
	if !equal16(fast, get("/v1/tts", map[string]any{"text": "Quick now.", "speaking_rate": 30})) {
		t.Error("speed 2 is not speaking_rate 30")
	}
	if equal16(fast, get("/v1/tts", map[string]any{"text": "Quick now.", "speaking_rate": 15})) {
		t.Error("speed 2 sounds like speaking_rate 15")
	}
}

func equal16(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSpeechBadRequests: each mistake is a 4xx with an OpenAI-style error
// that names the problem, and nothing is generated.
func TestSpeechBadRequests(t *testing.T) {
	ts := serve(t, tinyEngine(t), Config{Limits: Limits{MaxTextBytes: 64, MaxBodyBytes: 1024}})
	cases := []struct {
		name, body string
		status     int
		says       string
	}{
		{"malformed", `{"input": "Hi.",`, 400, "ends in the middle"},
		{"not-json", `hello`, 400, "not valid JSON"},
		{"empty-body", ``, 400, "empty"},
		{"two-values", `{"input":"Hi."} {}`, 400, "more than one"},
		{"wrong-type", `{"input": 5}`, 400, `"input" must be a string`},
		{"speed-type", `{"input": "Hi.", "speed": "fast"}`, 400, `"speed" must be a number`},
		{"empty-input", `{"input": "  "}`, 400, "input is empty"},
		{"oversized-input", `{"input": "` + strings.Repeat("a ", 40) + `"}`, 413, "64-byte limit"},
		{"oversized-body", `{"input": "Hi.", "pad": "` + strings.Repeat("x", 2000) + `"}`, 413, "1024-byte limit"},
		{"unknown-voice", `{"input": "Hi.", "voice": "nobody"}`, 400, `no voice is named "nobody"`},
		{"unknown-format", `{"input": "Hi.", "response_format": "aac"}`, 400, "wav, pcm, flac, opus, mp3"},
		{"speed-range", `{"input": "Hi.", "speed": 9}`, 400, "between 0.25 and 4"},
		{"stream-format", `{"input": "Hi.", "stream_format": "json"}`, 400, "stream_format"},
		{"bad-language", `{"text": "Hi.", "language": "xx-nowhere"}`, 400, "xx-nowhere"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := "/v1/audio/speech"
			if strings.Contains(c.body, `"text"`) {
				path = "/v1/tts"
			}
			msg := apiErr(t, ts.post(t, path, c.body), c.status)
			if !strings.Contains(msg, c.says) {
				t.Errorf("message %q does not say %q", msg, c.says)
			}
		})
	}
	if n := metricValue(t, ts, `zonos_requests_total{endpoint="speech",outcome="ok"}`); n != 0 {
		t.Errorf("%g requests ok: a bad request was spoken", n)
	}
}

// TestTTSNativeControls: the native endpoint refuses unknown fields (a
// mistyped knob), checks knobs with the CLI's rules, and takes a speaker
// embedding, a saved voice and an audio prefix.
func TestTTSNativeControls(t *testing.T) {
	e := tinyEngine(t)
	ts := serve(t, e, Config{})
	msg := apiErr(t, ts.post(t, "/v1/tts", `{"text": "Hi.", "pitch_sd": 30}`), 400)
	if !strings.Contains(msg, "pitch_sd") {
		t.Errorf("unknown field: %q", msg)
	}
	for body, says := range map[string]string{
		`{"text": "Hi.", "emotion": {"joy": 1}}`:                        `"joy"`,
		`{"text": "Hi.", "emotion": {"happiness": 0}}`:                  "sum to 0",
		`{"text": "Hi.", "sampling": {"temperature": -1}}`:              "temperature",
		`{"text": "Hi.", "speaker_embedding": [1, 2]}`:                  "2 values",
		`{"text": "Hi.", "voice": "default", "speaker_embedding": [1]}`: "one of voice",
		`{"text": "Hi.", "max_seconds": 100}`:                           "max_seconds",
		`{"text": "Hi.", "audio_prefix": "!!!"}`:                        "base64",
		`{"text": "Hi.", "unconditional": ["nonsense"]}`:                "nonsense",
	} {
		if msg := apiErr(t, ts.post(t, "/v1/tts", body), 400); !strings.Contains(msg, says) {
			t.Errorf("%s: message %q does not say %q", body, msg, says)
		}
	}

	emb := make([]float32, 128)
	for i := range emb {
		emb[i] = float32(i%7) / 7
	}
	knobs := engine.DefaultKnobs()
	knobs.PitchStd, knobs.Emotion = 60, [8]float32{1, 0, 0, 0, 0, 0, 0, 0}
	want := alone(t, e, engine.Request{Text: "Voice test.", Knobs: knobs, Speaker: emb, Seed: 3, MaxSeconds: 0.5, DiscardCodes: true})
	body := map[string]any{"text": "Voice test.", "speaker_embedding": emb, "pitch_std": 60, "emotion": map[string]float32{"happiness": 1}, "seed": 3}
	check := func(name string, body map[string]any) {
		resp := ts.post(t, "/v1/tts", body)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", name, resp.StatusCode, data)
		}
		if _, got := streamWAV(t, data); !equal16(got, want) {
			t.Errorf("%s: %d samples differ from the same request alone (%d)", name, len(got), len(want))
		}
	}
	check("embedding", body)
	if err := ts.lib.Add(voicesVoice("Narrator", emb), false); err != nil {
		t.Fatal(err)
	}
	delete(body, "speaker_embedding")
	body["voice"] = "narrator" // names ignore case
	check("saved voice", body)

	// An audio prefix: its frames are encoded by the engine's DAC and the
	// speech continues from them, as the CLI's --prefix does.
	prefix := toneWAV(t, engine.SampleRate, 512*4)
	codes, err := e.EncodePrefix(toneSamples(engine.SampleRate, 512*4))
	if err != nil {
		t.Fatal(err)
	}
	want = alone(t, e, engine.Request{Text: "Go on.", Knobs: engine.DefaultKnobs(), AudioPrefix: codes, Seed: 4, MaxSeconds: 0.5, DiscardCodes: true})
	check("prefix", map[string]any{"text": "Go on.", "audio_prefix": prefix, "seed": 4})
}

// metricValue reads one sample from /metrics (0 when absent).
func metricValue(t *testing.T, ts *testServer, series string) float64 {
	t.Helper()
	resp := ts.get(t, "/metrics")
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if err := json.Unmarshal([]byte(v), &f); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

func voicesVoice(name string, emb []float32) voices.Voice {
	return voices.Voice{Name: name, Embedding: emb, ClipSeconds: 1, Created: time.Now().UTC()}
}

// toneSamples is n samples of a 140 Hz tone at rate.
func toneSamples(rate, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = 0.4 * float32(math.Sin(2*math.Pi*140*float64(i)/float64(rate)))
	}
	return s
}

// toneWAV is toneSamples as a float32 WAV file in base64.
func toneWAV(t *testing.T, rate, n int) string {
	return base64.StdEncoding.EncodeToString(toneFile(t, rate, n))
}

func toneFile(t *testing.T, rate, n int) []byte { return wavFile(t, rate, toneSamples(rate, n)) }

// wavFile is samples as a streamed 16-bit WAV, as this server sends
// them (sizes unknown), so an upload of the server's own output is tried.
func wavFile(t *testing.T, rate int, samples []float32) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := encode.New(encode.WAV, &buf, rate, encode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(samples); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSpeechServerSentEvents: stream_format "sse" sends OpenAI's
// speech.audio.delta events whose base64 audio, joined, is the same file
// as the plain body of the same request, then speech.audio.done.
func TestSpeechServerSentEvents(t *testing.T) {
	ts := serve(t, tinyEngine(t), Config{})
	ts.Server.seed = func() uint64 { return 4 }
	body := map[string]any{"model": "tts-1", "input": "Events now.", "voice": "alloy", "response_format": "wav"}
	plain := ts.post(t, "/v1/audio/speech", body)
	want, _ := io.ReadAll(plain.Body)
	plain.Body.Close()
	body["stream_format"] = "sse"
	resp := ts.post(t, "/v1/audio/speech", body)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	var got []byte
	var types []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Audio string `json:"audio"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		types = append(types, ev.Type)
		if ev.Type == "speech.audio.delta" {
			b, err := base64.StdEncoding.DecodeString(ev.Audio)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, b...)
		}
	}
	if len(types) < 2 || types[len(types)-1] != "speech.audio.done" {
		t.Fatalf("events %v: want deltas then speech.audio.done", types)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the events carry %d bytes, the plain body %d: not the same file", len(got), len(want))
	}
}
