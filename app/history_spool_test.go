package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"zonostream/engine"
)

// filesUnder lists every file below dir (relative names).
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			r, _ := filepath.Rel(dir, p)
			out = append(out, r)
		}
		return nil
	})
	return out
}

func collect(t *testing.T, u *Utterance) []float32 {
	t.Helper()
	var got []float32
	if err := u.EachPCM(func(p []float32) error { got = append(got, p...); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSpoolMovesLongAudioToDisk: past the threshold the audio goes to a
// WAV file with nothing left in memory, reads back bit for bit (in
// one-second pieces), and a cancel keeps only what was heard.
func TestSpoolMovesLongAudioToDisk(t *testing.T) {
	dir := t.TempDir()
	sp := newPCMSpool(dir, 1000)
	var all []float32
	for i := range 7 {
		chunk := make([]float32, 700)
		for j := range chunk {
			chunk[j] = float32(i*700+j) / 7000
		}
		all = append(all, chunk...)
		sp.Write(chunk)
		if i >= 1 && (sp.w == nil || len(sp.mem) != 0) {
			t.Fatalf("after %d samples: file %v, %d samples in memory", len(all), sp.w != nil, len(sp.mem))
		}
	}
	sp.Truncate(4321)
	u := &Utterance{}
	if err := sp.finish(u); err != nil {
		t.Fatal(err)
	}
	if !u.OnDisk() || u.PCM != nil || u.Samples() != 4321 {
		t.Fatalf("on disk %v, PCM %d, samples %d; want true, 0, 4321", u.OnDisk(), len(u.PCM), u.Samples())
	}
	got := collect(t, u)
	if len(got) != 4321 {
		t.Fatalf("read back %d samples", len(got))
	}
	for i := range got {
		if got[i] != all[i] {
			t.Fatalf("sample %d: %g, wrote %g", i, got[i], all[i])
		}
	}
	if files := filesUnder(t, dir); len(files) != 1 || !strings.HasSuffix(files[0], ".wav") {
		t.Fatalf("files %q, want the one WAV (no .part left)", files)
	}

	short := newPCMSpool(dir, 1000)
	short.Write(make([]float32, 999))
	v := &Utterance{}
	if err := short.finish(v); err != nil || v.OnDisk() || len(v.PCM) != 999 {
		t.Fatalf("short utterance: err %v, on disk %v, %d samples", err, v.OnDisk(), len(v.PCM))
	}
}

// TestSpoolWithoutAFolderStaysInMemory: a folder that cannot be written
// keeps the utterance in memory, whole, and says so.
func TestSpoolWithoutAFolderStaysInMemory(t *testing.T) {
	sp := newPCMSpool(filepath.Join(t.TempDir(), "missing", "deeper"), 10)
	sp.Write(make([]float32, 50))
	sp.Write(make([]float32, 50))
	u := &Utterance{}
	err := sp.finish(u)
	if err == nil || !strings.Contains(err.Error(), "in memory") || u.OnDisk() || len(u.PCM) != 100 {
		t.Fatalf("err %v, on disk %v, %d samples; want a note and 100 in memory", err, u.OnDisk(), len(u.PCM))
	}
}

// TestHistoryDeletesFilesItDrops: a file goes when its utterance leaves
// the history, the folder goes on Close, and a new history removes the
// folder of an app that ended without cleaning up but not one still held.
func TestHistoryDeletesFilesItDrops(t *testing.T) {
	root := t.TempDir()
	stale := filepath.Join(root, "app-crashed")
	os.MkdirAll(stale, 0o755)
	os.WriteFile(filepath.Join(stale, "lock"), nil, 0o644)
	os.WriteFile(filepath.Join(stale, "utterance-1.wav"), []byte("old"), 0o644)
	held := filepath.Join(root, "app-running")
	os.MkdirAll(held, 0o755)
	lf, err := os.Create(filepath.Join(held, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := lockFile(lf); err != nil {
		t.Fatal(err)
	}

	h := NewHistory(2, 1<<20)
	h.after = 100
	if err := h.UseDisk(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale folder still there (%v)", err)
	}
	if _, err := os.Stat(held); err != nil {
		t.Fatalf("the folder of a running app was removed: %v", err)
	}
	add := func(n int) *Utterance {
		sp := h.spool()
		sp.Write(make([]float32, n))
		u := &Utterance{}
		if err := sp.finish(u); err != nil {
			t.Fatal(err)
		}
		return h.Add(u)
	}
	a := add(500)
	b := add(50) // in memory
	if !a.OnDisk() || b.OnDisk() {
		t.Fatalf("a on disk %v, b on disk %v", a.OnDisk(), b.OnDisk())
	}
	if _, err := os.Stat(a.file); err != nil {
		t.Fatal(err)
	}
	add(600) // the limit of 2 drops a
	if _, err := os.Stat(a.file); !os.IsNotExist(err) {
		t.Fatalf("a's file is still there after it left the history (%v)", err)
	}
	if err := a.EachPCM(func([]float32) error { return nil }); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("reading a dropped utterance: %v", err)
	}
	h.disk = 1000
	c := add(700) // 600 + 700 on disk > 1000: the older one goes
	if got := h.List(); len(got) != 1 || got[0] != c {
		t.Fatalf("history %d items after the disk limit", len(got))
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if files := filesUnder(t, root); len(files) != 1 || files[0] != filepath.Join("app-running", "lock") {
		t.Fatalf("after Close: %q", files)
	}
}

// TestLongUtteranceReplaysFromDisk: a spoken utterance past the threshold
// is kept on disk; it replays from there on the output, every sample, and
// saves to the same samples; the history folder holds nothing else.
func TestLongUtteranceReplaysFromDisk(t *testing.T) {
	ui := newTestUI(t, true)
	root := t.TempDir()
	if err := ui.Speaker.History.UseDisk(root); err != nil {
		t.Fatal(err)
	}
	ui.Speaker.History.after = 2048
	ui.speak(t, "Kept on disk.")
	u := ui.Speaker.History.Last()
	if u.Outcome != PhaseDone || !u.OnDisk() || u.Samples() <= 2048 {
		t.Fatalf("outcome %s, on disk %v, %d samples", u.Outcome, u.OnDisk(), u.Samples())
	}
	if got := ui.Speaker.Meters.Snapshot().AudioSeconds; float64(u.Samples())/engine.SampleRate != got {
		t.Fatalf("history holds %d samples, the meters %.4f s", u.Samples(), got)
	}
	before := ui.out.P.Played()
	ui.on(func() {
		if err := ui.Speaker.PlayUtterance(u); err != nil {
			t.Fatal(err)
		}
		ui.busy()
	})
	ui.waitEnded(t)
	if played := ui.out.P.Played() - before; played != int64(u.Samples()) {
		t.Fatalf("replay played %d of %d samples", played, u.Samples())
	}
	path := filepath.Join(t.TempDir(), "saved.wav")
	if err := SaveUtteranceWAV(path, u); err != nil {
		t.Fatal(err)
	}
	c := readWAV(t, path)
	want := collect(t, u)
	if len(c.Samples) != len(want) {
		t.Fatalf("saved %d samples, kept %d", len(c.Samples), len(want))
	}
	for i := range want {
		if c.Samples[i] != want[i] {
			t.Fatalf("sample %d differs", i)
		}
	}
	files := filesUnder(t, root)
	if len(files) != 2 {
		t.Fatalf("history folder holds %q, want its lock and one WAV", files)
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".part") {
			t.Fatalf("temporary file left: %s", f)
		}
	}
}
