package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportThatFailsToFinish: when closing an export's file fails after
// the file was renamed to its path (the header or the sync failed), the
// export says the file was written but may be incomplete, in the error
// and in the Read tab; when the rename did not happen, it does not.
func TestExportThatFailsToFinish(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "book.wav")
	syncErr := errors.New("WAV book.wav: syncing to disk: input/output error")
	renamed := func() error { // Close: the file goes into place, then the error
		tmp := path + ".part"
		if err := os.WriteFile(tmp, []byte("RIFF"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		return syncErr
	}
	notRenamed := func() error { return syncErr }

	if err := finishExport(path, nil, func() error { return nil }); err != nil {
		t.Fatalf("a clean close: %v", err)
	}
	os.Remove(path)
	err := finishExport(path, nil, renamed)
	if !errors.Is(err, errExportIncomplete) || !errors.Is(err, syncErr) {
		t.Fatalf("renamed into an empty place: %v", err)
	}
	before, _ := os.Stat(path) // an earlier file at the path
	if err := finishExport(path, before, renamed); !errors.Is(err, errExportIncomplete) {
		t.Fatalf("renamed over an earlier file: %v", err)
	}
	before, _ = os.Stat(path)
	if err := finishExport(path, before, notRenamed); errors.Is(err, errExportIncomplete) || !errors.Is(err, syncErr) {
		t.Fatalf("the earlier file stayed: %v", err)
	}
	os.Remove(path)
	if err := finishExport(path, nil, notRenamed); errors.Is(err, errExportIncomplete) || !errors.Is(err, syncErr) {
		t.Fatalf("nothing at the path: %v", err)
	}

	ui := newTestUI(t, false)
	ui.openText(t, "book.txt", "A book.")
	ui.on(func() {
		ui.reading.exportEnded(path, 1000, finishExport(path, nil, renamed))
		if msg := ui.status.Text; !strings.Contains(msg, "written but may be incomplete") || strings.Contains(msg, "nothing was written") {
			t.Errorf("status %q", msg)
		}
	})
}
