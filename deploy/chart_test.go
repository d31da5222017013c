package deploy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Keys of the test releases (16 characters at least, as zonos serve wants).
var testKeys = []any{"k1-0123456789abcdef", "k2-0123456789abcdef"}

// serverPort is where the image's zonos serve listens (deploy/Dockerfile).
const serverPort = 8790

// The release's objects' name: release-chart.
const fullname = release + "-zonos-stream"

// defaultTargetActiveStreams is the chart's default HPA target: about
// 70 % of the 8 engine slots zonos serve measures on an H200.
const defaultTargetActiveStreams = "6"

// TestChartDefaults: the chart's own values with keys given make a
// Deployment of GPU pods, its Service, the keys' Secret, a PDB and an HPA
// on active streams, each as the API types have it.
func TestChartDefaults(t *testing.T) {
	m := render(t, map[string]any{"apiKeys": testKeys})
	counts(t, m, 1, 1, 1, 1, 1, 0)
	d := m.deployments[0]
	pod := checkPod(t, d)
	if d.Spec.Replicas != nil {
		t.Errorf("with the HPA on the Deployment names %d replicas: the HPA owns the count", *d.Spec.Replicas)
	}
	checkKeyFile(t, pod, fullname+"-api-keys", "api-keys")
	if s := m.secrets[0]; s.Name != fullname+"-api-keys" || string(s.Data["api-keys"]) != "k1-0123456789abcdef\nk2-0123456789abcdef" {
		t.Errorf("Secret %s holds %q under api-keys, want the keys one a line", s.Name, s.Data["api-keys"])
	}
	if a := d.Spec.Template.Annotations["checksum/api-keys"]; a == "" {
		t.Error("no checksum/api-keys annotation: changing the keys would not restart the pods")
	}
	for k, v := range map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8790", "prometheus.io/path": "/metrics"} {
		if got := d.Spec.Template.Annotations[k]; got != v {
			t.Errorf("pod annotation %s = %q, want %q", k, got, v)
		}
	}
	checkPulledModels(t, pod, "hybrid")
	if a := streamsArgs(container(t, pod.Containers, "zonos").Args); len(a) != 0 {
		t.Errorf("args %q by default: the server should measure its slots at start, not be told them", a)
	}
	if v := volume(t, pod, "models"); v.EmptyDir == nil {
		t.Errorf("models volume %+v, want an emptyDir", v.VolumeSource)
	}
	checkService(t, m.services[0], d)
	checkPDB(t, m, d)
	checkHPA(t, m.hpas[0], d, defaultTargetActiveStreams, 1, 8)
	if n := len(m.hpas[0].Spec.Metrics); n != 1 {
		t.Errorf("HPA with %d metrics by default, want active streams alone", n)
	}
}

// TestChartQueueTarget: a queue-length target adds the second metric, and
// the replica bounds and the active-streams target follow the values.
func TestChartQueueTarget(t *testing.T) {
	m := render(t, map[string]any{"apiKeys": testKeys, "autoscaling": map[string]any{
		"minReplicas": 2, "maxReplicas": 16, "targetActiveStreams": "500m", "targetQueueLength": "1"}})
	h := m.hpas[0]
	checkHPA(t, h, m.deployments[0], "500m", 2, 16)
	if len(h.Spec.Metrics) != 2 {
		t.Fatalf("HPA metrics %+v, want active streams and queue length", h.Spec.Metrics)
	}
	checkPodsMetric(t, h.Spec.Metrics[1], queueLengthMetric, "1")
}

// TestChartStreams: server.streams set passes the engine's slots to the
// server once; 1 is one stream at a time.
func TestChartStreams(t *testing.T) {
	for _, n := range []int{1, 17} {
		m := render(t, map[string]any{"apiKeys": testKeys, "server": map[string]any{"streams": n}})
		args := container(t, checkPod(t, m.deployments[0]).Containers, "zonos").Args
		if a, want := streamsArgs(args), "--streams="+strconv.Itoa(n); !slices.Equal(a, []string{want}) {
			t.Errorf("server.streams %d: args %q, want %s once", n, args, want)
		}
	}
}

// streamsArgs are the --streams flags among a container's args.
func streamsArgs(args []string) []string {
	var found []string
	for _, a := range args {
		if a == "--streams" || strings.HasPrefix(a, "--streams=") {
			found = append(found, a)
		}
	}
	return found
}

