#!/bin/bash
# run 2: carveout × ring depth × trigger-first, plus a per-shape plan file.
cd "$(dirname "$0")/.."
mkdir -p /tmp/zb && tar xJf .devbin/bundle.tar.xz -C /tmp/zb
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb; cd /tmp/zb
cat commit | tee $OUT/env.txt; date -u | tee -a $OUT/env.txt
for c in -1 100; do
  echo "== GEMV bandwidth, ZONOS_CARVEOUT=$c" | tee -a $OUT/gemv-bw.log
  ZONOS_CARVEOUT=$c ZONOS_GEMV_PLAN_OUT=/tmp/plan$c.txt ZONOS_GEMV_BENCH=1 timeout 150 ./gpu.test -test.run 'TestGemvBandwidth$' -test.v 2>&1 | tee -a $OUT/gemv-bw.log | grep -E "kernel:|^mamba|^attn|^mlp|^heads" | cut -c1-60,110-250
  cp /tmp/plan$c.txt $OUT/
done
b() { echo "== bench $*" | tee -a $OUT/ab.log
  env "$@" timeout 90 ./zonos bench --backend cuda --runs 3 --steps 60 --batch 0 2>&1 | tee -a $OUT/ab.log | grep -E "decode step \(|step graph alone|TTFA|generation real" | cut -c1-120; }
b ZONOS_GEMV_STAGES=2 ZONOS_PDL_FIRST=0
b ZONOS_GEMV_STAGES=2 ZONOS_PDL_FIRST=0 ZONOS_CARVEOUT=100
b ZONOS_GEMV_STAGES=4 ZONOS_PDL_FIRST=0 ZONOS_CARVEOUT=100
b ZONOS_GEMV_STAGES=4 ZONOS_PDL_FIRST=1 ZONOS_CARVEOUT=100
b ZONOS_GEMV_STAGES=2 ZONOS_PDL_FIRST=1 ZONOS_CARVEOUT=100
b ZONOS_GEMV_PLAN=/tmp/plan100.txt ZONOS_PDL_FIRST=0 ZONOS_CARVEOUT=100
b ZONOS_GEMV_PLAN=/tmp/plan100.txt ZONOS_PDL_FIRST=1 ZONOS_CARVEOUT=100
b ZONOS_GEMV_STAGES=2 ZONOS_PDL_FIRST=0
b ZONOS_GEMV_STAGES=4 ZONOS_PDL_FIRST=0 ZONOS_CARVEOUT=100
