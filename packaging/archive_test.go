package packaging

import (
	"bytes"
	"fmt"
	"image/png"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const testVersion = "0.0.0-archivetest"

var iconSizes = []int{48, 64, 128, 256, 512}

// appID reads Details.ID from FyneApp.toml, the id the desktop entry, the
// icons and the metainfo are named by.
func appID(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../FyneApp.toml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*ID\s*=\s*"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatal("FyneApp.toml has no ID")
	}
	return string(m[1])
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: make deps installs it (DEB_PKGS)", tool)
		}
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// files lists the regular files under dir, relative and slash-separated.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got = append(got, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

// TestCPUArchive builds the CPU release archive as `make package` does,
// unpacks it, checks every file in it, runs `zonos --version` from it,
// validates the desktop entry and the metainfo, and installs and uninstalls
// it with its own Makefile.
func TestCPUArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release archive (a minute or more); runs without -short")
	}
	need(t, "tar", "xz", "make", "desktop-file-validate", "appstreamcli")
	id := appID(t)
	out := t.TempDir()
	run(t, "..", []string{"VERSION=" + testVersion}, "packaging/package.sh", "--out", out, "cpu")

	name := "zonos-stream-" + testVersion + "-linux-" + runtime.GOARCH + "-cpu"
	archive := filepath.Join(out, name+".tar.xz")
	unpacked := filepath.Join(out, "unpacked")
	if err := os.Mkdir(unpacked, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, "", nil, "tar", "-xJf", archive, "-C", unpacked)
	if tops, _ := os.ReadDir(unpacked); len(tops) != 1 || tops[0].Name() != name {
		t.Fatalf("archive's top level: want the one folder %s, got %v", name, tops)
	}
	top := filepath.Join(unpacked, name)

	want := []string{
		"LICENSE", "Makefile", "README.md", "VERSION",
		"usr/local/bin/zonos", "usr/local/bin/zonos-stream",
		"usr/local/share/applications/" + id + ".desktop",
		"usr/local/share/metainfo/" + id + ".metainfo.xml",
	}
	for _, n := range iconSizes {
		want = append(want, iconPath(n, id))
	}
	slices.Sort(want)
	if got := files(t, top); !slices.Equal(got, want) {
		t.Fatalf("archive files:\n got %q\nwant %q", got, want)
	}
	for _, b := range []string{"zonos", "zonos-stream"} {
		fi, err := os.Stat(filepath.Join(top, "usr/local/bin", b))
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v (%v), want 0755", b, fi.Mode(), err)
		}
	}

	if v := strings.TrimSpace(run(t, top, nil, "./usr/local/bin/zonos", "--version")); v != "zonos "+testVersion {
		t.Errorf("zonos --version = %q, want %q", v, "zonos "+testVersion)
	}
	if v, _ := os.ReadFile(filepath.Join(top, "VERSION")); !strings.Contains(string(v), testVersion+" linux-"+runtime.GOARCH+" cpu") {
		t.Errorf("VERSION = %q", v)
	}

	desktop := filepath.Join(top, "usr/local/share/applications", id+".desktop")
	run(t, "", nil, "desktop-file-validate", desktop)
	d, _ := os.ReadFile(desktop)
	for _, line := range []string{"Name=Zonos Stream", "Exec=zonos-stream", "Icon=" + id, "Categories=AudioVideo;Audio;"} {
		if !slices.Contains(strings.Split(string(d), "\n"), line) {
			t.Errorf("desktop entry lacks %q:\n%s", line, d)
		}
	}
	metainfo := filepath.Join(top, "usr/local/share/metainfo", id+".metainfo.xml")
	run(t, "", nil, "appstreamcli", "validate", "--no-net", metainfo)
	m, _ := os.ReadFile(metainfo)
	for _, s := range []string{"<id>" + id + "</id>", `<launchable type="desktop-id">` + id + ".desktop</launchable>", `<release version="` + testVersion + `"`} {
		if !bytes.Contains(m, []byte(s)) {
			t.Errorf("metainfo lacks %s", s)
		}
	}
	for _, n := range iconSizes {
		f, err := os.Open(filepath.Join(top, iconPath(n, id)))
		if err != nil {
			t.Fatal(err)
		}
		c, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || c.Width != n || c.Height != n {
			t.Errorf("icon %d: %dx%d (%v)", n, c.Width, c.Height, err)
		}
	}

	// Install into a scratch PREFIX with the archive's own Makefile, then
	// uninstall: nothing of ours may be left.
	prefix := filepath.Join(out, "prefix")
	run(t, top, nil, "make", "install", "PREFIX="+prefix)
	installed := []string{
		"bin/zonos", "bin/zonos-stream",
		"share/applications/" + id + ".desktop",
		"share/metainfo/" + id + ".metainfo.xml",
	}
	for _, n := range iconSizes {
		installed = append(installed, strings.TrimPrefix(iconPath(n, id), "usr/local/"))
	}
	slices.Sort(installed)
	got := slices.DeleteFunc(files(t, prefix), func(p string) bool {
		return p == "share/applications/mimeinfo.cache" // update-desktop-database's, where present
	})
	if !slices.Equal(got, installed) {
		t.Fatalf("installed files:\n got %q\nwant %q", got, installed)
	}
	idesk := filepath.Join(prefix, "share/applications", id+".desktop")
	run(t, "", nil, "desktop-file-validate", idesk)
	if d, _ := os.ReadFile(idesk); !strings.Contains(string(d), "\nExec="+prefix+"/bin/zonos-stream\n") {
		t.Errorf("installed desktop entry does not run %s/bin/zonos-stream:\n%s", prefix, d)
	}
	if v := strings.TrimSpace(run(t, "", nil, filepath.Join(prefix, "bin/zonos"), "--version")); v != "zonos "+testVersion {
		t.Errorf("installed zonos --version = %q", v)
	}
	run(t, top, nil, "make", "uninstall", "PREFIX="+prefix)
	left := slices.DeleteFunc(files(t, prefix), func(p string) bool { return p == "share/applications/mimeinfo.cache" })
	if len(left) != 0 {
		t.Errorf("left after uninstall: %q", left)
	}
}

func iconPath(n int, id string) string {
	return fmt.Sprintf("usr/local/share/icons/hicolor/%dx%d/apps/%s.png", n, n, id)
}

// TestMetainfoTemplate validates the metainfo as package.sh fills it, without
// building anything (runs under -short too).
func TestMetainfoTemplate(t *testing.T) {
	if _, err := exec.LookPath("appstreamcli"); err != nil {
		t.Skip("appstreamcli not found (make deps installs appstream)")
	}
	tpl, err := os.ReadFile("metainfo.xml.in")
	if err != nil {
		t.Fatal(err)
	}
	id := appID(t)
	x := strings.NewReplacer("@APPID@", id, "@VERSION@", "1.2.3", "@DATE@", "2026-01-02").Replace(string(tpl))
	if strings.Contains(x, "@") {
		t.Fatalf("unfilled placeholder in metainfo.xml.in:\n%s", x)
	}
	p := filepath.Join(t.TempDir(), id+".metainfo.xml")
	if err := os.WriteFile(p, []byte(x), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "", nil, "appstreamcli", "validate", "--no-net", "--pedantic", p)
}