// TestChartExistingSecret: with a Secret of the user's the chart makes
// none and the key comes from the named one.
func TestChartExistingSecret(t *testing.T) {
	m := render(t, map[string]any{"existingSecret": "tts-keys", "existingSecretKey": "keys"})
	counts(t, m, 1, 1, 0, 1, 1, 0)
	pod := checkPod(t, m.deployments[0])
	checkKeyFile(t, pod, "tts-keys", "keys")
	if _, ok := m.deployments[0].Spec.Template.Annotations["checksum/api-keys"]; ok {
		t.Error("a checksum of keys the chart does not hold")
	}
}

// TestChartModelsFromClaim: weights from a claim filled beforehand: the
// claim is the cache, read-only, and nothing is pulled.
func TestChartModelsFromClaim(t *testing.T) {
	m := render(t, map[string]any{"apiKeys": testKeys, "server": map[string]any{"model": "transformer"},
		"models": map[string]any{"persistentVolumeClaim": "zonos-hf-cache", "pull": map[string]any{"enabled": false}}})
	pod := checkPod(t, m.deployments[0])
	if len(pod.InitContainers) != 0 {
		t.Errorf("init containers %v with the weights in a claim and pull off", pod.InitContainers)
	}
	if v := volume(t, pod, "models"); v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "zonos-hf-cache" {
		t.Errorf("models volume %+v, want the claim zonos-hf-cache", v.VolumeSource)
	}
	if c := container(t, pod.Containers, "zonos"); !slices.Contains(c.Args, "--model=transformer") {
		t.Errorf("args %q do not pick the transformer", c.Args)
	}
}

// TestChartPullIntoClaim: a claim with pull on is filled by the init
// container (writable there) and read by the server (read-only).
func TestChartPullIntoClaim(t *testing.T) {
	m := render(t, map[string]any{"apiKeys": testKeys, "models": map[string]any{"persistentVolumeClaim": "zonos-hf-cache"}})
	pod := checkPod(t, m.deployments[0])
	checkPulledModels(t, pod, "hybrid")
	if v := volume(t, pod, "models"); v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "zonos-hf-cache" {
		t.Errorf("models volume %+v, want the claim zonos-hf-cache", v.VolumeSource)
	}
}

