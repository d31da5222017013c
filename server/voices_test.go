package server

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"zonostream/engine"
	"zonostream/engine/speaker"
	"zonostream/internal/golden"
)

// upload posts a clip as a new voice.
func upload(t *testing.T, ts *testServer, name string, clip []byte, filename string, extra ...string) *http.Response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("name", name)
	for i := 0; i+1 < len(extra); i += 2 {
		mw.WriteField(extra[i], extra[i+1])
	}
	fw, _ := mw.CreateFormFile("file", filename)
	fw.Write(clip)
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, ts.url+"/v1/voices", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestVoicesOverHTTP: a clip uploaded becomes a named voice in the
// library the CLI and app share (embedded by the speaker model), is
// listed, speaks, and is deleted; bad names, duplicates, oversized and
// undecodable clips are refused with the reason.
func TestVoicesOverHTTP(t *testing.T) {
	e := tinyEngine(t)
	ts := serve(t, e, Config{Limits: Limits{MaxClipBytes: 256 << 10, MaxClipSeconds: 1.5}})
	dir := golden.Pack(t, "speaker-tiny")
	ts.Server.speaker = SpeakerModel{Weights: dir + "/" + speaker.WeightsFile, LDA: dir + "/" + speaker.LDAFile}

	clip := toneFile(t, 24000, 24000*2)
	resp := upload(t, ts, "Ada", clip, "ada.wav")
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %d %s", resp.StatusCode, data)
	}
	var made voiceJSON
	json.Unmarshal(data, &made)
	// The 2 s clip is cut to the server's 1.5 s, with a notice.
	if made.Name != "Ada" || made.ClipSeconds != 1.5 || made.SpeakerModel == "" || made.ClipSHA256 != sha256Hex(clip) {
		t.Errorf("made %+v", made)
	}
	if n := resp.Header.Get("X-Zonos-Notice"); !strings.Contains(n, "first 1.5 s") {
		t.Errorf("notice %q: want the cut named", n)
	}
	v, err := ts.lib.Get("ada")
	if err != nil || len(v.Embedding) != 128 {
		t.Fatalf("library: %v", err)
	}

	lr := ts.get(t, "/v1/voices")
	data, _ = io.ReadAll(lr.Body)
	lr.Body.Close()
	if !strings.Contains(string(data), `"name":"Ada"`) || !strings.Contains(string(data), `"name":"default"`) {
		t.Errorf("list: %s", data)
	}

	want := alone(t, e, engine.Request{Text: "Hi.", Knobs: engine.DefaultKnobs(), Speaker: v.Embedding, Seed: 2, MaxSeconds: 0.5, DiscardCodes: true})
	sr := ts.post(t, "/v1/tts", map[string]any{"text": "Hi.", "voice": "Ada", "seed": 2})
	data, _ = io.ReadAll(sr.Body)
	sr.Body.Close()
	if _, got := streamWAV(t, data); !equal16(got, want) {
		t.Error("the uploaded voice does not speak as its embedding does")
	}
	// speaker_audio clones in one request, with the same embedding.
	cr := ts.post(t, "/v1/tts", map[string]any{"text": "Hi.", "speaker_audio": toneWAV(t, 24000, 24000*2), "seed": 2})
	data, _ = io.ReadAll(cr.Body)
	cr.Body.Close()
	if _, got := streamWAV(t, data); !equal16(got, want) {
		t.Error("speaker_audio does not speak as the uploaded voice")
	}

	if msg := apiErr(t, upload(t, ts, "ADA", clip, "a.wav"), http.StatusConflict); !strings.Contains(msg, "replace") {
		t.Errorf("duplicate: %q", msg)
	}
	if r := upload(t, ts, "ADA", clip, "a.wav", "replace", "true"); r.StatusCode != http.StatusCreated {
		t.Errorf("replace: %d", r.StatusCode)
	}
	apiErr(t, upload(t, ts, "../etc", clip, "a.wav"), http.StatusBadRequest)
	apiErr(t, upload(t, ts, "big", make([]byte, 300<<10), "a.wav"), http.StatusRequestEntityTooLarge)
	apiErr(t, upload(t, ts, "junk", []byte("this is not audio at all, not a bit of it"), "a.wav"), http.StatusBadRequest)
	apiErr(t, upload(t, ts, "silent", wavFile(t, 16000, make([]float32, 16000)), "s.wav"), http.StatusBadRequest)

	del := func(name string) int {
		req, _ := http.NewRequest(http.MethodDelete, ts.url+"/v1/voices/"+name, nil)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if c := del("ada"); c != http.StatusNoContent {
		t.Fatalf("delete: %d", c)
	}
	if c := del("ada"); c != http.StatusNotFound {
		t.Errorf("delete again: %d", c)
	}
	apiErr(t, ts.post(t, "/v1/tts", map[string]any{"text": "Hi.", "voice": "Ada"}), 400)
}
