#!/bin/bash
# ab-summary.sh AB_LOG: the same-run A/B table of a device run (run.sh with
# AB set, gpu/devrun.sh). The log holds rounds of `zonos bench` output,
# each after a line "== arm LABEL commit C". For every measurement
# it prints each arm's p50 per round in log order, the median of those,
# and the second arm's median ÷ the first's (above 1: the second arm takes
# longer, or for the real-time factors, runs faster). awk only: the device
# machine has no Go.
set -euo pipefail
awk '
function num(s) { gsub(/[^0-9.]/, "", s); return s + 0 }
function median(list,   a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function add(metric, v) {
	if (!(metric in seen)) { seen[metric] = 1; order[++nm] = metric }
	vals[arm, metric] = vals[arm, metric] (vals[arm, metric] == "" ? "" : " ") v
}
/^== arm / {
	arm = $3
	if (!(arm in armseen)) { armseen[arm] = 1; arms[++na] = arm; desc[arm] = $0; sub(/^== arm /, "", desc[arm]) }
	next
}
arm == "" { next }
/^\| decode step \(CFG/          { split($0, f, "|"); add("decode step (ms)", num(f[3])) }
/^\| the same decode step op by/ { split($0, f, "|"); add("step op by op (ms)", num(f[3])) }
/^\| the decode step in generation/ { split($0, f, "|"); add("step as generation runs it (ms)", num(f[3])) }
/^\| (1|4|16) \| [0-9.]+ ms \|/  { split($0, f, "|"); add("batch " num(f[2]) " step (ms)", num(f[3])) }
/^\| prefill \(/                 { split($0, f, "|"); add("prefill (ms)", num(f[3])) }
/^\| TTFA \(/                    { split($0, f, "|"); add("TTFA (ms)", num(f[3])) }
/^\| steady per-frame/           { split($0, f, "|"); add("steady frame (ms)", num(f[3])) }
/^\| generation real-time/       { split($0, f, "|"); add("generation RTF (x)", num(f[3])) }
/^\| vocoder real-time/          { split($0, f, "|"); add("vocoder RTF (x)", num(f[3])) }
/^First utterance of the freshly built engine/ {
	s = $0; sub(/.*: TTFA /, "", s); sub(/ ms.*/, "", s); add("first utterance TTFA, cold (ms)", s + 0)
}
/^The step graph alone/ {
	s = $0; sub(/ ms per step.*/, "", s); sub(/.*: /, "", s); add("step graph alone (ms)", s + 0)
}
END {
	if (na == 0) { print "ab-summary: no \"== arm\" rounds in the log"; exit 1 }
	for (i = 1; i <= na; i++) printf "arm %d: %s\n", i, desc[arms[i]]
	printf "\n| measurement (p50 per round) |"
	for (i = 1; i <= na; i++) printf " %s | median |", arms[i]
	if (na == 2) printf " %s ÷ %s |", arms[2], arms[1]
	printf "\n| --- |"
	for (i = 1; i <= na; i++) printf " --- | --- |"
	if (na == 2) printf " --- |"
	printf "\n"
	for (k = 1; k <= nm; k++) {
		m = order[k]
		printf "| %s |", m
		for (i = 1; i <= na; i++) {
			v = vals[arms[i], m]
			md[i] = v == "" ? "" : median(v)
			printf " %s | %s |", (v == "" ? "—" : v), (v == "" ? "—" : sprintf("%.3f", md[i]))
		}
		if (na == 2) printf " %s |", (md[1] == "" || md[2] == "" || md[1] == 0 ? "—" : sprintf("%.3f", md[2] / md[1]))
		printf "\n"
	}
}' "$1"
