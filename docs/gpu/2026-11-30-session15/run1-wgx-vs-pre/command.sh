#!/bin/bash
# session 15 run 1 (built from try/wgx = main 5e42725 + next/wg-split's 9f27ab8 as 4ea9b32; BASE=31a1aac):
# tc_wgx (in-kernel split) vs bf16_parts + tc_wg (ZONOS_TC_WG_SPLIT=pre) vs base 31a1aac; ptxas -v; TestWgLinear; conformance
D=$(cd "$(dirname "$0")" && pwd); cd $D
AB= NOTEST=1 NOCONF=1 NOBENCH=1 bash run.sh >/dev/null 2>&1   # unpack only
mkdir -p /tmp/zbase && tar xJf base.tar.xz -C /tmp/zbase
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
(timeout 60 ptxas -arch=sm_90a -v wgmma.sm90.ptx -o /tmp/wg.cubin 2>&1 | grep -A2 "tc_wg") > $OUT/ptxas.txt 2>&1
G=$D/golden
(cd /tmp/zb && ZONOS_GOLDEN_DIR=$G timeout 120 ./gpu.test -test.v -test.count=1 -test.run 'TestWgLinear|TestWideSmem|TestStepGraphMatchesEager' 2>&1) > $OUT/gpu-test.log
(cd /tmp/zb && ZONOS_GOLDEN_DIR=$G timeout 150 ./zonos conformance --backend cuda --golden $G 2>&1) > $OUT/conformance-cuda.log
for r in 1 2; do for a in "wgx:/tmp/zb:" "pre:/tmp/zb:ZONOS_TC_WG_SPLIT=pre" "base:/tmp/zbase:"; do IFS=: read l dir e <<<"$a"
  echo "== arm $l commit $(cat $dir/commit) env ${e:-none}" >> $OUT/ab.log
  (cd $dir && env $e timeout 90 ./zonos bench --backend cuda --runs 10 --steps 20 --frames 40 --batch 0 >> $OUT/ab.log 2>&1)
done; done
bash ab-summary.sh $OUT/ab.log > $OUT/ab-summary.txt 2>&1
