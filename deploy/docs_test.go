package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// yamlBlocks are the ```yaml code blocks of a Markdown file.
func yamlBlocks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```yaml\n(.*?)^```$").FindAllStringSubmatch(string(b), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// block is the one yaml block of docs/deploy.md holding marker.
func block(t *testing.T, marker string) string {
	t.Helper()
	var found []string
	for _, b := range yamlBlocks(t, "../docs/deploy.md") {
		if strings.Contains(b, marker) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/deploy.md has %d yaml blocks with %q, want one", len(found), marker)
	}
	return found[0]
}

// adapterRule is a discovery rule of the Prometheus adapter's
// configuration (sigs.k8s.io/prometheus-adapter pkg/config DiscoveryRule),
// every field it has, so that a misspelt one in the docs fails.
type adapterRule struct {
	SeriesQuery   string `json:"seriesQuery"`
	SeriesFilters []struct {
		Is    string `json:"is,omitempty"`
		IsNot string `json:"isNot,omitempty"`
	} `json:"seriesFilters,omitempty"`
	Resources struct {
		Template  string `json:"template,omitempty"`
		Overrides map[string]struct {
			Group    string `json:"group,omitempty"`
			Resource string `json:"resource"`
		} `json:"overrides,omitempty"`
		Namespaced *bool `json:"namespaced,omitempty"`
	} `json:"resources"`
	Name struct {
		Matches string `json:"matches"`
		As      string `json:"as"`
	} `json:"name"`
	MetricsQuery string `json:"metricsQuery"`
}

// TestDocsAdapterRule: the Prometheus adapter rule of docs/deploy.md is
// well formed and serves, under their own names and per pod, the two
// metrics the chart's HPA asks for.
func TestDocsAdapterRule(t *testing.T) {
	j, err := yaml.YAMLToJSONStrict([]byte(block(t, "seriesQuery")))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Rules struct {
			Custom []adapterRule `json:"custom"`
		} `json:"rules"`
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&values); err != nil {
		t.Fatalf("the adapter rule: %v", err)
	}
	if len(values.Rules.Custom) != 1 {
		t.Fatalf("%d rules, want one", len(values.Rules.Custom))
	}
	r := values.Rules.Custom[0]
	matches, err := regexp.Compile(r.Name.Matches)
	if err != nil {
		t.Fatalf("name.matches: %v", err)
	}
	for _, metric := range []string{activeStreamsMetric, queueLengthMetric} {
		if !strings.Contains(r.SeriesQuery, metric) {
			t.Errorf("seriesQuery %s does not find %s", r.SeriesQuery, metric)
		}
		if got := matches.ReplaceAllString(metric, r.Name.As); !matches.MatchString(metric) || got != metric {
			t.Errorf("the rule serves %s as %q, want it under its own name", metric, got)
		}
	}
	for label, resource := range map[string]string{"namespace": "namespace", "pod": "pod"} {
		if o, ok := r.Resources.Overrides[label]; !ok || o.Resource != resource {
			t.Errorf("label %s maps to %+v, want the %s resource", label, o, resource)
		}
	}
	for _, w := range []string{"<<.Series>>", "<<.LabelMatchers>>", "by (<<.GroupBy>>)"} {
		if !strings.Contains(r.MetricsQuery, w) {
			t.Errorf("metricsQuery %s lacks %s", r.MetricsQuery, w)
		}
	}
}

// TestDocsInstallValues: the values file of "Install with Helm" renders
// into valid manifests that use what it says.
func TestDocsInstallValues(t *testing.T) {
	var values map[string]any
	if err := yaml.UnmarshalStrict([]byte(block(t, "# my-values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	m := render(t, values)
	counts(t, m, 1, 1, 0, 1, 1, 0)
	pod := checkPod(t, m.deployments[0])
	checkKeyFile(t, pod, "zonos-api-keys", "api-keys")
	if c := container(t, pod.Containers, "zonos"); c.Image != "registry.example/zonos-stream:0.1.0" {
		t.Errorf("image %s, want the one the docs push", c.Image)
	}
	if len(pod.Tolerations) != 1 || pod.NodeSelector["nvidia.com/gpu.present"] != "true" {
		t.Errorf("tolerations %+v, node selector %v: not the docs' GPU nodes", pod.Tolerations, pod.NodeSelector)
	}
	checkHPA(t, m.hpas[0], m.deployments[0], defaultTargetActiveStreams, 2, 8)
}
