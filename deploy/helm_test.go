package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// chartDir is the chart under test, relative to this package.
const chartDir = "helm/zonos-stream"

// helmBin finds the helm that make test-deps installs into .tools/ at the
// module root ($HELM overrides it). Without it the chart tests fail, not
// skip, unless -short: a chart nobody renders is a chart nobody tests.
func helmBin(t *testing.T) string {
	t.Helper()
	path := os.Getenv("HELM")
	if path == "" {
		abs, err := filepath.Abs(filepath.Join("..", ".tools", "helm"))
		if err != nil {
			t.Fatal(err)
		}
		path = abs
	}
	if _, err := os.Stat(path); err != nil {
		if testing.Short() {
			t.Skipf("no helm at %s (-short)", path)
		}
		t.Fatalf("no helm at %s: run make test-deps (it installs helm into .tools/), or point $HELM at one", path)
	}
	return path
}

// helm runs helm with its caches and configuration in a temporary folder,
// so a test neither reads nor writes the user's. It returns stdout, and
// stderr in the error when helm fails.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	bin := helmBin(t)
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.Bytes(), fmt.Errorf("helm %s: %w: %s", args[0], err, stderr.String())
		}
		t.Fatalf("helm %v: %v", args, err)
	}
	return stdout.Bytes(), nil
}

// valuesFile writes values (merged by helm over the chart's values.yaml)
// to a file for -f.
func valuesFile(t *testing.T, values map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Test names of the release and its namespace.
const (
	release   = "speech"
	namespace = "voice"
)

// template renders the chart with values as helm install would.
func template(t *testing.T, values map[string]any) ([]byte, error) {
	t.Helper()
	return helm(t, "template", release, chartDir, "--namespace", namespace, "-f", valuesFile(t, values))
}
