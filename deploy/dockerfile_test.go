package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, …
	args string
}

// stage is one FROM … AS name and what follows it.
type stage struct {
	image, name string
	body        []instruction
}

// parseDockerfile splits a Dockerfile into its stages, as the builder
// reads it: comments and blank lines dropped, lines ending in \ joined.
func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			if len(f) != 3 || !strings.EqualFold(f[1], "AS") {
				t.Fatalf("FROM %s: want FROM image AS name", in.args)
			}
			stages = append(stages, stage{image: f[0], name: f[2]})
			return
		}
		if len(stages) == 0 {
			t.Fatalf("%s before the first FROM", in.cmd)
		}
		s := &stages[len(stages)-1]
		s.body = append(s.body, in)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") { // also inside a continued instruction
			continue
		}
		if s, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(trimmed)
		flush()
	}
	flush()
	return stages
}

func (s stage) all(cmd string) []string {
	var out []string
	for _, in := range s.body {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

// aptPackages are the packages the stage's RUNs give apt-get install.
func (s stage) aptPackages() []string {
	var pkgs []string
	for _, run := range s.all("RUN") {
		for _, part := range strings.Split(run, "&&") {
			f := strings.Fields(part)
			i := slices.Index(f, "install")
			if i < 0 || !slices.ContainsFunc(f[:i], func(w string) bool { return w == "apt-get" }) {
				continue
			}
			for _, w := range f[i+1:] {
				if !strings.HasPrefix(w, "-") {
					pkgs = append(pkgs, w)
				}
			}
		}
	}
	return pkgs
}

// TestDockerfileStages: a Go 1.26 Debian 12 build stage making the CUDA
// zonos, and a slim Debian 12 run stage that starts zonos serve on every
// interface as a non-root user.
func TestDockerfileStages(t *testing.T) {
	stages := parseDockerfile(t, "Dockerfile")
	if len(stages) != 2 {
		t.Fatalf("%d stages, want build and run", len(stages))
	}
	build, run := stages[0], stages[1]
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVersion == nil {
		t.Fatal("go.mod names no go version")
	}
	if want := "golang:" + string(goVersion[1]) + "-bookworm"; build.image != want || build.name != "build" {
		t.Errorf("first stage FROM %s AS %s, want %s AS build (go.mod's Go on Debian 12)", build.image, build.name, want)
	}
	if !slices.ContainsFunc(build.all("RUN"), func(r string) bool {
		return strings.Contains(r, "go build") && strings.Contains(r, "-tags cuda") && strings.Contains(r, "./cmd/zonos")
	}) {
		t.Errorf("the build stage does not go build -tags cuda ./cmd/zonos: %q", build.all("RUN"))
	}
	// The CUDA headers come as make cuda-deps gets them: Debian non-free.
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	const nonFree = `s/^Components: main$/Components: main contrib non-free/`
	if !strings.Contains(string(makefile), strings.ReplaceAll(nonFree, "$", "$$")) {
		t.Errorf("the Makefile's cuda-deps no longer enables non-free with %s", nonFree)
	}
	if !slices.ContainsFunc(build.all("RUN"), func(r string) bool { return strings.Contains(r, nonFree) }) ||
		!slices.Contains(build.aptPackages(), "nvidia-cuda-dev") {
		t.Errorf("the build stage does not install nvidia-cuda-dev from non-free as make cuda-deps does")
	}

	if run.image != "debian:bookworm-slim" || run.name != "run" {
		t.Errorf("final stage FROM %s AS %s, want debian:bookworm-slim AS run", run.image, run.name)
	}
	if !slices.ContainsFunc(run.all("COPY"), func(c string) bool {
		return strings.HasPrefix(c, "--from="+build.name+" ") && strings.HasSuffix(c, " /usr/local/bin/zonos")
	}) {
		t.Errorf("the run stage does not copy zonos from the build stage: %q", run.all("COPY"))
	}
	users := run.all("USER")
	if len(users) == 0 {
		t.Fatal("the run stage sets no USER: it would run as root")
	}
	uid, _, _ := strings.Cut(users[len(users)-1], ":")
	if uid == "0" || uid == "root" || !regexp.MustCompile(`^\d+$`).MatchString(uid) {
		t.Errorf("USER %s: want a numeric non-root user (runAsNonRoot can check only a number)", users[len(users)-1])
	}
	entry := run.all("ENTRYPOINT")
	if len(entry) != 1 {
		t.Fatalf("ENTRYPOINT %q, want one", entry)
	}
	var argv []string
	if err := json.Unmarshal([]byte(entry[0]), &argv); err != nil {
		t.Fatalf("ENTRYPOINT %s is not the exec form (signals must reach zonos): %v", entry[0], err)
	}
	if want := []string{"zonos", "serve", "--listen", "0.0.0.0:8790"}; !slices.Equal(argv, want) {
		t.Errorf("ENTRYPOINT %q, want %q", argv, want)
	}
	if !slices.Contains(run.all("EXPOSE"), "8790") {
		t.Errorf("EXPOSE %q, want 8790", run.all("EXPOSE"))
	}
	env := strings.Join(run.all("ENV"), " ")
	for _, w := range []string{"HF_HOME=/models", "NVIDIA_DRIVER_CAPABILITIES=compute"} {
		if !strings.Contains(env, w) {
			t.Errorf("the run stage's ENV %q lacks %s", env, w)
		}
	}
}

// cgoLibraries maps each library cmd/zonos links (a -l flag or a
// pkg-config name) to the Debian package that builds against it and the
// one that provides it at run time; "" where the base image (glibc) or
// the NVIDIA driver provides it.
var cgoLibraries = map[string]struct{ dev, run string }{
	"pthread":    {}, // glibc
	"dl":         {},
	"m":          {},
	"resolv":     {},
	"cuda":       {dev: "nvidia-cuda-dev"}, // libcuda.so.1 comes from the driver
	"espeak-ng":  {dev: "libespeak-ng-dev", run: "libespeak-ng1"},
	"mp3lame":    {dev: "libmp3lame-dev", run: "libmp3lame0"},
	"libopusenc": {dev: "libopusenc-dev", run: "libopusenc0"},
}

// TestDockerfileLibraries: every C library the CUDA build of cmd/zonos
// links (go list's cgo flags) is installed in the build stage and, where
// Debian provides it, in the run stage; espeak-ng's phoneme data too.
func TestDockerfileLibraries(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "cuda",
		"-f", `{{join .CgoLDFLAGS " "}} {{range .CgoPkgConfig}}pkg-config:{{.}} {{end}}`, "../cmd/zonos").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	libs := map[string]bool{}
	for _, w := range strings.Fields(string(out)) {
		if l, ok := strings.CutPrefix(w, "-l"); ok {
			libs[l] = true
		} else if p, ok := strings.CutPrefix(w, "pkg-config:"); ok {
			libs[p] = true
		}
	}
	if !libs["espeak-ng"] || !libs["cuda"] {
		t.Fatalf("go list found the libraries %v, without espeak-ng and cuda", libs)
	}
	stages := parseDockerfile(t, "Dockerfile")
	buildPkgs, runPkgs := stages[0].aptPackages(), stages[len(stages)-1].aptPackages()
	for l := range libs {
		p, ok := cgoLibraries[l]
		if !ok {
			t.Errorf("cmd/zonos links %s: add its Debian packages to deploy/Dockerfile and to cgoLibraries here", l)
			continue
		}
		if p.dev != "" && !slices.Contains(buildPkgs, p.dev) {
			t.Errorf("the build stage lacks %s (for %s)", p.dev, l)
		}
		if p.run != "" && !slices.Contains(runPkgs, p.run) {
			t.Errorf("the run stage lacks %s (for %s)", p.run, l)
		}
	}
	for _, p := range []string{"espeak-ng-data", "ca-certificates"} { // phoneme data; TLS for zonos pull
		if !slices.Contains(runPkgs, p) {
			t.Errorf("the run stage lacks %s", p)
		}
	}
	for _, p := range runPkgs {
		if strings.HasSuffix(p, "-dev") {
			t.Errorf("the run stage installs the build package %s", p)
		}
	}
}
