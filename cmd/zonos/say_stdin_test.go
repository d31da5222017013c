package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pipeStdin makes say read standard input from a pipe the test writes.
func pipeStdin(t *testing.T) *io.PipeWriter {
	t.Helper()
	r, w := io.Pipe()
	old := sayStdin
	sayStdin = r
	t.Cleanup(func() { sayStdin = old; w.Close() })
	return w
}

// growing reports whether a WAV file of say's (its temporary .part file
// while it is written) holds samples yet.
func growing(dir string) bool {
	parts, _ := filepath.Glob(filepath.Join(dir, "*.part"))
	for _, p := range parts {
		if st, err := os.Stat(p); err == nil && st.Size() > 94 {
			return true
		}
	}
	return false
}

// TestSaySpeaksStdinAsItArrives: text piped in is spoken sentence by
// sentence: the first sentence's audio is in the WAV before the rest of
// the input is written, and the whole reading ends at EOF with every part
// in one valid file.
func TestSaySpeaksStdinAsItArrives(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "piped.wav")
	w := pipeStdin(t)
	done := make(chan int, 1)
	go func() {
		done <- runSay(append(tinyArgs(t), "--no-play", "--out", out, "--seed", "5", "--max-seconds", "0.3", "--format", "float32", "--file", "-"))
	}()
	io.WriteString(w, "The first sentence comes alone. ")
	deadline := time.Now().Add(2 * time.Minute)
	for !growing(dir) {
		select {
		case code := <-done:
			t.Fatalf("say ended (exit %d) before the rest of its input", code)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no audio written for the first sentence while the input stayed open")
		}
		time.Sleep(10 * time.Millisecond)
	}
	io.WriteString(w, "Then another one, and a last one without a full stop")
	w.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
	if got := len(floatWAV(t, out)); got == 0 || got%512 != 0 {
		t.Fatalf("%d samples", got)
	}
}

// TestSayJSONReportsParts: a long text's summary counts its parts and the
// boundaries between them.
func TestSayJSONReportsParts(t *testing.T) {
	out := filepath.Join(t.TempDir(), "long.wav")
	text := "One sentence starts it. A second sentence follows. A third one ends it."
	var sum summary
	stdout := captureStdout(t, func() {
		if code := runSay(append(tinyArgs(t), "--no-play", "--out", out, "--json", "--seed", "5", "--max-seconds", "0.2",
			"--part-phonemes", "30", text)); code != 0 {
			t.Fatalf("exit %d", code)
		}
	})
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v in %q", err, stdout)
	}
	if sum.Parts < 3 || sum.BoundaryMaxms <= 0 || sum.BoundaryP50ms <= 0 {
		t.Fatalf("summary: %d parts, boundary p50 %g max %g ms", sum.Parts, sum.BoundaryP50ms, sum.BoundaryMaxms)
	}
	if !strings.Contains(stdout, `"boundary_max_ms"`) {
		t.Errorf("no boundary_max_ms in %s", stdout)
	}
}
