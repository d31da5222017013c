#!/bin/bash
# Prepares .devbin/ (git-ignored) for a run on the GPU test machine, which
# has no Go toolchain (../shared/docs/GPU.md): builds the cuda test binary
# and the zonos CLI here, bundles them with the shared libraries they need
# (libespeak-ng, audio libraries; not libcuda, which the driver provides),
# copies the golden packs, and writes .devbin/run.sh. Then, through the
# device tool:
#   run  command: bash .devbin/run.sh
#        carry:   [".devbin/bundle.tar.xz", ".devbin/golden", ".devbin/run.sh"]
# Logs come back in $OUT (env.txt, conformance-cuda.log, gpu-test.log,
# memcheck.log when SAN is set).
set -euo pipefail
cd "$(dirname "$0")/.."
GOLDEN=${GOLDEN:-../shared/golden}
mkdir -p .devbin/lib .devbin/golden
CGO_ENABLED=1 go test -c -tags cuda -ldflags='-s -w' -o .devbin/gpu.test ./gpu/
CGO_ENABLED=1 go build -tags cuda -ldflags='-s -w' -o .devbin/zonos ./cmd/zonos
for l in $(ldd .devbin/zonos .devbin/gpu.test | awk '/=>/{print $3}' | sort -u); do
	case $(basename "$l") in
	libcuda* | libc.so* | libm.so* | libdl.so* | libpthread* | librt.so*) ;;
	*) cp -L "$l" .devbin/lib/ ;;
	esac
done
for p in zonos-hybrid-tiny zonos-transformer-tiny dac-tiny; do
	rm -rf ".devbin/golden/$p" && cp -r "$GOLDEN/$p" .devbin/golden/ && chmod -R u+w ".devbin/golden/$p"
done
(cd .devbin && rm -f bundle.tar.xz && tar cJf bundle.tar.xz gpu.test zonos lib)
cat >.devbin/run.sh <<'RUN'
#!/bin/bash
# device run: unpack, conformance on the cuda backend, GPU tests
cd "$(dirname "$0")"
mkdir -p /tmp/zb && tar xJf bundle.tar.xz -C /tmp/zb
export LD_LIBRARY_PATH=/tmp/zb/lib
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -2; } 2>&1 | tee $OUT/env.txt
set -o pipefail
G=$(pwd)/golden
(cd /tmp/zb && echo "command: ZONOS_GOLDEN_DIR=$G zonos conformance --backend cuda --golden $G --only zonos-,dac-" && ZONOS_GOLDEN_DIR=$G timeout 200 ./zonos conformance --backend cuda --golden $G --only zonos-,dac-) 2>&1 | tee $OUT/conformance-cuda.log | tail -3
echo "conformance rc=$?"
(cd /tmp/zb && echo "command: gpu.test -test.v -test.count=1 -test.timeout ${TT:-450}s ${TARGS}" && timeout $(( ${TT:-450} + 20 )) ./gpu.test -test.v -test.count=1 -test.timeout ${TT:-450}s ${TARGS}) 2>&1 | tee $OUT/gpu-test.log | grep -v "^=== RUN" | grep -v " ok$" | tail -120
echo "gpu.test rc=$?"
if [ -n "${SAN:-}" ]; then # SAN='regexp of tests' runs them under compute-sanitizer memcheck (-short)
	CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
	(cd /tmp/zb && timeout 240 $CS --tool memcheck --print-limit 20 ./gpu.test -test.short -test.count=1 -test.run "$SAN") 2>&1 | tee $OUT/memcheck.log | tail -25
	echo "memcheck rc=$?"
fi
RUN
du -sh .devbin/bundle.tar.xz .devbin/golden
