package conformance

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPacksFollowLinks: a symbolic link to a directory is a pack; a file,
// a link to a file and a dangling link are not.
func TestPacksFollowLinks(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, "dac-a"), 0o755))
	must(os.Mkdir(filepath.Join(elsewhere, "pack"), 0o755))
	must(os.WriteFile(filepath.Join(elsewhere, "file"), nil, 0o644))
	must(os.Symlink(filepath.Join(elsewhere, "pack"), filepath.Join(dir, "dac-b")))
	must(os.Symlink(filepath.Join(elsewhere, "file"), filepath.Join(dir, "dac-c")))
	must(os.Symlink(filepath.Join(elsewhere, "absent"), filepath.Join(dir, "dac-d")))
	must(os.WriteFile(filepath.Join(dir, "dac-e"), nil, 0o644))
	must(os.Mkdir(filepath.Join(dir, "text"), 0o755))
	got, err := Packs(dir, "dac-")
	must(err)
	if want := []string{"dac-a", "dac-b"}; !slices.Equal(got, want) {
		t.Errorf("Packs(dac-) = %v, want %v", got, want)
	}
	if got, _ := Packs(dir, ""); !slices.Equal(got, []string{"dac-a", "dac-b", "text"}) {
		t.Errorf("Packs() = %v", got)
	}
	if _, err := Packs(filepath.Join(dir, "absent"), ""); err == nil {
		t.Error("a missing golden directory gave no error")
	}
}