// TestChartWithoutAutoscaling: with the HPA off the Deployment holds the
// replica count; with the PDB off there is none; the scrape annotations
// can give way to a ServiceMonitor.
func TestChartWithoutAutoscaling(t *testing.T) {
	m := render(t, map[string]any{"apiKeys": testKeys, "replicaCount": 3,
		"autoscaling":         map[string]any{"enabled": false},
		"podDisruptionBudget": map[string]any{"enabled": false},
		"metrics":             map[string]any{"podAnnotations": false, "serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}}})
	counts(t, m, 1, 1, 1, 0, 0, 1)
	d := m.deployments[0]
	checkPod(t, d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", d.Spec.Replicas)
	}
	for k := range d.Spec.Template.Annotations {
		if strings.HasPrefix(k, "prometheus.io/") {
			t.Errorf("pod annotation %s with metrics.podAnnotations off", k)
		}
	}
	sm, svc := m.serviceMonitor[0], m.services[0]
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(svc.Labels)) {
		t.Errorf("ServiceMonitor selector %v does not select the Service's labels %v (%v)", sm.Spec.Selector, svc.Labels, err)
	}
	if sm.Labels["release"] != "prom" {
		t.Errorf("ServiceMonitor labels %v lack the configured release: prom", sm.Labels)
	}
	if !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{namespace}) {
		t.Errorf("ServiceMonitor namespaces %v, want [%s]", sm.Spec.NamespaceSelector.MatchNames, namespace)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "http" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want port http path /metrics", sm.Spec.Endpoints)
	}
}

// TestChartRefuses: values that would give a server that cannot start,
// streams killed mid-word, or a value silently ignored, fail at install
// with what to change.
func TestChartRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"no keys", map[string]any{}, "API keys are required"},
		{"short key", map[string]any{"apiKeys": []any{"short"}}, "too easy to guess"},
		{"space in a key", map[string]any{"apiKeys": []any{"a-0123456789abcdef b"}}, "may not hold a space"},
		{"grace too short", map[string]any{"apiKeys": testKeys, "terminationGracePeriodSeconds": 35}, "must exceed"},
		{"gpu in resources", map[string]any{"apiKeys": testKeys, "resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": 2}}}, "the chart sets it to 1"},
		{"no weights", map[string]any{"apiKeys": testKeys, "models": map[string]any{"pull": map[string]any{"enabled": false}}}, "no model weights"},
		{"min over max", map[string]any{"apiKeys": testKeys, "autoscaling": map[string]any{"minReplicas": 9}}, "minReplicas is over"},
		// values.schema.json: a misspelt value is an error, not a default.
		{"misspelt value", map[string]any{"apiKeys": testKeys, "server": map[string]any{"maxQueu": 2}}, "additional properties 'maxQueu' not allowed"},
		{"unknown model", map[string]any{"apiKeys": testKeys, "server": map[string]any{"model": "hybird"}}, "/server/model"},
		{"negative streams", map[string]any{"apiKeys": testKeys, "server": map[string]any{"streams": -1}}, "/server/streams"},
		{"streams over the engine's most", map[string]any{"apiKeys": testKeys, "server": map[string]any{"streams": 258}}, "/server/streams"},
		{"fractional streams", map[string]any{"apiKeys": testKeys, "server": map[string]any{"streams": 1.5}}, "/server/streams"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := template(t, c.values)
			if err == nil {
				t.Fatalf("rendered:\n%s", out)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// TestChartLint: helm lint --strict passes on the chart with keys given.
func TestChartLint(t *testing.T) {
	out, err := helm(t, "lint", "--strict", chartDir, "-f", valuesFile(t, map[string]any{"apiKeys": testKeys}))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func counts(t *testing.T, m *manifests, deployments, services, secrets, pdbs, hpas, serviceMonitors int) {
	t.Helper()
	got := []int{len(m.deployments), len(m.services), len(m.secrets), len(m.pdbs), len(m.hpas), len(m.serviceMonitor)}
	want := []int{deployments, services, secrets, pdbs, hpas, serviceMonitors}
	if !slices.Equal(got, want) {
		t.Fatalf("rendered Deployments, Services, Secrets, PDBs, HPAs, ServiceMonitors %v, want %v", got, want)
	}
}

// checkPod checks what every rendering's pod must be: one GPU, the
// server's port and probes, a grace period the server's shutdown fits in,
// a non-root user, and a selector that selects it.
func checkPod(t *testing.T, d *appsv1.Deployment) *corev1.PodSpec {
	t.Helper()
	if d.Name != fullname {
		t.Errorf("Deployment %s, want %s", d.Name, fullname)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("Deployment selector %v does not select its pods' labels %v (%v)", d.Spec.Selector, d.Spec.Template.Labels, err)
	}
	pod := &d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want the server alone", len(pod.Containers))
	}
	c := container(t, pod.Containers, "zonos")
	if q, ok := c.Resources.Limits["nvidia.com/gpu"]; !ok || q.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("limits nvidia.com/gpu = %v (set %v), want 1: one engine per GPU", q.String(), ok)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != serverPort || c.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports %+v, want http 8790/TCP", c.Ports)
	}
	checkProbe(t, c, "readiness", c.ReadinessProbe, "/readyz")
	checkProbe(t, c, "liveness", c.LivenessProbe, "/healthz")
	checkProbe(t, c, "startup", c.StartupProbe, "/healthz")
	// The model loads before the port opens: the startup probe must give
	// it minutes, and hold the liveness probe back meanwhile.
	if s := c.StartupProbe; s.PeriodSeconds*s.FailureThreshold < 300 {
		t.Errorf("the startup probe gives the model load %d s, want 5 minutes or more", s.PeriodSeconds*s.FailureThreshold)
	}
	if r := c.ReadinessProbe; r.FailureThreshold != 1 {
		t.Errorf("readiness failureThreshold %d: a pod with no capacity left should leave the Service at its first 503", r.FailureThreshold)
	}
	grace := argSeconds(t, c.Args, "--shutdown-grace=")
	var preStop int64
	if h := c.Lifecycle; h != nil && h.PreStop != nil && h.PreStop.Sleep != nil {
		preStop = h.PreStop.Sleep.Seconds
	}
	if tg := pod.TerminationGracePeriodSeconds; tg == nil || *tg <= preStop+grace+5 {
		t.Errorf("terminationGracePeriodSeconds %v, want more than preStop %d + shutdown grace %d + 5 s", tg, preStop, grace)
	}
	if !slices.Contains(c.Args, "--backend=cuda") {
		t.Errorf("args %q: a pod given a GPU must use it (--backend=cuda), not fall back to the CPU", c.Args)
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("the pod does not require a non-root user")
	}
	env := envMap(c.Env)
	if env["HF_HOME"] == nil || mount(t, c, "models").MountPath != env["HF_HOME"].Value {
		t.Errorf("HF_HOME %v is not where the models volume is mounted", env["HF_HOME"])
	}
	if !mount(t, c, "models").ReadOnly {
		t.Error("the server mounts the model cache writable; it only reads it")
	}
	if env["XDG_DATA_HOME"] == nil || mount(t, c, "voices").MountPath != env["XDG_DATA_HOME"].Value {
		t.Errorf("XDG_DATA_HOME %v is not where the voices volume is mounted", env["XDG_DATA_HOME"])
	}
	return pod
}

// checkProbe: an HTTP GET of path on the server's port, by its name.
func checkProbe(t *testing.T, c *corev1.Container, name string, p *corev1.Probe, path string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("no %s probe over HTTP: %+v", name, p)
		return
	}
	if p.HTTPGet.Path != path || portOf(c, p.HTTPGet.Port) != serverPort {
		t.Errorf("%s probe GET %s on port %s, want %s on %d", name, p.HTTPGet.Path, p.HTTPGet.Port.String(), path, serverPort)
	}
}

