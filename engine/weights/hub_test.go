package weights

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultCacheFollowsHuggingFaceHub(t *testing.T) {
	home, _ := os.UserHomeDir()
	for _, tc := range []struct {
		env  map[string]string
		want string
		from string
	}{
		{map[string]string{"HF_HUB_CACHE": "/a/hub", "HF_HOME": "/b"}, "/a/hub", "HF_HUB_CACHE"},
		{map[string]string{"HUGGINGFACE_HUB_CACHE": "/legacy"}, "/legacy", "HUGGINGFACE_HUB_CACHE"},
		{map[string]string{"HF_HOME": "/b", "XDG_CACHE_HOME": "/x"}, "/b/hub", "HF_HOME"},
		{map[string]string{"XDG_CACHE_HOME": "/x"}, "/x/huggingface/hub", "XDG_CACHE_HOME"},
		{map[string]string{"HF_HOME": "~/hf"}, filepath.Join(home, "hf", "hub"), "HF_HOME"},
		{nil, filepath.Join(home, ".cache", "huggingface", "hub"), "default"},
	} {
		for _, v := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"} {
			t.Setenv(v, tc.env[v])
		}
		c, err := DefaultCache()
		if err != nil || c.Dir != tc.want || c.From != tc.from {
			t.Errorf("env %v: cache %+v (%v), want %s from %s", tc.env, c, err, tc.want, tc.from)
		}
	}
}

func TestLookupFallsBackToAnySnapshot(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	f := RepoFile{SpeakerRepo, "ResNet293_SimAM_ASP_base.pt"}
	// refs/main names a commit whose snapshot lacks the file (the repo moved
	// on); an older snapshot holds it as a plain file, as on a filesystem
	// without symlinks.
	repoDir := c.RepoDir(f.Repo)
	os.MkdirAll(filepath.Join(repoDir, "refs"), 0o755)
	os.WriteFile(filepath.Join(repoDir, "refs", "main"), []byte("1111111111111111111111111111111111111111\n"), 0o644)
	os.MkdirAll(filepath.Join(repoDir, "snapshots", "1111111111111111111111111111111111111111"), 0o755)
	old := filepath.Join(repoDir, "snapshots", "2222222222222222222222222222222222222222", f.Name)
	os.MkdirAll(filepath.Dir(old), 0o755)
	os.WriteFile(old, []byte("weights"), 0o644)

	e, ok, err := c.Lookup(f, "")
	if err != nil || !ok || e.Path != old || e.Blob != "" || e.Size != 7 {
		t.Fatalf("Lookup = %+v, %v, %v; want the older snapshot's plain file", e, ok, err)
	}
	if st, _ := c.Status([]RepoFile{f}); st[0].Check.State != Unverified {
		t.Errorf("plain file with no known hash: %q, want unverified", st[0].Check.State)
	}
	// An empty file is not a usable weight file.
	os.WriteFile(old, nil, 0o644)
	if _, ok, _ := c.Lookup(f, ""); ok {
		t.Error("an empty file was accepted")
	}
}

func TestLookupRejectsEscapes(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	for _, f := range []RepoFile{{"../etc", "passwd"}, {"a/b", "../../x"}, {"a/b", "/abs"}, {"nohash", "x"}, {"a/b/c", "x"}} {
		if _, _, err := c.Lookup(f, ""); err == nil {
			t.Errorf("Lookup(%+v) accepted", f)
		}
	}
	// A refs file pointing outside snapshots/ is ignored.
	f := RepoFile{DACRepo, "config.json"}
	os.MkdirAll(filepath.Join(c.RepoDir(f.Repo), "refs"), 0o755)
	os.WriteFile(filepath.Join(c.RepoDir(f.Repo), "refs", "main"), []byte("../../.."), 0o644)
	if c.Ref(f.Repo, "main") != "" {
		t.Error("a ref with a path was accepted")
	}
}

func TestFindBundleNamesWhatIsMissing(t *testing.T) {
	c := Cache{Dir: t.TempDir(), From: "HF_HOME"}
	_, err := FindBundle(c, Hybrid)
	var me *MissingError
	if !errors.As(err, &me) || len(me.Missing) != 6 || me.Variant != Hybrid {
		t.Fatalf("err = %v, want a MissingError for 6 hybrid files", err)
	}
	msg := err.Error()
	for _, f := range BundleFiles(Hybrid) {
		if !strings.Contains(msg, f.String()) {
			t.Errorf("message lacks %s:\n%s", f, msg)
		}
	}
	if !strings.Contains(msg, "zonos pull hybrid") {
		t.Errorf("message lacks the fix:\n%s", msg)
	}
	if _, err := FindBundle(c, "small"); err == nil || !strings.Contains(err.Error(), "hybrid or transformer") {
		t.Errorf("unknown variant: %v", err)
	}
}

func TestParseContentRange(t *testing.T) {
	for _, tc := range []struct {
		in           string
		start, total int64
		ok           bool
	}{
		{"bytes 100-199/200", 100, 200, true},
		{"bytes 0-0/*", 0, -1, true},
		{"bytes */200", 0, 0, false},
		{"items 1-2/3", 0, 0, false},
	} {
		s, tot, ok := parseContentRange(tc.in)
		if ok != tc.ok || ok && (s != tc.start || tot != tc.total) {
			t.Errorf("%q: %d %d %v", tc.in, s, tot, ok)
		}
	}
}

func TestETagExpectation(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	git := strings.Repeat("cd", 20)
	for _, tc := range []struct {
		etag string
		hub  bool
		want hashKind
	}{
		{`"` + sha + `"`, false, hashSHA256},
		{`W/"` + sha + `"`, true, hashSHA256},
		{`"` + git + `"`, true, hashGitSHA1},
		{`"` + git + `"`, false, hashNone}, // a 40-digit ETag from a non-hub server means nothing
		{`"5f3c-1a2b"`, false, hashNone},   // nginx: mtime-size
		{``, false, hashNone},
	} {
		if got := expectationFromETag(normalizeETag(tc.etag), tc.hub).Kind; got != tc.want {
			t.Errorf("%s (hub %v): kind %d, want %d", tc.etag, tc.hub, got, tc.want)
		}
	}
}

func FuzzParseContentRange(f *testing.F) {
	f.Add("bytes 100-199/200")
	f.Add("bytes 0-0/*")
	f.Add("bytes -5-3/x")
	f.Fuzz(func(t *testing.T, s string) {
		start, total, ok := parseContentRange(s)
		if ok && (start < 0 || total < -1) {
			t.Errorf("%q: start %d total %d accepted", s, start, total)
		}
	})
}

func FuzzRefAndLookupNames(f *testing.F) {
	f.Add("Zyphra/Zonos-v0.1-hybrid", "model.safetensors", "main")
	f.Add("../x", "../../etc/passwd", "../..")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, repo, name, rev string) {
		c := Cache{Dir: dir}
		e, ok, err := c.Lookup(RepoFile{repo, name}, rev)
		if err == nil && ok && !strings.HasPrefix(e.Path, dir) {
			t.Errorf("Lookup(%q, %q, %q) escaped the cache: %s", repo, name, rev, e.Path)
		}
	})
}
