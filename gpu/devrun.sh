#!/bin/bash
# Prepares .devbin/ (git-ignored) for a run on the GPU test machine, which
# has no Go toolchain (../shared/docs/GPU.md): builds the cuda test binary
# and the zonos CLI here, from the committed HEAD (git archive, so edits in
# progress in a shared working tree stay out), bundles them with the shared
# libraries they need (libespeak-ng and its data, audio libraries; not
# libcuda, which the driver provides), packs every golden pack into
# golden.tar.xz (the device tool carries 64 MiB with the tree; the packs
# alone are 40 MB unpacked), and writes .devbin/run.sh. Then, through the
# device tool:
#   run  command: bash .devbin/run.sh
#        carry:   [".devbin"]
# Logs come back in $OUT: env.txt, gpu-test.log (gpu.test runs its
# exactness tests under both GPU plans), conformance-cuda.log and
# conformance-cuda-generic.log (every golden pack on the device's plan,
# then on the generic plan), bench.log and bench/<date>-<gpu>.md
# (memcheck.log when SAN is set, ab.log and ab-summary.txt when AB is set,
# soak.log and soak/ when SOAK=<duration> runs the long-form soak).
#
# Same-run A/B between the binaries of two or more commits (machines
# differ by up to 10 ms of TTFA between calls, so a change is measured
# against its baseline in one call):
#   BASE=<rev> gpu/devrun.sh   also builds zonos at <rev> (.devbin/base.tar.xz);
#   AB=<rounds> on the device  then benches HEAD and BASE alternately
#                              (new, base, base, new, …) before the other steps;
#   BASES='<rev> <rev> …'      builds zonos at each rev (base-<rev>.tar.xz,
#                              3–4 MB each): AB benches HEAD and every rev,
#                              the order rotated each round;
#   ABARGS                     the bench flags of each A/B round (default
#                              --runs 3 --steps 60 --batch 0).
# SHOT=1 also builds app.test and has the device write the README's
# screenshot (main.png: the window after one utterance on the full-size
# random-weight hybrid, drawn by Fyne's software renderer).
# WORKTREE=1 builds the working tree as it is instead of HEAD.
#
# One call carries at most 64 MiB: the tree (about 23 MB), the bundle
# (12 MB) and every golden pack (30 MB) no longer fit together. Two calls:
#   GOLDEN_PACKS='dac-tiny zonos-hybrid-tiny' gpu/devrun.sh
#                              packs only those (the ones gpu.test reads):
#                              run NOCONF=1 NOBENCH=1 bash .devbin/run.sh;
#   NOTESTBIN=1 gpu/devrun.sh  leaves gpu.test out of the bundle: run
#                              NOTEST=1 bash .devbin/run.sh (conformance
#                              over every pack, and the bench).
set -euo pipefail
cd "$(dirname "$0")/.."
GOLDEN=${GOLDEN:-$(cd ../shared/golden && pwd)}
ROOT=$(pwd)
SRC=$ROOT
COMMIT=$(git rev-parse --short HEAD)
if [ -z "${WORKTREE:-}" ]; then
	SRC=$(mktemp -d /tmp/zonos-devrun.XXXXXX)
	git archive HEAD | tar -x -C "$SRC"
else
	COMMIT="$COMMIT+worktree"
fi
rm -rf .devbin && mkdir -p .devbin/lib .devbin/golden
build_base() { # build_base REV TARBALL: the zonos CLI at REV (same libraries)
	local B
	B=$(mktemp -d /tmp/zonos-base.XXXXXX)
	git archive "$1" | tar -x -C "$B"
	mkdir -p "$B/out"
	(cd "$B" && CGO_ENABLED=1 go build -tags cuda -ldflags='-s -w' -o out/zonos ./cmd/zonos)
	git rev-parse --short "$1" >"$B/out/commit"
	tar cJf "$2" -C "$B/out" zonos commit
	rm -rf "$B"
}
[ -n "${BASE:-}" ] && build_base "$BASE" .devbin/base.tar.xz
for r in ${BASES:-}; do
	build_base "$r" ".devbin/base-$(git rev-parse --short "$r").tar.xz"
