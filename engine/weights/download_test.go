package weights

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// progressLog collects Progress reports.
type progressLog struct {
	mu sync.Mutex
	ps []Progress
}

func (l *progressLog) add(p Progress) {
	l.mu.Lock()
	l.ps = append(l.ps, p)
	l.mu.Unlock()
}

func (l *progressLog) last(f RepoFile) Progress {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.ps) - 1; i >= 0; i-- {
		if l.ps[i].File == f {
			return l.ps[i]
		}
	}
	return Progress{}
}

func (l *progressLog) lastIn(f RepoFile, ph Phase) Progress {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.ps) - 1; i >= 0; i-- {
		if l.ps[i].File == f && l.ps[i].Phase == ph {
			return l.ps[i]
		}
	}
	return Progress{}
}

func (l *progressLog) phases(f RepoFile) map[Phase]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[Phase]int{}
	for _, p := range l.ps {
		if p.File == f {
			m[p.Phase]++
		}
	}
	return m
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPullFullBundleFromHub(t *testing.T) {
	h := newFakeHub(t)
	h.token = "hf_secret_token_value"
	h.addBundle(Hybrid)
	dir := t.TempDir()
	d := h.downloader(dir)
	var log progressLog
	d.Progress = log.add

	b, err := d.PullBundle(context.Background(), Hybrid)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{b.ModelConfig, b.ModelWeights, b.DACConfig, b.DACWeights, b.SpeakerWeights, b.SpeakerLDA}
	for i, f := range BundleFiles(Hybrid) {
		if got := mustRead(t, paths[i]); !bytes.Equal(got, h.files[f.String()]) {
			t.Errorf("%s: contents differ (%d bytes, want %d)", f, len(got), len(h.files[f.String()]))
		}
		// huggingface_hub's layout: snapshots/<commit>/<file> -> ../../blobs/<etag>.
		repoDir := d.Cache.RepoDir(f.Repo)
		want := filepath.Join(repoDir, "snapshots", h.commit, f.Name)
		if paths[i] != want {
			t.Errorf("%s: path %s, want %s", f, paths[i], want)
		}
		etag := gitSHA1Hex(h.files[f.String()])
		if h.lfs[f.String()] {
			etag = sha256Hex(h.files[f.String()])
		}
		target, err := os.Readlink(want)
		if err != nil || target != filepath.Join("..", "..", "blobs", etag) {
			t.Errorf("%s: snapshot link %q (%v), want ../../blobs/%s", f, target, err, etag)
		}
		if ref := mustRead(t, filepath.Join(repoDir, "refs", "main")); string(ref) != h.commit {
			t.Errorf("%s: refs/main = %q, want %s", f, ref, h.commit)
		}
		if p := log.last(f); p.Phase != PhaseDone || p.Bytes != int64(len(h.files[f.String()])) {
			t.Errorf("%s: last progress %+v, want done with all bytes", f, p)
		}
	}
	st, err := d.Cache.Status(BundleFiles(Hybrid))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if !s.Present || s.Check.State != Verified {
			t.Errorf("%s: present=%v check=%+v, want verified", s.RepoFile, s.Present, s.Check)
		}
	}
	if _, err := FindBundle(d.Cache, Hybrid); err != nil {
		t.Errorf("FindBundle after pull: %v", err)
	}
	// No .incomplete or temp files are left in blobs/.
	for _, repo := range []string{Hybrid.Repo(), DACRepo, SpeakerRepo} {
		ents, _ := os.ReadDir(filepath.Join(d.Cache.RepoDir(repo), "blobs"))
		for _, e := range ents {
			if strings.Contains(e.Name(), ".") {
				t.Errorf("left in blobs/: %s", e.Name())
			}
		}
	}
}

