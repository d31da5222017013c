package loadtest

import (
	"math"
	"sort"
)

// Stat summarises the streams' times in milliseconds: the median and the
// 99th percentile by nearest rank (with fewer than 100 streams, the
// slowest), over N streams.
type Stat struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	N   int     `json:"n"`
}

func stat(ms []float64) Stat {
	if len(ms) == 0 {
		return Stat{}
	}
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return Stat{P50: rank(0.5), P99: rank(0.99), N: len(s)}
}