done
(cd "$SRC" && CGO_ENABLED=1 go test -c -tags cuda -ldflags='-s -w' -o "$ROOT/.devbin/gpu.test" ./gpu/ &&
	CGO_ENABLED=1 go build -tags cuda -ldflags='-s -w' -o "$ROOT/.devbin/zonos" ./cmd/zonos &&
	if [ -n "${SHOT:-}" ]; then CGO_ENABLED=1 go test -c -tags cuda -ldflags='-s -w' -o "$ROOT/.devbin/app.test" ./app/; fi)
[ "$SRC" = "$ROOT" ] || rm -rf "$SRC"
for l in $(ldd .devbin/zonos .devbin/gpu.test ${SHOT:+.devbin/app.test} | awk '/=>/{print $3}' | sort -u); do
	case $(basename "$l") in
	libcuda* | libc.so* | libm.so* | libdl.so* | libpthread* | librt.so*) ;;
	*) cp -L "$l" .devbin/lib/ ;;
	esac
done
cp -r /usr/lib/x86_64-linux-gnu/espeak-ng-data .devbin/
# Only the dictionaries of the languages the golden text pack and the bench
# speak (the rest is 6.6 MB that pushed the carried tree over its 64 MiB).
keep=$(grep -o '"language": *"[a-z]*' "$GOLDEN/text/cases.jsonl" 2>/dev/null | sed 's/.*"//' | sort -u)
for d in .devbin/espeak-ng-data/*_dict; do
	l=$(basename "$d" _dict)
	case " en $(echo $keep) " in *" $l "*) ;; *) rm "$d" ;; esac
done
packs=${GOLDEN_PACKS:-$(cd "$GOLDEN" && ls -d */ | tr -d /)}
for p in $packs; do
	cp -r "$GOLDEN/$p" .devbin/golden/ && chmod -R u+w ".devbin/golden/$p"
