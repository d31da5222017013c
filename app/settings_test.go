package app

import (
	"math"
	"strings"
	"testing"

	"zonostream/engine"
	"zonostream/server"
)

type mapPrefs map[string]string

func (m mapPrefs) String(k string) string { return m[k] }
func (m mapPrefs) SetString(k, v string)  { m[k] = v }

func TestSettingsRoundTrip(t *testing.T) {
	p := mapPrefs{}
	if got := LoadSettings(p); got.Language != "en-us" || got.Variant != "hybrid" || !got.RandomSeed {
		t.Fatalf("fresh settings %+v", got)
	}
	s := DefaultSettings()
	s.Text, s.Language, s.Variant = "Hola.", "es", "transformer"
	s.Emotion[0], s.CFGScale, s.TopK, s.RandomSeed, s.Seed = 0.9, 3.1, 50, false, 12345
	s.SetUnconditional("emotion", true)
	s.Serve, s.ServeListen = true, "127.0.0.1:9123"
	SaveSettings(p, s)
	got := LoadSettings(p)
	if !got.Serve || got.ServeListen != "127.0.0.1:9123" {
		t.Errorf("serve setting round trip: %v %q", got.Serve, got.ServeListen)
	}
	if got.Text != s.Text || got.Language != "es" || got.Variant != "transformer" || got.Emotion[0] != 0.9 ||
		got.CFGScale != 3.1 || got.TopK != 50 || got.RandomSeed || got.Seed != 12345 || !got.IsUnconditional("emotion") {
		t.Fatalf("round trip: got %+v, want %+v", got, s)
	}
}

func TestSettingsSanitize(t *testing.T) {
	p := mapPrefs{settingsKey: `{"language":"klingon","variant":"huge","cfg_scale":1,"top_k":-3,"fmax":1e9,"pitch_std":NaN}`}
	got := LoadSettings(p) // invalid JSON (NaN): defaults
	if got.Language != "en-us" {
		t.Fatalf("bad JSON gave %+v", got)
	}
	p[settingsKey] = `{"language":"klingon","variant":"huge","cfg_scale":1,"top_k":-3,"fmax":1e9,"unconditional":["emotion","bogus","emotion"]}`
	got = LoadSettings(p)
	if got.Language != "en-us" || got.Variant != "hybrid" || got.CFGScale != CFGScaleRange.Min || got.TopK != 0 || got.Fmax != 24000 {
		t.Fatalf("sanitize: %+v", got)
	}
	if got.Serve || got.ServeListen != server.DefaultListen {
		t.Errorf("serve setting absent from the file: %v %q", got.Serve, got.ServeListen)
	}
	if len(got.Unconditional) != 1 || got.Unconditional[0] != "emotion" {
		t.Fatalf("unconditional keys %v", got.Unconditional)
	}
	if r := (Range{0, 1, 0.1}); r.Clamp(math.NaN()) != 0 || r.Clamp(2) != 1 {
		t.Fatal("clamp")
	}
}

func TestDefaultsMatchEngine(t *testing.T) {
	k := DefaultSettings().Knobs()
	d := engine.DefaultKnobs()
	if k.CFGScale != d.CFGScale || k.Fmax != d.Fmax || k.SpeakingRate != d.SpeakingRate || k.Sampling != d.Sampling ||
		k.VQScore != d.VQScore || k.DNSMOS != d.DNSMOS || k.PitchStd != d.PitchStd {
		t.Fatalf("knobs %+v\nwant %+v", k, d)
	}
	for i := range k.Emotion {
		if math.Abs(float64(k.Emotion[i]-d.Emotion[i])) > 1e-4 {
			t.Fatalf("emotion %d: %g want %g", i, k.Emotion[i], d.Emotion[i])
		}
	}
}

