package voices

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testVoice is a voice whose embedding values need every bit of a float32
// to round-trip (thirds, tiny and huge magnitudes, negative zero).
func testVoice(name string) Voice {
	e := make([]float32, EmbeddingSize)
	for i := range e {
		e[i] = float32(i-64) / 3
	}
	e[1], e[2], e[3] = 1e-38, -3.4e38, float32(math.Copysign(0, -1))
	return Voice{
		Name: name, Embedding: e,
		ClipSHA256:   strings.Repeat("ab", 32),
		ClipSeconds:  12.5,
		SpeakerModel: strings.Repeat("0f", 32),
		Created:      time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
	}
}

func sameVoice(t *testing.T, got, want Voice) {
	t.Helper()
	if got.Name != want.Name || got.ClipSHA256 != want.ClipSHA256 || got.ClipSeconds != want.ClipSeconds ||
		got.SpeakerModel != want.SpeakerModel || !got.Created.Equal(want.Created) || len(got.Embedding) != len(want.Embedding) {
		t.Fatalf("read back %+v, saved %+v", got, want)
	}
	for i := range want.Embedding {
		if math.Float32bits(got.Embedding[i]) != math.Float32bits(want.Embedding[i]) {
			t.Fatalf("embedding value %d: read %g, saved %g", i, got.Embedding[i], want.Embedding[i])
		}
	}
}

