package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"zonostream/engine/weights"
)

// The acceptance path: HF_ENDPOINT names a plain static file server
// laid out as /{org}/{name}/resolve/main/{file}; `zonos pull` fills the cache,
// `zonos models` lists it as unverified, and the bundle is found offline.
func TestPullFromStaticMirrorThenModels(t *testing.T) {
	root := t.TempDir()
	for i, f := range weights.BundleFiles(weights.Hybrid) {
		p := filepath.Join(root, f.Repo, "resolve", "main", f.Name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte(i + 1)}, 4096+i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(root)))
	defer srv.Close()
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_TOKEN", "")

	if code := runPull([]string{"--plain", "hybrid"}); code != 0 {
		t.Fatalf("zonos pull hybrid exited %d", code)
	}
	c := weights.Cache{Dir: cache, From: "HF_HUB_CACHE"}
	b, err := weights.FindBundle(c, weights.Hybrid)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(b.DACWeights); !bytes.Equal(got, bytes.Repeat([]byte{4}, 4096+3)) {
		t.Error("DAC weights differ from the mirror's")
	}
	st, err := c.Status(weights.AllFiles())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := printModels(&out, c, st); code != 0 {
		t.Errorf("printModels exited %d", code)
	}
	for _, want := range []string{"hybrid       complete", "6 file(s) not verified", "unverified", "transformer  missing 2 of 6 files: run 'zonos pull transformer'", "server gave no hash"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("zonos models output lacks %q:\n%s", want, out.String())
		}
	}

	// Offline, the transformer's two missing files are named with their destination.
	t.Setenv("HF_HUB_OFFLINE", "1")
	if code := runPull([]string{"transformer"}); code != 1 {
		t.Errorf("offline pull of a missing variant exited %d, want 1", code)
	}
	// Offline with everything present is fine.
	if code := runPull([]string{"hybrid"}); code != 0 {
		t.Errorf("offline pull of a present variant exited %d, want 0", code)
	}
}

func TestBarsLine(t *testing.T) {
	f := weights.RepoFile{Repo: "Zyphra/Zonos-v0.1-hybrid", Name: "model.safetensors"}
	b := newBars(&bytes.Buffer{}, []weights.RepoFile{f}, false)
	for _, tc := range []struct {
		p    weights.Progress
		want []string
	}{
		{weights.Progress{File: f, Phase: weights.PhaseDownloading, Bytes: 1_650_000_000, Total: 3_300_000_000, Rate: 42e6, ETA: 39 * time.Second, Resumed: 1}, []string{"hybrid/model.safetensors", " 50%", "1.6 GB/3.3 GB", "42.0 MB/s", "ETA 0:39", "resumed"}},
		{weights.Progress{File: f, Phase: weights.PhaseCached, Total: 3_300_000_000}, []string{"already in cache", "3.3 GB"}},
		{weights.Progress{File: f, Phase: weights.PhaseRetrying, Attempt: 2, Err: errors.New("503")}, []string{"retrying (attempt 2): 503"}},
	} {
		got := b.line(tc.p)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("line %q lacks %q", got, w)
			}
		}
	}
}
