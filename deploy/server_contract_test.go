package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The gauges the HPA scales on.
const (
	activeStreamsMetric = "zonos_active_streams"
	queueLengthMetric   = "zonos_queue_length"
)

// TestChartNamesWhatTheServerHas: the probes' paths, the metric, the port
// and the flags the chart passes are the ones zonos serve has, read from
// its sources (building the server here would need its C libraries), so
// renaming one there fails here instead of in a cluster.
func TestChartNamesWhatTheServerHas(t *testing.T) {
	for file, wants := range map[string][]string{
		"server/server.go":     {`"GET /healthz"`, `"GET /readyz"`, `"GET /metrics"`},
		"server/metrics.go":    {`Name: "` + activeStreamsMetric + `"`, `Name: "` + queueLengthMetric + `"`},
		"server/config.go":     {`DefaultListen = "127.0.0.1:8790"`},
		"cmd/zonos/serve.go":   {`"listen"`, `"shutdown-grace"`, `"max-queue"`, `"max-streams-per-key"`, `"log-json"`, `"api-key-file"`},
		"cmd/zonos/model.go":   {`"model"`},
		"cmd/zonos/backend.go": {`"backend"`},
		"cmd/zonos/pull.go":    {`register("pull"`, `"plain"`},
	} {
		b, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wants {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s no longer has %s, which deploy/ relies on", file, w)
			}
		}
	}
}
