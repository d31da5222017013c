package bench

import (
	"sort"
	"time"
)

// Stat summarises repeated measurements in milliseconds.
type Stat struct {
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	Min float64 `json:"min_ms"`
	N   int     `json:"n"`
}

func stat(ds []time.Duration) Stat {
	if len(ds) == 0 {
		return Stat{}
	}
	ms := make([]float64, len(ds))
	for i, d := range ds {
		ms[i] = float64(d) / 1e6
	}
	sort.Float64s(ms)
	rank := func(p float64) float64 {
		i := int(p*float64(len(ms))+0.999999) - 1
		return ms[max(0, min(i, len(ms)-1))]
	}
	return Stat{P50: rank(0.5), P90: rank(0.9), Min: ms[0], N: len(ms)}
}

// ratioStat is for dimensionless figures (real-time factors).
type Ratio struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	N   int     `json:"n"`
}

func ratio(vs []float64) Ratio {
	if len(vs) == 0 {
		return Ratio{}
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	// For speeds, p90 is the slow tail: the 10th percentile of the values.
	lo := s[max(0, int(0.1*float64(len(s))+0.999999)-1)]
	return Ratio{P50: s[(len(s)-1)/2], P90: lo, N: len(s)}
}
