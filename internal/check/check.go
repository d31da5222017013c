// Package check is the result type and the comparisons of conformance
// checks: every stage's checks against the golden packs
// (internal/conformance) report Results, and
// `zonos conformance` prints them.
package check

import (
	"fmt"
	"io"
	"math"
)

// Status of one check.
type Status string

const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Result is one line of `zonos conformance`.
type Result struct {
	Pack     string // pack directory name, e.g. "zonos-hybrid-tiny"
	Check    string // e.g. "prefill.logits"
	Status   Status
	Measured string // what was measured, e.g. "3.1e-06" or "50/50"
	Tol      string // the bar it was held to, e.g. "1.1e-03" or "all"
	Detail   string // optional: why it failed or was skipped
}

// Line formats a result as `PASS|FAIL|SKIP <pack>/<check> measured=<x> tol=<y>`.
func (r Result) Line() string {
	s := fmt.Sprintf("%s %s/%s measured=%s tol=%s", r.Status, r.Pack, r.Check, r.Measured, r.Tol)
	if r.Detail != "" {
		s += " (" + r.Detail + ")"
	}
	return s
}

// Compare builds a result from a measured deviation and its tolerance.
func Compare(pack, name string, measured, tol float64) Result {
	st := Pass
	if !(measured <= tol) { // NaN fails
		st = Fail
	}
	return Result{Pack: pack, Check: name, Status: st, Measured: fmt.Sprintf("%.3g", measured), Tol: fmt.Sprintf("%.3g", tol)}
}

// Count builds a result from a count of matching items (all must match).
func Count(pack, name string, matching, total int) Result {
	st := Pass
	if matching != total || total == 0 {
		st = Fail
	}
	return Result{Pack: pack, Check: name, Status: st, Measured: fmt.Sprintf("%d/%d", matching, total), Tol: "all"}
}

// Failure reports a check that could not run to completion (a load error).
func Failure(pack, name string, err error) Result {
	return Result{Pack: pack, Check: name, Status: Fail, Measured: "error", Tol: "-", Detail: err.Error()}
}

// Print writes every line and the summary `N passed, M failed`, and reports
// whether everything passed (skips do not fail a run).
func Print(w io.Writer, rs []Result) bool {
	passed, failed, skipped := 0, 0, 0
	for _, r := range rs {
		fmt.Fprintln(w, r.Line())
		switch r.Status {
		case Pass:
			passed++
		case Fail:
			failed++
		default:
			skipped++
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	return failed == 0
}

// MaxAbsDiff is max |a−b| and max |ref| (NaN/Inf mismatches count as +Inf).
func MaxAbsDiff(got, ref []float32) (diff, refMax float64) {
	if len(got) != len(ref) {
		return inf, 0
	}
	for i := range ref {
		r, g := float64(ref[i]), float64(got[i])
		if isInf(r) || isInf(g) {
			if r != g {
				diff = inf
			}
			continue
		}
		d := g - r
		if d < 0 {
			d = -d
		}
		if d != d {
			diff = inf
		}
		if d > diff {
			diff = d
		}
		if r < 0 {
			r = -r
		}
		if r > refMax {
			refMax = r
		}
	}
	return diff, refMax
}

var inf = func() float64 { var z float64; return 1 / z }()

func isInf(v float64) bool { return v > 1e308 || v < -1e308 }

// RelTol is the golden bar for fp32 ports: 1e-4 · max(1, max|ref|).
func RelTol(refMax float64) float64 { return 1e-4 * max(1, refMax) }

// Cosine is the cosine similarity of two vectors, summed in float64.
func Cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}
