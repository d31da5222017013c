package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeTools puts stand-ins for the programs `make deps` and `make
// cuda-deps` call first on PATH: id says root (no sudo), dpkg-query finds
// nothing installed, pgrep sees unattended-upgrades running, sleep returns
// at once, and apt-get logs its environment and arguments to calls.log.
// apt-get update answers as apt 2.6 does while another process holds the
// package-list lock, for the first $LOCKED_UPDATES calls; with
// $BROKEN_UPDATE set it fails as a broken source does.
func fakeTools(t *testing.T) (bin, log string) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	bin = t.TempDir()
	log = filepath.Join(bin, "calls.log")
	scripts := map[string]string{
		"id":         `echo 0`,
		"dpkg-query": `exit 1`,
		"sudo":       `echo "sudo called: $*" >>"$FAKE_LOG"; exit 1`,
		"sleep":      `echo "sleep $*" >>"$FAKE_LOG"`,
		"pgrep": `case " $* " in *" -l "*) echo "4242 unattended-upgr";; esac
exit 0`,
		"apt-get": `echo "apt-get LC_ALL=${LC_ALL-} DEBIAN_FRONTEND=${DEBIAN_FRONTEND-} $*" >>"$FAKE_LOG"
case " $* " in
*" update "*)
  n=$(grep -c ' update ' "$FAKE_LOG")
  if [ -n "${BROKEN_UPDATE-}" ]; then
    echo "E: The repository 'http://deb.example bookworm Release' does not have a Release file." >&2; exit 100
  fi
  if [ "$n" -le "${LOCKED_UPDATES:-0}" ]; then
    echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
    echo "E: Unable to lock directory /var/lib/apt/lists/" >&2
    exit 100
  fi;;
esac
exit 0`,
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin, log
}

// makeWith runs make in the repository root with the fake tools first on
// PATH; it returns the output, the apt-get/sleep log and make's error.
func makeWith(t *testing.T, bin, log string, env []string, args ...string) (out string, calls []string, err error) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-s", "--no-print-directory"}, args...)...)
	cmd.Dir = ".."
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "LOCKED_UPDATES", "BROKEN_UPDATE", "APT_LOCK_WAIT":
			// not from an outer make (make test) or the caller
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_LOG="+log)
	cmd.Env = append(cmd.Env, env...)
	b, err := cmd.CombinedOutput()
	raw, _ := os.ReadFile(log)
	os.Remove(log)
	return string(b), strings.Split(strings.TrimSpace(string(raw)), "\n"), err
}

func aptCalls(calls []string, verb string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, "apt-get ") && strings.Contains(" "+c+" ", " "+verb+" ") {
			out = append(out, c)
		}
	}
	return out
}

// TestDepsWaitsForAptLock: `make deps` waits for another apt process
// (unattended-upgrades on a fresh machine) instead of failing at once:
// apt-get update is retried while the package-list lock is held, saying
// so once; every apt-get call carries the dpkg lock timeout; a failure
// that is not the lock still fails at once, and so does a lock held past
// APT_LOCK_WAIT.
func TestDepsWaitsForAptLock(t *testing.T) {
	bin, log := fakeTools(t)
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^DEB_PKGS := (.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no DEB_PKGS in the Makefile")
	}
	pkgs := string(m[1])

	out, calls, err := makeWith(t, bin, log, []string{"LOCKED_UPDATES=2"}, "deps")
	if err != nil {
		t.Fatalf("make deps with the lock held for two tries: %v\n%s", err, out)
	}
	updates, installs := aptCalls(calls, "update"), aptCalls(calls, "install")
	if len(updates) != 3 || len(installs) != 1 {
		t.Fatalf("want 3 apt-get update (2 locked) and 1 install, got:\n%s", strings.Join(calls, "\n"))
	}
	for _, c := range append(updates, installs...) {
		if !strings.Contains(c, " -o DPkg::Lock::Timeout=600 ") || !strings.Contains(c, "DEBIAN_FRONTEND=noninteractive") {
			t.Errorf("apt-get call without the lock timeout or the noninteractive frontend: %s", c)
		}
	}
	for _, c := range updates {
		if !strings.Contains(c, "LC_ALL=C ") {
			t.Errorf("apt-get update not in the C locale (its lock message is matched in English): %s", c)
		}
	}
	if !strings.HasSuffix(installs[0], "install -y -qq --no-install-recommends "+pkgs) {
		t.Errorf("install call %q does not install DEB_PKGS %q", installs[0], pkgs)
	}
	if n := strings.Count(out, "waiting up to 600 s for another apt process"); n != 1 {
		t.Errorf("the wait for the package lists is announced %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "another package manager is running (4242 unattended-upgr)") {
		t.Errorf("the wait for the dpkg lock is not announced:\n%s", out)
	}
	if strings.Count(strings.Join(calls, "\n"), "sleep ") != 2 {
		t.Errorf("want a sleep after each locked update:\n%s", strings.Join(calls, "\n"))
	}

	out, calls, err = makeWith(t, bin, log, []string{"BROKEN_UPDATE=1"}, "deps")
	if err == nil || !strings.Contains(out, "does not have a Release file") {
		t.Fatalf("a broken source: make deps err %v, output:\n%s", err, out)
	}
	if len(aptCalls(calls, "update")) != 1 || len(aptCalls(calls, "install")) != 0 {
		t.Errorf("a failure other than the lock was retried or went on to install:\n%s", strings.Join(calls, "\n"))
	}

	out, calls, err = makeWith(t, bin, log, []string{"LOCKED_UPDATES=100"}, "deps", "APT_LOCK_WAIT=10")
	if err == nil || !strings.Contains(out, "Could not get lock") {
		t.Fatalf("a lock held past APT_LOCK_WAIT: make deps err %v, output:\n%s", err, out)
	}
	if n := len(aptCalls(calls, "update")); n != 3 {
		t.Errorf("APT_LOCK_WAIT=10 with 5 s between tries: %d update tries, want 3 (0, 5, 10 s)", n)
	}
}

// TestCUDADepsWaitsForAptLock: `make cuda-deps` enables contrib and
// non-free, then installs nvidia-cuda-dev through the same waiting steps.
func TestCUDADepsWaitsForAptLock(t *testing.T) {
	bin, log := fakeTools(t)
	sources := filepath.Join(t.TempDir(), "debian.sources")
	if err := os.WriteFile(sources, []byte("Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, calls, err := makeWith(t, bin, log, []string{"LOCKED_UPDATES=1"}, "cuda-deps",
		"CUDA_H="+filepath.Join(bin, "no-cuda.h"), "DEBIAN_SOURCES="+sources)
	if err != nil {
		t.Fatalf("make cuda-deps: %v\n%s", err, out)
	}
	b, err := os.ReadFile(sources)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nComponents: main contrib non-free\n") {
		t.Errorf("contrib and non-free not enabled:\n%s", b)
	}
	updates, installs := aptCalls(calls, "update"), aptCalls(calls, "install")
	if len(updates) != 2 || len(installs) != 1 || !strings.HasSuffix(installs[0], " nvidia-cuda-dev") {
		t.Fatalf("want 2 updates (1 locked) and an install of nvidia-cuda-dev, got:\n%s", strings.Join(calls, "\n"))
	}
	for _, c := range append(updates, installs...) {
		if !strings.Contains(c, " -o DPkg::Lock::Timeout=600 ") {
			t.Errorf("apt-get call without the lock timeout: %s", c)
		}
	}
	if !strings.Contains(out, "waiting up to 600 s for another apt process") {
		t.Errorf("the wait is not announced:\n%s", out)
	}
}
