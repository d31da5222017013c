package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
		"cmd/zonos/serve.go":   {`"listen"`, `"shutdown-grace"`, `"streams"`, `"max-queue"`, `"max-streams-per-key"`, `"log-json"`, `"api-key-file"`},
		"cmd/zonos/model.go":   {`"model"`},
		"cmd/zonos/backend.go": {`"backend"`},
		"cmd/zonos/pull.go":    {`register("pull"`, `"plain"`},
		"engine/engine.go":     {`n > zonos.MaxBatch`},
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

// TestChartStreamsBound: values.schema.json takes for server.streams what
// the engine takes for --streams (1 to zonos.MaxBatch, its batch's slots)
// and 0, measured at start; a value the server
// would refuse fails at install instead of as a pod that cannot start.
func TestChartStreamsBound(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "engine", "zonos", "batch.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const MaxBatch = ([0-9]+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("engine/zonos/batch.go no longer has const MaxBatch = N, which values.schema.json bounds server.streams by")
	}
	maxBatch, err := strconv.Atoi(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Server struct {
				Properties struct {
					Streams struct {
						Type    string `json:"type"`
						Minimum *int   `json:"minimum"`
						Maximum *int   `json:"maximum"`
					} `json:"streams"`
				} `json:"properties"`
			} `json:"server"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	st := schema.Properties.Server.Properties.Streams
	if st.Type != "integer" || st.Minimum == nil || *st.Minimum != 0 || st.Maximum == nil || *st.Maximum != maxBatch {
		t.Errorf("server.streams schema %+v (minimum %v, maximum %v), want an integer from 0 to %d (MaxBatch)", st, st.Minimum, st.Maximum, maxBatch)
	}
}
