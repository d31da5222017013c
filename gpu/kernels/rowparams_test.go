package kernels

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"zonostream/engine/compute"
)

// TestRowParamDefines: sampler.cu reads each utterance's params row at
// the word offsets compute.PutRowParams writes.
func TestRowParamDefines(t *testing.T) {
	src, err := os.ReadFile("sampler.cu")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"ROW_SEED": compute.RowSeed, "ROW_COUNTER": compute.RowCounter,
		"ROW_TEMPERATURE": compute.RowTemperature, "ROW_TOPP": compute.RowTopP, "ROW_TOPK": compute.RowTopK,
		"ROW_MINP": compute.RowMinP, "ROW_LINEAR": compute.RowLinear, "ROW_CONF": compute.RowConf,
		"ROW_QUAD": compute.RowQuad, "ROW_PENALTY": compute.RowPenalty, "ROW_WINDOW": compute.RowWindow,
		"ROW_SCALE": compute.RowScale, "ROW_PADFROM": compute.RowPadFrom, "ROW_ACTIVE": compute.RowActive,
		"ROW_WORDS": compute.RowParamWords}
	for _, line := range strings.Split(string(src), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#define" {
			if w, ok := want[f[1]]; ok {
				if n, err := strconv.Atoi(f[2]); err != nil || n != w {
					t.Errorf("sampler.cu %s = %s, compute expects %d", f[1], f[2], w)
				}
				delete(want, f[1])
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("sampler.cu does not define %v", want)
	}
}
