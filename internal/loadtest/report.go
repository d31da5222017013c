package loadtest

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteTable writes runs as a table, a row per run.
func WriteTable(w io.Writer, runs []*Result) error {
	verified := false
	for _, r := range runs {
		verified = verified || r.Verified > 0
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "streams\tcomplete\tTTFA p50\tTTFA p99\tengine p50\tengine p99\tstarved\tstarved time\t× real time\tactive peak\tqueue peak\tdevice memory\terrors"
	if verified {
		head += "\talone"
	}
	fmt.Fprintln(tw, head)
	for _, r := range runs {
		row := []string{fmt.Sprint(r.Streams), fmt.Sprint(r.Complete), msCell(r.TTFA.N, r.TTFA.P50), msCell(r.TTFA.N, r.TTFA.P99),
			msCell(r.EngineTTFA.N, r.EngineTTFA.P50), msCell(r.EngineTTFA.N, r.EngineTTFA.P99),
			fmt.Sprint(r.Starved), secondsCell(r.StarvedSeconds), fmt.Sprintf("%.2f", r.RTF),
			peakCell(r.Server, r.Server.ActivePeak), peakCell(r.Server, r.Server.QueuePeak), memoryCell(r.Server), errorsCell(r.Errors)}
		if verified {
			row = append(row, verifyCell(r))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// WriteSearch writes a search's runs and its answer.
func WriteSearch(w io.Writer, s *Search) error {
	if err := WriteTable(w, s.Runs); err != nil {
		return err
	}
	var err error
	switch {
	case s.Largest == s.Max:
		_, err = fmt.Fprintf(w, "\n%d concurrent streams play without starving: the search's limit (the server may take more)\n", s.Max)
	default:
		why := "not tried"
		for _, r := range s.Runs {
			if r.Streams == s.Largest+1 && !r.Good() {
				why = Why(r)
			}
		}
		_, err = fmt.Fprintf(w, "\nthe most concurrent streams that play without starving: %d (at %d: %s)\n", s.Largest, s.Largest+1, why)
	}
	return err
}

// Why says what made a run not good.
func Why(r *Result) string {
	var parts []string
	if r.Starved > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d streams starved", r.Starved, r.Streams))
	}
	if len(r.Errors) > 0 {
		parts = append(parts, errorsCell(r.Errors))
	}
	if r.Mismatches > 0 {
		parts = append(parts, fmt.Sprintf("%d differ from themselves alone", r.Mismatches))
	}
	if len(parts) == 0 {
		return "good"
	}
	return strings.Join(parts, "; ")
}

func msCell(n int, v float64) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f ms", v)
}

// secondsCell is a time in ms below a second, else in s.
func secondsCell(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.1f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}

// peakCell is a peak from /metrics, "—" when it was never read.
func peakCell(m ServerMetrics, peak int) string {
	if m.Samples == 0 {
		return "—"
	}
	return fmt.Sprint(peak)
}

func memoryCell(m ServerMetrics) string {
	if m.DeviceMemoryPeakBytes == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f GB", float64(m.DeviceMemoryPeakBytes)/1e9)
}

// errorsCell lists errors by label, the most frequent first.
func errorsCell(errs map[string]int) string {
	if len(errs) == 0 {
		return "—"
	}
	labels := make([]string, 0, len(errs))
	for l := range errs {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool {
		if errs[labels[i]] != errs[labels[j]] {
			return errs[labels[i]] > errs[labels[j]]
		}
		return labels[i] < labels[j]
	})
	for i, l := range labels {
		labels[i] = fmt.Sprintf("%s ×%d", l, errs[l])
	}
	return strings.Join(labels, ", ")
}

func verifyCell(r *Result) string {
	if r.Verified == 0 {
		return "—"
	}
	if r.Mismatches == 0 {
		return fmt.Sprintf("%d of %d equal", r.Verified, r.Verified)
	}
	return fmt.Sprintf("%d of %d differ", r.Mismatches, r.Verified)
}