// portOf resolves a port given by number or by the container's port name.
func portOf(c *corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return -1
}

// checkKeyFile: the server reads its keys from a file mounted read-only
// from the Secret (--api-key-file), never from an inline value or the
// environment.
func checkKeyFile(t *testing.T, pod *corev1.PodSpec, secret, key string) {
	t.Helper()
	c := container(t, pod.Containers, "zonos")
	const file = "/etc/zonos-stream/api-keys"
	if !slices.Contains(c.Args, "--api-key-file="+file) {
		t.Errorf("args %q: want --api-key-file=%s", c.Args, file)
	}
	for _, e := range c.Env {
		if strings.Contains(e.Name, "API_KEY") {
			t.Errorf("env %s: the keys go in a file, not the environment", e.Name)
		}
	}
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/etc/zonos-stream" {
			mounted = m.ReadOnly && m.Name == "api-keys"
		}
	}
	if !mounted {
		t.Errorf("mounts %+v: want the api-keys volume read-only at /etc/zonos-stream", c.VolumeMounts)
	}
	for _, v := range pod.Volumes {
		if v.Name != "api-keys" {
			continue
		}
		if v.Secret == nil || v.Secret.SecretName != secret || len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != key || v.Secret.Items[0].Path != "api-keys" {
			t.Errorf("volume api-keys %+v: want Secret %s key %s as the file api-keys", v.VolumeSource, secret, key)
		}
		return
	}
	t.Errorf("no api-keys volume")
}

// checkPulledModels: an init container pulls model into the volume the
// server reads, at the same cache path.
func checkPulledModels(t *testing.T, pod *corev1.PodSpec, model string) {
	t.Helper()
	p := container(t, pod.InitContainers, "pull")
	if want := []string{"zonos", "pull", "--plain", model}; !slices.Equal(p.Command, want) {
		t.Errorf("init container command %q, want %q", p.Command, want)
	}
	server := container(t, pod.Containers, "zonos")
	if m := mount(t, p, "models"); m.ReadOnly || m.MountPath != mount(t, server, "models").MountPath {
		t.Errorf("the pull writes to %+v, not where the server reads the cache", m)
	}
	if e := envMap(p.Env)["HF_HOME"]; e == nil || e.Value != envMap(server.Env)["HF_HOME"].Value {
		t.Errorf("the pull's HF_HOME %v differs from the server's", e)
	}
	if !slices.Contains(server.Args, "--model="+model) {
		t.Errorf("the server's args %q do not load the pulled %s", server.Args, model)
	}
}

