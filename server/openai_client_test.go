package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"zonostream/server"
)

// openAIClientDir is the Node project that speaks through OpenAI's
// official client (package.json pins its version).
const openAIClientDir = "testdata/openai-client"

// TestOpenAINodeClient: OpenAI's own npm client, used as its users do
// (base URL and key, audio.speech.create), gets a WAV and OpenAI's raw
// pcm from the server, and reports a wrong key as its AuthenticationError.
func TestOpenAINodeClient(t *testing.T) {
	node := nodeTools(t)
	const key = "test-key-0123456789abcdef"
	// One second of audio at most, the server's limit for requests that
	// give none (OpenAI's do not): 87 frames of 512 samples.
	const maxFrames = 87
	addr := serveTiny(t, nil, server.Config{APIKeys: []string{key}, Limits: server.Limits{MaxSeconds: 1}})
	out := t.TempDir()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "speak.mjs")
	cmd.Dir = openAIClientDir
	cmd.Env = append(os.Environ(), "ZONOS_BASE_URL=http://"+addr+"/v1", "ZONOS_API_KEY="+key, "ZONOS_OUT_DIR="+out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node speak.mjs: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var sum struct {
		WAV, PCM struct {
			Path        string `json:"path"`
			Bytes       int    `json:"bytes"`
			ContentType string `json:"content_type"`
			SampleRate  int    `json:"sample_rate"`
		}
		BadKey struct {
			Status              int    `json:"status"`
			AuthenticationError bool   `json:"authentication_error"`
			Message             string `json:"message"`
		} `json:"bad_key"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	t.Logf("client summary: %s", strings.TrimSpace(stdout.String()))

	wavBytes, err := os.ReadFile(sum.WAV.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(wavBytes) != sum.WAV.Bytes {
		t.Fatalf("the client read %d bytes of WAV, the file has %d", sum.WAV.Bytes, len(wavBytes))
	}
	w, err := parseStreamedWAV(wavBytes)
	if err != nil {
		t.Fatalf("WAV: %v", err)
	}
	if w.rate != 44100 || w.channels != 1 || w.bits != 16 || w.format != 1 {
		t.Fatalf("WAV is %d Hz, %d channels, %d-bit, format %d; want 44100 Hz mono 16-bit PCM", w.rate, w.channels, w.bits, w.format)
	}
	n := len(w.data) / 2
	if n == 0 || len(w.data)%2 != 0 || n%512 != 0 || n > maxFrames*512 {
		t.Fatalf("WAV holds %d bytes of samples; want a whole number of 512-sample frames, 1 to %d (the 1 s limit)", len(w.data), maxFrames)
	}
	if sum.WAV.ContentType != "audio/wav" {
		t.Errorf("WAV Content-Type %q, want audio/wav", sum.WAV.ContentType)
	}

	pcm, err := os.ReadFile(sum.PCM.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(pcm) == 0 || len(pcm)%2 != 0 {
		t.Fatalf("pcm holds %d bytes; want a nonzero number of 16-bit samples", len(pcm))
	}
	// OpenAI's pcm is 24 kHz: a whole number of 512-sample frames at
	// 44.1 kHz, resampled. The two requests are two utterances (OpenAI's
	// API has no seed), and the tiny model ends one early now and then,
	// so the pcm is checked against the frame count its own length
	// implies; when it is the WAV's (both reached the 1 s limit, as they
	// mostly do), that is len(pcm)/2 == ceil(n*24000/44100).
	t.Run("PCMIs24kHz", func(t *testing.T) {
		got := len(pcm) / 2
		frames := int(math.Round(float64(got) * 44100 / 24000 / 512))
		want := (frames*512*24000 + 44100 - 1) / 44100
		if got != want || frames < 1 || frames > maxFrames || sum.PCM.SampleRate != 24000 {
			t.Errorf("pcm has %d samples (X-Zonos-Sample-Rate %d); want 24000 Hz: ceil(frames*512*24000/44100) samples for 1 to %d frames, e.g. %d for the WAV's %d samples at 44100",
				got, sum.PCM.SampleRate, maxFrames, (n*24000+44100-1)/44100, n)
		}
	})

	if sum.BadKey.Status != 401 || !sum.BadKey.AuthenticationError || !strings.Contains(sum.BadKey.Message, "API key") {
		t.Errorf("wrong key: status %d, AuthenticationError %v, message %q; want 401, the client's AuthenticationError and the server's message",
			sum.BadKey.Status, sum.BadKey.AuthenticationError, sum.BadKey.Message)
	}
}

// nodeTools finds node and installs the client project's packages (npm
// ci, from its package-lock.json) when they are missing. Without node or
// npm the test fails, telling how to install them, except under -short.
func nodeTools(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err != nil || err2 != nil {
		if testing.Short() {
			t.Skip("node or npm not found (-short)")
		}
		t.Fatal("node and npm are needed to run OpenAI's Node client: run make deps (it installs nodejs and npm)")
	}
	if _, err := os.Stat(filepath.Join(openAIClientDir, "node_modules", "openai", "package.json")); err == nil {
		return node
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = openAIClientDir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", openAIClientDir, err, b)
	}
	return node
}

// streamedWAV is a WAV file's format and samples.
type streamedWAV struct {
	format, channels, bits int
	rate                   int
	data                   []byte
}

// parseStreamedWAV reads a WAV written as it streams: its RIFF and data
// sizes may be 0xFFFFFFFF (unknown when the header went out), in which
// case the data runs to the end of the file.
func parseStreamedWAV(b []byte) (streamedWAV, error) {
	var w streamedWAV
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return w, fmt.Errorf("no RIFF/WAVE header")
	}
	haveFmt := false
	for p := 12; p+8 <= len(b); {
		id, size := string(b[p:p+4]), binary.LittleEndian.Uint32(b[p+4:p+8])
		body := b[p+8:]
		if size != 0xFFFFFFFF && int64(size) <= int64(len(body)) {
			body = body[:size]
		} else if id != "data" {
			return w, fmt.Errorf("chunk %q of %d bytes runs past the end (%d left)", id, size, len(body))
		}
		switch id {
		case "fmt ":
			if len(body) < 16 {
				return w, fmt.Errorf("fmt chunk of %d bytes", len(body))
			}
			le := binary.LittleEndian
			w.format, w.channels = int(le.Uint16(body[0:])), int(le.Uint16(body[2:]))
			w.rate, w.bits = int(le.Uint32(body[4:])), int(le.Uint16(body[14:]))
			haveFmt = true
		case "data":
			if !haveFmt {
				return w, fmt.Errorf("data before fmt")
			}
			w.data = body
			return w, nil
		}
		p += 8 + len(body) + len(body)%2
	}
	return w, fmt.Errorf("no data chunk")
}
