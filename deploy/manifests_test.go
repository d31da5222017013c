package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// manifests are the objects of one rendering of the chart, each decoded
// into its API type.
type manifests struct {
	deployments    []*appsv1.Deployment
	services       []*corev1.Service
	secrets        []*corev1.Secret
	pdbs           []*policyv1.PodDisruptionBudget
	hpas           []*autoscalingv2.HorizontalPodAutoscaler
	serviceMonitor []*monitoringv1.ServiceMonitor
}

// docSeparator splits helm template's output into YAML documents.
var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeManifests decodes every document of out strictly: a kind the chart
// should not make, a field the API type lacks (a misspelt or misplaced
// one) or a duplicated key is an error, as the API server's strict field
// validation would refuse it.
func decodeManifests(out []byte) (*manifests, error) {
	m := &manifests{}
	for i, doc := range docSeparator.Split(string(out), -1) {
		if isBlankYAML(doc) {
			continue
		}
		j, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("document %d: %w\n%s", i, err, doc)
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(j, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var obj any
		switch gvk := tm.APIVersion + " " + tm.Kind; gvk {
		case "apps/v1 Deployment":
			obj = add(&m.deployments)
		case "v1 Service":
			obj = add(&m.services)
		case "v1 Secret":
			obj = add(&m.secrets)
		case "policy/v1 PodDisruptionBudget":
			obj = add(&m.pdbs)
		case "autoscaling/v2 HorizontalPodAutoscaler":
			obj = add(&m.hpas)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			obj = add(&m.serviceMonitor)
		default:
			return nil, fmt.Errorf("document %d: the chart makes no %q\n%s", i, gvk, doc)
		}
		dec := json.NewDecoder(bytes.NewReader(j))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			return nil, fmt.Errorf("document %d (%s %s): %w\n%s", i, tm.APIVersion, tm.Kind, err, doc)
		}
	}
	return m, nil
}

// add appends a new object to list and returns it, to be decoded into.
func add[T any](list *[]*T) *T {
	v := new(T)
	*list = append(*list, v)
	return v
}

// isBlankYAML: a document of comments only (helm's "# Source:" lines of
// a template that rendered nothing).
func isBlankYAML(doc string) bool {
	for line := range strings.SplitSeq(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// render renders the chart with values and decodes what it made.
func render(t *testing.T, values map[string]any) *manifests {
	t.Helper()
	out, err := template(t, values)
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeManifests(out)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDecodeManifestsIsStrict: the decoding the chart tests rely on
// refuses a misspelt field, a duplicated key and an unknown kind.
func TestDecodeManifestsIsStrict(t *testing.T) {
	good := "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  ports:\n    - port: 80\n"
	if m, err := decodeManifests([]byte("---\n# Source: x\n---\n" + good)); err != nil || len(m.services) != 1 {
		t.Fatalf("a valid Service: %v, %+v", err, m)
	}
	for name, doc := range map[string]string{
		"misspelt field":  strings.Replace(good, "ports:", "prots:", 1),
		"misplaced field": good + "  containerPort: 80\n",
		"duplicated key":  good + "  type: ClusterIP\n  type: NodePort\n",
		"unknown kind":    strings.Replace(good, "kind: Service", "kind: Ingress", 1),
	} {
		if _, err := decodeManifests([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without an error:\n%s", name, doc)
		}
	}
}