// checkService: ClusterIP on the server's port, sending to the pods' http port.
func checkService(t *testing.T, s *corev1.Service, d *appsv1.Deployment) {
	t.Helper()
	if s.Name != fullname || s.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("Service %s of type %s, want %s ClusterIP", s.Name, s.Spec.Type, fullname)
	}
	if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) || len(s.Spec.Selector) == 0 {
		t.Errorf("Service selector %v does not select the pods %v", s.Spec.Selector, d.Spec.Template.Labels)
	}
	c := container(t, d.Spec.Template.Spec.Containers, "zonos")
	if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != serverPort || portOf(c, s.Spec.Ports[0].TargetPort) != serverPort {
		t.Errorf("Service ports %+v, want 8790 to the container's 8790", s.Spec.Ports)
	}
}

// checkPDB: the budget covers exactly the release's pods.
func checkPDB(t *testing.T, m *manifests, d *appsv1.Deployment) {
	t.Helper()
	p := m.pdbs[0]
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("PDB selector %v does not select the pods %v (%v)", p.Spec.Selector, d.Spec.Template.Labels, err)
	}
	if p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.IntValue() != 1 || p.Spec.MinAvailable != nil {
		t.Errorf("PDB maxUnavailable %v minAvailable %v, want maxUnavailable 1", p.Spec.MaxUnavailable, p.Spec.MinAvailable)
	}
}

// checkHPA: the Deployment scaled on the pods' average active streams.
func checkHPA(t *testing.T, h *autoscalingv2.HorizontalPodAutoscaler, d *appsv1.Deployment, target string, lo, hi int32) {
	t.Helper()
	if r := h.Spec.ScaleTargetRef; r.APIVersion != "apps/v1" || r.Kind != "Deployment" || r.Name != d.Name {
		t.Errorf("HPA scales %+v, want the Deployment %s", r, d.Name)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas != lo || h.Spec.MaxReplicas != hi {
		t.Errorf("HPA replicas %v..%d, want %d..%d", h.Spec.MinReplicas, h.Spec.MaxReplicas, lo, hi)
	}
	if len(h.Spec.Metrics) == 0 {
		t.Fatal("HPA without metrics")
	}
	checkPodsMetric(t, h.Spec.Metrics[0], activeStreamsMetric, target)
}

// checkPodsMetric: a Pods metric averaged over the pods, at target.
func checkPodsMetric(t *testing.T, ms autoscalingv2.MetricSpec, name, target string) {
	t.Helper()
	if ms.Type != autoscalingv2.PodsMetricSourceType || ms.Pods == nil || ms.Pods.Metric.Name != name {
		t.Fatalf("HPA metric %+v, want the Pods metric %s", ms, name)
	}
	if tg := ms.Pods.Target; tg.Type != autoscalingv2.AverageValueMetricType || tg.AverageValue == nil || tg.AverageValue.Cmp(resource.MustParse(target)) != 0 {
		t.Errorf("HPA target of %s %+v, want an average value of %s", name, tg, target)
	}
}

func container(t *testing.T, cs []corev1.Container, name string) *corev1.Container {
	t.Helper()
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	t.Fatalf("no container %s among %d", name, len(cs))
	return nil
}

func volume(t *testing.T, pod *corev1.PodSpec, name string) *corev1.Volume {
	t.Helper()
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	t.Fatalf("no volume %s", name)
	return nil
}

func mount(t *testing.T, c *corev1.Container, name string) corev1.VolumeMount {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("container %s does not mount %s", c.Name, name)
	return corev1.VolumeMount{}
}

func envMap(env []corev1.EnvVar) map[string]*corev1.EnvVar {
	m := map[string]*corev1.EnvVar{}
	for i := range env {
		m[env[i].Name] = &env[i]
	}
	return m
}

// argSeconds reads a flag's whole-second duration ("--shutdown-grace=30s").
func argSeconds(t *testing.T, args []string, prefix string) int64 {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, prefix); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(v, "s"), 10, 64)
			if err != nil || !strings.HasSuffix(v, "s") {
				t.Fatalf("%s: want whole seconds (%v)", a, err)
			}
			return n
		}
	}
	t.Fatalf("args %q lack %s", args, prefix)
	return 0
}
