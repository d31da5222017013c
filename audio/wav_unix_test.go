//go:build unix

package audio

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCreateWAVHonoursUmask: CreateWAV makes its .part file, and so the
// finished WAV file, with the permissions os.Create gives (0666 less the
// umask), not 0600. The umask is process-wide, so this test does not run in
// parallel with others.
func TestCreateWAVHonoursUmask(t *testing.T) {
	for _, c := range []struct {
		umask int
		want  fs.FileMode
	}{{0o022, 0o644}, {0o027, 0o640}, {0o002, 0o664}} {
		old := syscall.Umask(c.umask)
		path := filepath.Join(t.TempDir(), "out.wav")
		w, err := CreateWAV(path, SampleRate, WAVPCM16)
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(testSignal(100, 1)); err != nil {
			t.Fatal(err)
		}
		part, err := os.Stat(w.tmp)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		final, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if part.Mode().Perm() != c.want || final.Mode().Perm() != c.want {
			t.Errorf("umask %03o: .part file %v, WAV file %v; want %v (as os.Create makes it)", c.umask, part.Mode().Perm(), final.Mode().Perm(), c.want)
		}
	}
}