done
cp "$GOLDEN/README.md" .devbin/golden/ 2>/dev/null || true
tar cJf .devbin/golden.tar.xz -C .devbin golden && rm -rf .devbin/golden
echo "$COMMIT" >.devbin/commit
testbin=gpu.test
[ -n "${NOTESTBIN:-}" ] && testbin=
[ -n "${SHOT:-}" ] && testbin="$testbin app.test"
(cd .devbin && tar cJf bundle.tar.xz $testbin zonos lib espeak-ng-data commit && rm -rf gpu.test app.test zonos lib espeak-ng-data)
cat >.devbin/run.sh <<'RUN'
#!/bin/bash
# device run: unpack; the bench A/B when AB is set; GPU tests; conformance
# over every golden pack on the cuda backend, on the device's plan and on
# the generic plan; zonos bench --backend cuda. Each step under its own
# timeout.
cd "$(dirname "$0")"
mkdir -p /tmp/zb && tar xJf bundle.tar.xz -C /tmp/zb
[ -f golden.tar.xz ] && tar xJf golden.tar.xz
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
G=$(pwd)/golden
{ date -u; echo "commit: $(cat /tmp/zb/commit)"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -2; } 2>&1 | tee $OUT/env.txt
set -o pipefail
step() { # step NAME SECONDS LOG CMD…: run CMD in /tmp/zb, log with its command line
	local name=$1 secs=$2 log=$3; shift 3
	(cd /tmp/zb && echo "command: $*" && echo "date: $(date -u)" && timeout $secs "$@") 2>&1 | tee $OUT/$log | grep -v "^=== RUN" | grep -v " ok$" | tail -${TAILN:-40}
	echo "$name rc=$?"
}
if [ -n "${AB:-}" ]; then # same-run A/B of the bench between binaries, alternating arms (see devrun.sh)
	arms=("new:/tmp/zb")
	if [ -f base.tar.xz ]; then mkdir -p /tmp/zbase && tar xJf base.tar.xz -C /tmp/zbase && arms+=("base:/tmp/zbase"); fi
	for t in base-*.tar.xz; do
		[ -f "$t" ] || continue
		c=${t#base-}; c=${c%.tar.xz}
		mkdir -p /tmp/zbase-$c && tar xJf "$t" -C /tmp/zbase-$c && arms+=("$c:/tmp/zbase-$c")
	done
	n=${#arms[@]}
	if [ $n -lt 2 ]; then echo "AB needs BASE=<rev> or BASES='<rev> …' when gpu/devrun.sh builds the bundle"; fi
	for ((i = 0; n > 1 && i < n * AB; i++)); do
		# two arms: new, base, base, new, new, base, …; more: each round
		# rotated by one: over n rounds each arm comes first as often.
		r=$((i / n)) j=$((i % n))
		if [ $n = 2 ]; then [ $((r % 2)) = 1 ] && j=$((1 - j)); else j=$(((j + r) % n)); fi
		IFS=: read -r label dir <<<"${arms[$j]}"
		echo "== arm $label commit $(cat $dir/commit)" | tee -a $OUT/ab.log
		(cd $dir && timeout ${TAB:-90} ./zonos bench --backend cuda ${ABARGS:---runs 3 --steps 60 --batch 0} 2>&1) >>$OUT/ab.log
	done
	[ $n -gt 1 ] && bash ab-summary.sh $OUT/ab.log | tee $OUT/ab-summary.txt
fi
[ -z "${NOTEST:-}" ] && step gpu.test ${TT:-400} gpu-test.log env ZONOS_GOLDEN_DIR=$G ./gpu.test -test.v -test.count=1 -test.timeout ${TT:-400}s ${TARGS}
[ -z "${NOCONF:-}" ] && step conformance ${TC:-150} conformance-cuda.log env ZONOS_GOLDEN_DIR=$G ./zonos conformance --backend cuda --golden $G
[ -z "${NOCONF:-}" ] && step conformance-generic ${TC:-150} conformance-cuda-generic.log env ZONOS_GOLDEN_DIR=$G ./zonos conformance --backend cuda --gpu-plan generic --golden $G
[ -z "${NOBENCH:-}" ] && step bench ${TB:-300} bench.log ./zonos bench --backend cuda --write $OUT/bench
if [ -n "${SOAK:-}" ]; then # SOAK=<duration>: the long-form soak, one reading of that much audio (bench --long-form; heap and device memory over it)
	step soak $((${TSOAK:-590})) soak.log ./zonos bench --backend cuda --runs 1 --steps 10 --batch 0 --long-form $SOAK --write $OUT/soak
fi
if [ -f /tmp/zb/app.test ]; then # SHOT=1 at build time: the README's screenshot of the window after one utterance on the GPU
	step screenshot 180 screenshot.log ./app.test -test.v -test.run TestScreenshotRealShape -screenshot $OUT/main.png
fi
if [ -n "${PROF:-}" ]; then # PROF=1: ncu kernel times of one real-shape decode step (TestProfileDecodeStep, or the test PROFTEST names, with PROFARGS' test flags) → prof.csv
	NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
	(cd /tmp/zb && timeout 300 $NCU --clock-control none --profile-from-start off --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size --csv ./gpu.test -test.run ${PROFTEST:-TestProfileDecodeStep} -profile ${PROFARGS:-} >$OUT/prof${PROFTAG:-}.csv 2>$OUT/prof${PROFTAG:-}.err; echo "profile rc=$?")
fi
if [ -n "${SAN:-}" ]; then # SAN='regexp of tests' runs them under compute-sanitizer memcheck (-short)
	CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
	step memcheck 240 memcheck.log $CS --tool memcheck --print-limit 20 ./gpu.test -test.short -test.count=1 -test.run "$SAN"
fi
RUN
if [ -z "${WORKTREE:-}" ]; then git show HEAD:gpu/ab-summary.sh >.devbin/ab-summary.sh; else cp gpu/ab-summary.sh .devbin/; fi
du -sh .devbin/*.tar.xz