func TestAddGetListRemove(t *testing.T) {
	l := &Library{Dir: filepath.Join(t.TempDir(), "voices")}
	if vs, bad, err := l.List(); err != nil || len(vs)+len(bad) != 0 {
		t.Fatalf("a library never written to: %v %v %v", vs, bad, err)
	}
	for _, n := range []string{"Zoë", "alice", "Bob the builder"} {
		if err := l.Add(testVoice(n), false); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Get("ZOË") // case-insensitive, beyond ASCII
	if err != nil {
		t.Fatal(err)
	}
	sameVoice(t, got, testVoice("Zoë"))
	vs, bad, err := l.List()
	if err != nil || len(bad) != 0 {
		t.Fatalf("list: %v, damaged %v", err, bad)
	}
	if names := strings.Join(Names(vs), ","); names != "alice,Bob the builder,Zoë" {
		t.Fatalf("listed %s", names)
	}
	if err := l.Remove("BOB THE BUILDER"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get("Bob the builder"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after remove: %v", err)
	}
	if err := l.Remove("nobody"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"nobody"`) {
		t.Fatalf("removing a voice never saved: %v", err)
	}
	if st, err := os.Stat(l.File("alice")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("voice file: %v, mode %v; want private to the user", err, st.Mode())
	}
}

func TestDuplicatesRefusedUnlessReplaced(t *testing.T) {
	l := &Library{Dir: t.TempDir()}
	if err := l.Add(testVoice("Anna"), false); err != nil {
		t.Fatal(err)
	}
	other := testVoice("ANNA")
	other.ClipSeconds = 3
	err := l.Add(other, false)
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), `"Anna"`) {
		t.Fatalf("duplicate name: %v; want ErrExists naming the existing voice", err)
	}
	if v, _ := l.Get("anna"); v.Name != "Anna" || v.ClipSeconds != 12.5 {
		t.Fatalf("the refused add changed the voice: %+v", v)
	}
	if err := l.Add(other, true); err != nil {
		t.Fatal(err)
	}
	if v, _ := l.Get("anna"); v.Name != "ANNA" || v.ClipSeconds != 3 {
		t.Fatalf("after replace: %+v", v)
	}
	ents, _ := os.ReadDir(l.Dir)
	if len(ents) != 1 {
		t.Fatalf("%d files after add and replace; want 1 and no temporary file", len(ents))
	}
}

// TestConcurrentAddOneWins: two programs adding one name at once: exactly
// one succeeds, the others are told the name exists.
func TestConcurrentAddOneWins(t *testing.T) {
	l := &Library{Dir: t.TempDir()}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := testVoice("Race")
			v.ClipSeconds = float64(i)
			errs[i] = l.Add(v, false)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrExists):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d adds of one name succeeded; want 1", won)
	}
}

func TestBadNames(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"", "empty"},
		{"a/b", "path separator"},
		{`a\b`, "path separator"},
		{"..", "not allowed"},
		{".", "not allowed"},
		{"../escape", "path separator"},
		{".hidden", "starts with a dot"},
		{"nul\x00byte", "unprintable"},
		{"tab\there", "unprintable"},
		{" padded", "space"},
		{"padded ", "space"},
		{strings.Repeat("x", 65), "at most 64"},
		{"bad\xffutf8", "UTF-8"},
	} {
		err := CheckName(c.name)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("name %q: %v; want an error saying %q", c.name, err, c.want)
		}
		l := &Library{Dir: t.TempDir()}
		if err := l.Add(testVoice(c.name), false); err == nil {
			t.Errorf("name %q was saved", c.name)
		}
		if ents, _ := os.ReadDir(l.Dir); len(ents) != 0 {
			t.Errorf("name %q left %d files", c.name, len(ents))
		}
	}
	for _, ok := range []string{"a", "Voice 2", "Grand-père (kitchen)", "日本語の声", strings.Repeat("é", 64), "a.b"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("name %q refused: %v", ok, err)
		}
	}
}

func TestBadEmbeddingsRefused(t *testing.T) {
	l := &Library{Dir: t.TempDir()}
	short := testVoice("short")
	short.Embedding = short.Embedding[:127]
	nan := testVoice("nan")
	nan.Embedding[5] = float32(math.NaN())
	inf := testVoice("inf")
	inf.Embedding[0] = float32(math.Inf(1))
	hash := testVoice("hash")
	hash.ClipSHA256 = "not hex"
	for _, v := range []Voice{short, nan, inf, hash} {
		if err := l.Add(v, false); err == nil {
			t.Errorf("voice %s saved", v.Name)
		}
	}
}

// TestDamagedFilesReportedByName: List reads the good voices and names
// each file it cannot read, with why; Get of a damaged one names it too.
func TestDamagedFilesReportedByName(t *testing.T) {
	l := &Library{Dir: t.TempDir()}
	if err := l.Add(testVoice("good"), false); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(l.File("good"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(l.Dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := string(good)
	damaged := map[string]string{
		"garbage.json":   "\x00\x01 not json",
		"truncated.json": s[:len(s)/2],
		"other.json":     `{"format": "a theme", "version": 1}`,
		"newer.json":     strings.Replace(s, `"version": 1`, `"version": 2`, 1),
		"short.json":     strings.Replace(strings.Replace(s, `"good"`, `"short"`, 1), "\n    -21.333334,", "", 1),
		"overflow.json":  strings.Replace(strings.Replace(s, `"good"`, `"overflow"`, 1), "-21.333334", "1e39", 1),
		"renamed.json":   s, // holds "good": its file is good.json
		"big.json":       s + strings.Repeat(" ", MaxFileBytes),
	}
	for n, d := range damaged {
		write(n, d)
	}
	write(".tmp-123", "half a voice")               // an interrupted Add: not a voice
	write("notes.txt", "not a voice")               // not .json: not looked at
	os.Mkdir(filepath.Join(l.Dir, "x.json"), 0o700) // a folder: passed over
	vs, bad, err := l.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Name != "good" {
		t.Fatalf("voices %v; want the one good voice", Names(vs))
	}
	got := map[string]string{}
	for _, d := range bad {
		got[d.File] = d.Error()
	}
	for n := range damaged {
		msg, ok := got[n]
		if !ok || !strings.Contains(msg, n) {
			t.Errorf("%s: reported %q; want a message naming the file", n, msg)
		}
	}
	if len(bad) != len(damaged) {
		t.Errorf("%d damaged reported, want %d: %v", len(bad), len(damaged), got)
	}
	if !strings.Contains(got["newer.json"], "newer") || !strings.Contains(got["short.json"], "127 values") ||
		!strings.Contains(got["renamed.json"], "good.json") {
		t.Errorf("reasons: %v", got)
	}
	_, err = l.Get("garbage")
	var d *Damaged
	if !errors.As(err, &d) || d.File != "garbage.json" {
		t.Fatalf("get of a damaged voice: %v", err)
	}
	if err := l.Remove("garbage"); err != nil {
		t.Fatalf("a damaged voice cannot be removed: %v", err)
	}
}

func TestOpenFollowsXDG(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/data/home")
	l, err := Open()
	if err != nil || l.Dir != "/data/home/zonos-stream/voices" {
		t.Fatalf("%v %v", l, err)
	}
	t.Setenv("XDG_DATA_HOME", "relative/dir") // not absolute: ignored, as the spec says
	t.Setenv("HOME", "/home/u")
	if l, err = Open(); err != nil || l.Dir != "/home/u/.local/share/zonos-stream/voices" {
		t.Fatalf("%v %v", l, err)
	}
}
