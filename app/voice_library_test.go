package app

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"zonostream/internal/voices"
)

// libraryUI is the window with a voice library in a fresh folder.
func libraryUI(t *testing.T) (testUI, *voices.Library) {
	t.Helper()
	lib := &voices.Library{Dir: filepath.Join(t.TempDir(), "voices")}
	return newTestUI(t, false, func(c *Config) { c.Voices = lib }), lib
}

// embeddingOf is a voice embedding distinct for each seed.
func embeddingOf(seed float32) []float32 {
	e := make([]float32, voices.EmbeddingSize)
	for i := range e {
		e[i] = seed * float32(i%7-3) / 10
	}
	return e
}

// modelEncoder embeds every clip as emb and names its model, as
// SpeakerEncoder does.
type modelEncoder struct {
	emb   []float32
	calls atomic.Int32
}

func (m *modelEncoder) Embed(context.Context, []float32, int) ([]float32, error) {
	m.calls.Add(1)
	return m.emb, nil
}

func (m *modelEncoder) ModelID() string { return strings.Repeat("5e", 32) }

// TestSavedVoicePicker: the picker lists the library's voices and names a
// damaged file; picking a voice makes it the speaker with no clip, and a
// clip or Clear drops it again.
func TestSavedVoicePicker(t *testing.T) {
	lib := &voices.Library{Dir: t.TempDir()}
	for i, n := range []string{"Bob", "anna"} {
		if err := lib.Add(voices.Voice{Name: n, Embedding: embeddingOf(float32(i + 1)), ClipSeconds: 9.5, Created: time.Now()}, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(lib.Dir, "broken.json"), []byte(`{"format": "zonos-stream voice", "version": 1, "name": "broken", "embed`), 0o600); err != nil {
		t.Fatal(err)
	}
	ui := newTestUI(t, false, func(c *Config) { c.Voices = lib })
	sp := ui.compose.speaker
	lv := sp.library
	ui.on(func() {
		if got := lv.picker.Options; !slices.Equal(got, []string{"anna", "Bob"}) {
			t.Errorf("picker lists %v", got)
		}
		if !lv.msg.Visible() || !strings.Contains(lv.msg.Text, "broken.json") {
			t.Errorf("damaged file not named: visible %v, %q", lv.msg.Visible(), lv.msg.Text)
		}
		if lv.saveBtn.Disabled() == false {
			t.Error("Save as voice enabled with no clip")
		}
		lv.picker.SetSelected("Bob")
		if e := sp.savedVoice(); !slices.Equal(e, embeddingOf(1)) {
			t.Errorf("picked Bob, speaker embedding %v", e)
		}
		if !strings.Contains(sp.info.Text, "Bob") || !strings.Contains(sp.info.Text, "9.5 s") || sp.clrBtn.Disabled() {
			t.Errorf("after picking: info %q, clear disabled %v", sp.info.Text, sp.clrBtn.Disabled())
		}
		sp.set(&Clip{Name: "v.wav", Samples: make([]float32, 16000), Rate: 16000})
		if sp.savedVoice() != nil || lv.picker.Selected != "" || lv.saveBtn.Disabled() {
			t.Errorf("a clip did not replace the picked voice: selected %q", lv.picker.Selected)
		}
		lv.picker.SetSelected("anna")
		if sp.clip != nil || !slices.Equal(sp.savedVoice(), embeddingOf(2)) || !lv.saveBtn.Disabled() {
			t.Error("picking a voice kept the clip")
		}
		sp.clrBtn.OnTapped()
		if sp.savedVoice() != nil || lv.picker.Selected != "" {
			t.Error("Clear kept the picked voice")
		}
	})
}

// TestSavedVoiceSpeaksLikeItsClip: speaking with a picked voice conditions
// the model on its embedding exactly as a clip that encodes to it does,
// and differs from speaking with no voice.
func TestSavedVoiceSpeaksLikeItsClip(t *testing.T) {
	ui, lib := libraryUI(t)
	emb := embeddingOf(3)
	if err := lib.Add(voices.Voice{Name: "Three", Embedding: emb}, false); err != nil {
		t.Fatal(err)
	}
	ui.Speaker.Voice = &modelEncoder{emb: emb}
	ui.settings.RandomSeed, ui.settings.Seed = false, 7
	sp := ui.compose.speaker
	pcm := func(setup func()) []float32 {
		ui.on(setup)
		ui.speak(t, "Voice.")
		return ui.Speaker.History.Last().PCM
	}
	byClip := pcm(func() { sp.set(&Clip{Name: "v.wav", Samples: make([]float32, 16000*4), Rate: 16000}) })
	byVoice := pcm(func() { sp.library.refresh(); sp.library.picker.SetSelected("Three") })
	none := pcm(sp.clear)
	if len(byClip) == 0 || !slices.Equal(byClip, byVoice) {
		t.Fatalf("the saved voice's speech (%d samples) differs from its clip's (%d)", len(byVoice), len(byClip))
	}
	if slices.Equal(none, byVoice) {
		t.Fatal("speech with the saved voice is the same as with no voice: the embedding was not used")
	}
}

// TestSaveAsVoice: "Save as voice…" asks for a name (refusing a path),
// saves the clip's embedding with its hash, length and model, lists it,
// and asks before replacing a voice of the same name.
func TestSaveAsVoice(t *testing.T) {
	ui, lib := libraryUI(t)
	enc := &modelEncoder{emb: embeddingOf(5)}
	ui.Speaker.Voice = enc
	sp := ui.compose.speaker
	lv := sp.library
	clip := &Clip{Name: "microphone", Samples: make([]float32, 16000*4), Rate: 16000}
	ui.on(func() {
		sp.set(clip)
		lv.saveBtn.OnTapped()
		if lv.nameDialog == nil || ui.Win.Canvas().Overlays().Top() == nil {
			t.Fatal("no name dialog")
		}
		lv.nameEntry.SetText("../Carol")
		lv.nameDialog.Submit() // refused: the entry does not validate
		lv.nameEntry.SetText("  Carol ")
		lv.nameDialog.Submit()
	})
	ui.waitEnded(t)
	v, err := lib.Get("carol")
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "Carol" || !slices.Equal(v.Embedding, enc.emb) || v.ClipSHA256 != clipSHA256(clip) || v.ClipSeconds != 4 || v.SpeakerModel != enc.ModelID() {
		t.Fatalf("saved %+v", v)
	}
	if vs, _, _ := lib.List(); len(vs) != 1 {
		t.Fatalf("%d voices saved; the name with a path was saved too?", len(vs))
	}
	ui.on(func() {
		if !slices.Equal(lv.picker.Options, []string{"Carol"}) || !strings.Contains(ui.status.Text, "Saved the voice") {
			t.Errorf("after saving: options %v, status %q", lv.picker.Options, ui.status.Text)
		}
		lv.saveAs("CAROL")
		if lv.replaceDialog == nil {
			t.Fatal("a taken name was not asked about")
		}
		if !strings.Contains(lib.Dir, "voices") || enc.calls.Load() != 1 {
			t.Errorf("encoded %d times before the answer", enc.calls.Load())
		}
		lv.replaceDialog.Confirm()
	})
	ui.waitEnded(t)
	if v, _ := lib.Get("carol"); v.Name != "CAROL" {
		t.Fatalf("after replacing, the voice is %q", v.Name)
	}
}

// TestSaveAsVoiceErrorsShown: with no speaker encoder, an embedding that
// is not a voice's (another model's size), or a library folder that
// cannot be read, saving shows an error and saves nothing.
func TestSaveAsVoiceErrorsShown(t *testing.T) {
	ui, lib := libraryUI(t)
	dir := lib.Dir
	sp := ui.compose.speaker
	errorShown := func(what, want string) {
		t.Helper()
		ui.on(func() {
			if ui.Win.Canvas().Overlays().Top() == nil || !strings.Contains(ui.status.Text, want) {
				t.Errorf("%s: dialog %v, status %q; want %q", what, ui.Win.Canvas().Overlays().Top() != nil, ui.status.Text, want)
			}
			for ui.Win.Canvas().Overlays().Top() != nil {
				ui.Win.Canvas().Overlays().Remove(ui.Win.Canvas().Overlays().Top())
			}
		})
	}
	ui.on(func() {
		sp.set(&Clip{Name: "v.wav", Samples: make([]float32, 16000*4), Rate: 16000})
		sp.library.saveAs("Dan")
	})
	errorShown("no encoder", "not available")

	ui.Speaker.Voice = &modelEncoder{emb: make([]float32, 64)}
	ui.on(func() { sp.library.saveAs("Dan") })
	ui.waitEnded(t)
	errorShown("a 64-value embedding", `saving the voice "Dan"`)

	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	lib.Dir = blocked // a file, not a folder
	ui.on(func() { sp.library.saveAs("Dan") })
	errorShown("a library that is a file", "not a directory")
	if ents, err := os.ReadDir(dir); err == nil || len(ents) != 0 {
		t.Errorf("the library folder holds %d files (%v); nothing was to be saved", len(ents), err)
	}
}