func TestBuildRequest(t *testing.T) {
	s := DefaultSettings()
	if _, _, err := BuildRequest(s, Voice{}, nil); err == nil || !strings.Contains(err.Error(), "type some text") {
		t.Fatalf("empty text: %v", err)
	}
	s.Text = "  Hello.  "
	s.RandomSeed = false
	s.Seed = 9
	r, notes, err := BuildRequest(s, Voice{Speaker: make([]float32, 128)}, func() uint64 { return 77 })
	if err != nil || r.Text != "Hello." || r.Seed != 9 || len(notes) != 0 || len(r.Speaker) != 128 {
		t.Fatalf("request %+v notes %v err %v", r, notes, err)
	}
	s.RandomSeed = true
	s.SetUnconditional("speaker", true)
	r, _, _ = BuildRequest(s, Voice{Speaker: make([]float32, 128)}, func() uint64 { return 77 })
	if r.Seed != 77 || r.Speaker != nil {
		t.Fatalf("random seed %d, speaker %v", r.Seed, r.Speaker)
	}
	s.Emotion = [8]float64{}
	if _, _, err := BuildRequest(s, Voice{}, nil); err == nil {
		t.Fatal("all-zero emotions accepted")
	}
	s.SetUnconditional("emotion", true)
	if _, _, err := BuildRequest(s, Voice{}, nil); err != nil {
		t.Fatalf("unconditional emotion: %v", err)
	}
}

func TestBuildRequestTrimsLongText(t *testing.T) {
	s := DefaultSettings()
	s.Text = strings.Repeat("Ünïcode sentence. ", engine.MaxTextBytes/10)
	r, notes, err := BuildRequest(s, Voice{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Text) > engine.MaxTextBytes || !strings.HasSuffix(r.Text, ".") || len(notes) != 1 {
		t.Fatalf("trimmed to %d bytes (ends %q), notes %v", len(r.Text), r.Text[len(r.Text)-5:], notes)
	}
}

// TestLongFormSettings: the Long texts settings reach the request (0 parts
// of context speaks each part afresh), are clamped into their ranges, and
// settings saved before they existed load with the engine's defaults.
func TestLongFormSettings(t *testing.T) {
	s := DefaultSettings()
	s.Text = "One. Two."
	r, _, err := BuildRequest(s, Voice{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.PhonemeBudget != engine.DefaultPhonemeBudget || r.LongForm != (engine.LongForm{ContextParts: 1, TrimFrames: 3}) {
		t.Errorf("defaults: budget %d, %+v", r.PhonemeBudget, r.LongForm)
	}
	s.PartPhonemes, s.ContextParts, s.Anchor, s.TrimFrames = 80, 0, false, 0
	r, _, _ = BuildRequest(s, Voice{}, nil)
	if r.PhonemeBudget != 80 || r.LongForm.ContextParts >= 0 || !r.LongForm.NoAnchor || r.LongForm.TrimFrames >= 0 {
		t.Errorf("afresh, no trim: budget %d, %+v", r.PhonemeBudget, r.LongForm)
	}
	s.PartPhonemes, s.ContextParts, s.TrimFrames = 100000, 99, -5
	if c := s.Sanitize(); c.PartPhonemes != 400 || c.ContextParts != 4 || c.TrimFrames != 0 {
		t.Errorf("sanitized: %d phonemes, %d parts, %d frames", c.PartPhonemes, c.ContextParts, c.TrimFrames)
	}
	old := mapPrefs{settingsKey: `{"text":"hi","language":"en-us"}`}
	if l := LoadSettings(old); l.PartPhonemes != engine.DefaultPhonemeBudget || l.ContextParts != 1 || !l.Anchor || l.TrimFrames != 3 {
		t.Errorf("older preferences: %+v", l)
	}
}

// TestServeSettingFromFile: the serve setting is remembered, an address
// edited by hand is kept even where the server will refuse it (the line
// shows why), and a blank one is the default.
func TestServeSettingFromFile(t *testing.T) {
	p := mapPrefs{}
	s := DefaultSettings()
	s.Serve, s.ServeListen = true, "[::1]:9001"
	SaveSettings(p, s)
	if got := LoadSettings(p); !got.Serve || got.ServeListen != "[::1]:9001" {
		t.Errorf("round trip: %v %q", got.Serve, got.ServeListen)
	}
	for raw, want := range map[string]string{
		`{"serve":true,"serve_listen":"0.0.0.0:8790"}`: "0.0.0.0:8790",
		`{"serve":true,"serve_listen":"  "}`:           server.DefaultListen,
		`{"serve":true,"serve_listen":"no port"}`:      "no port",
	} {
		p[settingsKey] = raw
		if got := LoadSettings(p); !got.Serve || got.ServeListen != want {
			t.Errorf("%s: %v %q, want %q", raw, got.Serve, got.ServeListen, want)
		}
	}
}
