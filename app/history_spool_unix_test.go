//go:build unix

package app

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestSpoolDiskFullSaysItOnce: the disk refuses the spool file's bytes
// part way (RLIMIT_FSIZE in a child process: EFBIG, the path ENOSPC takes).
// The history keeps what reached the file, and its note names the failed
// write once, not the same error twice.
func TestSpoolDiskFullSaysItOnce(t *testing.T) {
	if dir := os.Getenv("ZONOS_SPOOLFULL_DIR"); dir != "" {
		const limit = 94 + 4*2000 // a float32 file's 94-byte header and 2000 samples
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			os.Exit(99)
		}
		sp := newPCMSpool(dir, 1000)
		for range 5 {
			sp.Write(make([]float32, 700))
		}
		u := &Utterance{}
		err := sp.finish(u)
		fmt.Printf("samples %d\n%v\n", u.Samples(), err)
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpoolDiskFullSaysItOnce$")
	cmd.Env = append(os.Environ(), "ZONOS_SPOOLFULL_DIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "samples "+strconv.Itoa(2000)+"\n") || !strings.Contains(out, "only the first") {
		t.Fatalf("want 2000 samples kept and a note saying so; child said:\n%s", out)
	}
	if n := strings.Count(out, "file too large"); n != 1 {
		t.Fatalf("the note names the failed write %d times:\n%s", n, out)
	}
	t.Logf("note: %s", strings.TrimSpace(out[strings.IndexByte(out, '\n')+1:]))
}