func TestRedirectToCDNDropsToken(t *testing.T) {
	h := newFakeHub(t)
	h.token = "hf_secret_token_value"
	f := RepoFile{"Zyphra/Zonos-v0.1-hybrid", "model.safetensors"}
	h.add(f, testBytes(1, 200<<10), true)
	d := h.downloader(t.TempDir())
	e, err := d.Fetch(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustRead(t, e.Path), h.files[f.String()]) {
		t.Fatal("contents differ")
	}
	var hubAuth, cdnGets int
	for _, r := range h.requests() {
		switch r.server {
		case "hub":
			if r.auth == "Bearer "+h.token {
				hubAuth++
			}
		case "cdn":
			cdnGets++
			if r.auth != "" {
				t.Errorf("CDN got Authorization %q; the token must stay with the hub", r.auth)
			}
		}
	}
	if hubAuth == 0 || cdnGets == 0 {
		t.Errorf("hub requests with token: %d, CDN requests: %d; want both > 0", hubAuth, cdnGets)
	}
}

func TestExistingCacheIsUsedWithoutRequests(t *testing.T) {
	var hits int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer srv.Close()

	c := Cache{Dir: t.TempDir()}
	// A cache as huggingface_hub leaves it: blobs, relative symlinks, refs/main.
	commit := "fedcba9876543210fedcba9876543210fedcba98"
	for i, f := range BundleFiles(Transformer) {
		data := testBytes(int64(i), 1000+i)
		repoDir := c.RepoDir(f.Repo)
		blob := filepath.Join(repoDir, "blobs", sha256Hex(data))
		snap := filepath.Join(repoDir, "snapshots", commit, f.Name)
		os.MkdirAll(filepath.Dir(blob), 0o755)
		os.MkdirAll(filepath.Dir(snap), 0o755)
		os.MkdirAll(filepath.Join(repoDir, "refs"), 0o755)
		if err := os.WriteFile(blob, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", "..", "blobs", sha256Hex(data)), snap); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(repoDir, "refs", "main"), []byte(commit), 0o644)
	}
	d := &Downloader{Cache: c, Endpoint: srv.URL, Client: srv.Client()}
	var log progressLog
	d.Progress = log.add
	b, err := d.PullBundle(context.Background(), Transformer)
	if err != nil {
		t.Fatal(err)
	}
	if hits != 0 {
		t.Errorf("%d requests; a complete cache must need none", hits)
	}
	for _, f := range BundleFiles(Transformer) {
		if p := log.last(f); p.Phase != PhaseCached {
			t.Errorf("%s: phase %s, want cached", f, p.Phase)
		}
	}
	if b.ModelWeights != filepath.Join(c.RepoDir(Transformer.Repo()), "snapshots", commit, "model.safetensors") {
		t.Errorf("ModelWeights = %s", b.ModelWeights)
	}
	// Found but never hashed: "not checked", then Verify makes it verified.
	st, _ := c.Status(BundleFiles(Transformer))
	if st[1].Check.State != NotChecked {
		t.Errorf("state before Verify %q, want %q", st[1].Check.State, NotChecked)
	}
	v, err := c.Verify(context.Background(), st[1].Entry, nil)
	if err != nil || v.State != Verified {
		t.Errorf("Verify: %+v, %v; want verified", v, err)
	}
	st, _ = c.Status(BundleFiles(Transformer))
	if st[1].Check.State != Verified {
		t.Errorf("state after Verify %q, want verified", st[1].Check.State)
	}
	// Corrupt a blob: Verify says so.
	os.WriteFile(st[3].Entry.Blob, []byte("garbage that is not the hub's file"), 0o644)
	if v, err := c.Verify(context.Background(), st[3].Entry, nil); err != nil || v.State != Mismatch {
		t.Errorf("Verify of a corrupted blob: %+v, %v; want %s", v, err, Mismatch)
	}
}

func TestInterruptedTransferRetriesWithRange(t *testing.T) {
	h := newFakeHub(t)
	f := RepoFile{DACRepo, "model.safetensors"}
	h.add(f, testBytes(7, 500<<10), true)
	h.cutAfter, h.cuts = 123_456, 1
	d := h.downloader(t.TempDir())
	var log progressLog
	d.Progress = log.add
	e, err := d.Fetch(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustRead(t, e.Path), h.files[f.String()]) {
		t.Fatal("contents differ after the retry")
	}
	var ranges []string
	for _, r := range h.requests() {
		if r.server == "cdn" && r.method == http.MethodGet {
			ranges = append(ranges, r.rng)
		}
	}
	if len(ranges) != 2 || ranges[0] != "" || ranges[1] != "bytes=123456-" {
		t.Errorf("CDN GET ranges %q, want [\"\" \"bytes=123456-\"]", ranges)
	}
	if log.phases(f)[PhaseRetrying] == 0 {
		t.Error("no retrying progress was reported")
	}
}

func TestInterruptedDownloadResumesOnNextPull(t *testing.T) {
	h := newFakeHub(t)
	f := RepoFile{SpeakerRepo, "ResNet293_SimAM_ASP_base.pt"}
	h.add(f, testBytes(9, 400<<10), true)
	h.cutAfter, h.cuts = 100_000, 1
	dir := t.TempDir()
	d := h.downloader(dir)
	d.MaxAttempts = 1
	_, err := d.Fetch(context.Background(), f)
	var re *RetryError
	if !errors.As(err, &re) || err != error(re) || !re.Resume || re.Attempts != 1 || !strings.HasSuffix(err.Error(), "(gave up after 1 attempts; run the pull again to resume)") {
		t.Fatalf("first fetch: %v; want a cut transfer, a *RetryError that says to pull again to resume", err)
	}
	st, _ := d.Cache.Status([]RepoFile{f})
	if st[0].Present || st[0].Partial != 100_000 {
		t.Fatalf("status after the cut: present=%v partial=%d, want a 100000-byte partial", st[0].Present, st[0].Partial)
	}
	d = h.downloader(dir)
	var log progressLog
	d.Progress = log.add
	e, err := d.Fetch(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustRead(t, e.Path), h.files[f.String()]) {
		t.Fatal("contents differ after resuming")
	}
	reqs := h.requests()
	if last := reqs[len(reqs)-1]; last.server != "cdn" || last.rng != "bytes=100000-" {
		t.Errorf("resume request %+v, want a CDN GET with Range bytes=100000-", last)
	}
	if p := log.lastIn(f, PhaseDownloading); p.Resumed != 100_000 {
		t.Errorf("Resumed = %d, want 100000", p.Resumed)
	}
}

func TestWrongHashIsRefused(t *testing.T) {
	h := newFakeHub(t)
	f := RepoFile{Hybrid.Repo(), "model.safetensors"}
	h.add(f, testBytes(3, 200<<10), true)
	h.wrongHash[f.String()] = true
	d := h.downloader(t.TempDir())
	_, err := d.Fetch(context.Background(), f)
	var hm *HashMismatchError
	if !errors.As(err, &hm) {
		t.Fatalf("err = %v, want a HashMismatchError", err)
	}
	var re *RetryError
	if !errors.As(err, &re) || re.Resume || !strings.HasSuffix(err.Error(), "; run the pull again") {
		t.Errorf("err = %v, want a *RetryError that says to pull again (afresh, not to resume)", err)
	}
	if !strings.Contains(err.Error(), "discarded") {
		t.Errorf("message %q does not say the download was discarded", err)
	}
	if _, ok, _ := d.Cache.Lookup(f, ""); ok {
		t.Error("a mismatching file is in the cache")
	}
	ents, _ := os.ReadDir(filepath.Join(d.Cache.RepoDir(f.Repo), "blobs"))
	if len(ents) != 0 {
		t.Errorf("blobs/ holds %d entries after a refused download", len(ents))
	}
}

func TestNotFound(t *testing.T) {
	h := newFakeHub(t)
	f := RepoFile{Hybrid.Repo(), "nope.bin"}
	_, err := h.downloader(t.TempDir()).Fetch(context.Background(), f)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 {
		t.Fatalf("err = %v, want a 404 StatusError", err)
	}
	for _, want := range []string{f.String(), "HF_ENDPOINT", "Entry not found"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

func TestUnauthorized(t *testing.T) {
	h := newFakeHub(t)
	h.token = "hf_right_token"
	f := RepoFile{Hybrid.Repo(), "config.json"}
	h.add(f, []byte(`{}`), false)
	for _, tc := range []struct{ token, want string }{
		{"", "set HF_TOKEN"},
		{"hf_wrong_token_123", "HF_TOKEN was rejected"},
	} {
		d := h.downloader(t.TempDir())
		d.Token = Secret(tc.token)
		_, err := d.Fetch(context.Background(), f)
		var se *StatusError
		if !errors.As(err, &se) || se.Code != 401 {
			t.Fatalf("token %q: err = %v, want a 401 StatusError", tc.token, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("message %q lacks %q", err, tc.want)
		}
		if tc.token != "" && strings.Contains(err.Error(), tc.token) {
			t.Errorf("message %q shows the token", err)
		}
	}
	d := h.downloader(t.TempDir())
	if _, err := d.Fetch(context.Background(), f); err != nil {
		t.Errorf("with the right token: %v", err)
	}
	if s := fmt.Sprintf("%v %s %+v %#v %q", d.Token, d.Token, d, d, d.Token); strings.Contains(s, h.token) {
		t.Errorf("formatting a Downloader shows the token: %s", s)
	}
}

func TestTransientServerErrorsAreRetried(t *testing.T) {
	h := newFakeHub(t)
	f := RepoFile{DACRepo, "config.json"}
	h.add(f, []byte(`{"sampling_rate": 44100}`), false)
	h.fail5xx = 2
	d := h.downloader(t.TempDir())
	var log progressLog
	d.Progress = log.add
	if _, err := d.Fetch(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if n := log.phases(f)[PhaseRetrying]; n != 2 {
		t.Errorf("%d retries reported, want 2", n)
	}
	st, _ := d.Cache.Status([]RepoFile{f})
	if st[0].Check.State != Verified {
		t.Errorf("config.json check %+v, want verified against the git-sha1 ETag", st[0].Check)
	}
}

func TestSlowServerCancelThenResume(t *testing.T) {
	h := newFakeHub(t)
	f := RepoFile{Hybrid.Repo(), "model.safetensors"}
	h.add(f, testBytes(5, 600<<10), true)
	h.slow = make(chan struct{})
	dir := t.TempDir()
	d := h.downloader(dir)
	ctx, cancel := context.WithCancel(context.Background())
	d.Progress = func(p Progress) {
		if p.Phase == PhaseDownloading && p.Bytes > 0 {
			cancel() // the user pressed pause
		}
	}
	_, err := d.Fetch(ctx, f)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	st, _ := d.Cache.Status([]RepoFile{f})
	if st[0].Present || st[0].Partial <= 0 {
		t.Fatalf("after cancel: present=%v partial=%d; want a kept partial download", st[0].Present, st[0].Partial)
	}
	partial := st[0].Partial

	close(h.slow)
	h.mu.Lock()
	h.slow = nil
	h.mu.Unlock()
	d = h.downloader(dir)
	e, err := d.Fetch(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustRead(t, e.Path), h.files[f.String()]) {
		t.Fatal("contents differ after resuming")
	}
	reqs := h.requests()
	if last := reqs[len(reqs)-1]; last.rng != fmt.Sprintf("bytes=%d-", partial) {
		t.Errorf("resume request Range %q, want bytes=%d-", last.rng, partial)
	}
}

func TestOffline(t *testing.T) {
	h := newFakeHub(t)
	h.addBundle(Hybrid)
	d := h.downloader(t.TempDir())
	d.Offline = true
	_, err := d.PullBundle(context.Background(), Hybrid)
	var me *MissingError
	if !errors.As(err, &me) || len(me.Missing) != 6 {
		t.Fatalf("err = %v, want a MissingError with 6 files", err)
	}
	for _, want := range []string{"HF_HUB_OFFLINE", "zonos pull hybrid", filepath.Join(d.Cache.RepoDir(DACRepo), "snapshots", "main", "model.safetensors")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%s", want, err)
		}
	}
	if n := len(h.requests()); n != 0 {
		t.Errorf("%d requests in offline mode", n)
	}
}

func TestNoNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connections are refused
	d := &Downloader{Cache: Cache{Dir: t.TempDir()}, Endpoint: "http://" + addr, Backoff: 1}
	_, err = d.PullBundle(context.Background(), Transformer)
	var me *MissingError
	if !errors.As(err, &me) || len(me.Missing) != 6 {
		t.Fatalf("err = %v, want a MissingError listing 6 files", err)
	}
	if !strings.Contains(err.Error(), "cannot reach http://"+addr) {
		t.Errorf("message does not say the endpoint is unreachable:\n%s", err)
	}
}

// A plain static file server laid out as /{org}/{name}/resolve/main/{file}:
// no X-Repo-Commit, no X-Linked-Etag, no hash ETag.
func TestStaticFileServerMirror(t *testing.T) {
	root := t.TempDir()
	want := map[RepoFile][]byte{}
	for i, f := range BundleFiles(Hybrid) {
		data := testBytes(int64(100+i), 50<<10+i)
		p := filepath.Join(root, f.Repo, "resolve", "main", f.Name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		want[f] = data
	}
	// The first GET of each file is cut after 10000 bytes, to exercise
	// resuming against http.FileServer (Range + If-Range on Last-Modified).
	var mu sync.Mutex
	cut := map[string]bool{}
	var rangeGets int
	fs := http.FileServer(http.Dir(root))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := r.Method == http.MethodGet && !cut[r.URL.Path]
		if r.Method == http.MethodGet {
			cut[r.URL.Path] = true
		}
		if r.Header.Get("Range") != "" {
			rangeGets++
		}
		mu.Unlock()
		if first {
			w = &cuttingWriter{ResponseWriter: w, left: 10000}
		}
		fs.ServeHTTP(w, r)
	}))
	defer srv.Close()

	dir := t.TempDir()
	d := &Downloader{Cache: Cache{Dir: dir}, Endpoint: srv.URL + "/", Client: srv.Client(), Backoff: 1}
	b, err := d.PullBundle(context.Background(), Hybrid)
	if err != nil {
		t.Fatal(err)
	}
	if rangeGets != 6 {
		t.Errorf("%d resumed GETs, want 6", rangeGets)
	}
	for _, e := range b.Entries {
		if !bytes.Equal(mustRead(t, e.Path), want[e.RepoFile]) {
			t.Errorf("%s: contents differ", e.RepoFile)
		}
		if e.Revision != "main" || !strings.Contains(e.Path, filepath.Join("snapshots", "main")) {
			t.Errorf("%s: revision %q path %s, want the snapshot main", e.RepoFile, e.Revision, e.Path)
		}
	}
	// What `zonos say` does next: find the bundle with no network.
	if _, err := FindBundle(Cache{Dir: dir}, Hybrid); err != nil {
		t.Fatalf("FindBundle after a static pull: %v", err)
	}
	st, _ := d.Cache.Status(BundleFiles(Hybrid))
	for _, s := range st {
		if s.Check.State != Unverified || !strings.Contains(s.Check.Detail, "no hash") {
			t.Errorf("%s: check %+v, want unverified (no hash from the server)", s.RepoFile, s.Check)
		}
	}
}

// cuttingWriter passes left body bytes through, then drops the connection.
type cuttingWriter struct {
	http.ResponseWriter
	left int
}

func (w *cuttingWriter) Write(p []byte) (int, error) {
	if len(p) <= w.left {
		w.left -= len(p)
		return w.ResponseWriter.Write(p)
	}
	w.ResponseWriter.Write(p[:w.left])
	w.ResponseWriter.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

func TestConcurrentPullsShareOneDownload(t *testing.T) {
	h := newFakeHub(t)
	f := RepoFile{DACRepo, "model.safetensors"}
	h.add(f, testBytes(11, 300<<10), true)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = h.downloader(dir).Fetch(context.Background(), f)
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var gets int
	for _, r := range h.requests() {
		if r.server == "cdn" && r.method == http.MethodGet {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("%d downloads of one file by 3 concurrent pulls, want 1", gets)
	}
}

// A download huggingface_hub left half done (blobs/<sha256>.incomplete) is
// resumed, not restarted.
func TestResumesHuggingFaceHubPartial(t *testing.T) {
	h := newFakeHub(t)
	f := RepoFile{Transformer.Repo(), "model.safetensors"}
	data := testBytes(21, 300<<10)
	h.add(f, data, true)
	dir := t.TempDir()
	d := h.downloader(dir)
	blobs := filepath.Join(d.Cache.RepoDir(f.Repo), "blobs")
	os.MkdirAll(blobs, 0o755)
	os.WriteFile(filepath.Join(blobs, sha256Hex(data)+".incomplete"), data[:50000], 0o644)
	e, err := d.Fetch(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustRead(t, e.Path), data) {
		t.Fatal("contents differ")
	}
	reqs := h.requests()
	if last := reqs[len(reqs)-1]; last.server != "cdn" || last.rng != "bytes=50000-" {
		t.Errorf("last request %+v, want a CDN GET from byte 50000", last)
	}
}

// A mirror that redirects every file to separate storage, without the hub's
// headers: the redirect is followed for the size, the token stays behind.
func TestMirrorRedirectToStorage(t *testing.T) {
	data := testBytes(31, 100<<10)
	var mu sync.Mutex
	var storageAuth []string
	storage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		storageAuth = append(storageAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		serveBytes(w, r, data, -1)
	}))
	defer storage.Close()
	mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, storage.URL+"/objects/1?sig=abc", http.StatusFound)
	}))
	defer mirror.Close()
	f := RepoFile{DACRepo, "model.safetensors"}
	d := &Downloader{Cache: Cache{Dir: t.TempDir()}, Endpoint: mirror.URL, Token: "hf_mirror_token", Client: mirror.Client(), Backoff: 1}
	e, err := d.Fetch(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustRead(t, e.Path), data) {
		t.Fatal("contents differ")
	}
	for _, a := range storageAuth {
		if a != "" {
			t.Errorf("storage host got Authorization %q", a)
		}
	}
	if st, _ := d.Cache.Status([]RepoFile{f}); st[0].Check.State != Unverified {
		t.Errorf("check %q, want unverified", st[0].Check.State)
	}
}

// TestOfflineFromEnv reads HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE as
// huggingface_hub does: only 1/ON/YES/TRUE forbid downloads.
func TestOfflineFromEnv(t *testing.T) {
	for _, c := range []struct {
		hub, transformers string
		want              bool
	}{{"", "", false}, {"1", "", true}, {"true", "", true}, {"false", "", false}, {"0", "", false}, {"", "1", true}, {"", "yes", true}} {
		t.Setenv("HF_HUB_OFFLINE", c.hub)
		t.Setenv("TRANSFORMERS_OFFLINE", c.transformers)
		if got := OfflineFromEnv(); got != c.want {
			t.Errorf("HF_HUB_OFFLINE=%q TRANSFORMERS_OFFLINE=%q: offline %v, want %v", c.hub, c.transformers, got, c.want)
		}
	}
}
