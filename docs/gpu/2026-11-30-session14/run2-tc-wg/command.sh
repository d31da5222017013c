#!/bin/bash
# session 14 run 2: tc_wg (wgmma prefill GEMM): ptxas check, tests, A/B against HEAD, conformance
D=$(cd "$(dirname "$0")" && pwd); R=$(cd $D/.. && pwd)
cd $D
AB= NOTEST=1 NOCONF=1 NOBENCH=1 bash run.sh >/dev/null 2>&1   # unpack only
mkdir -p /tmp/zbase && tar xJf base.tar.xz -C /tmp/zbase
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
G=$D/golden
PTXAS=$(command -v ptxas || ls /usr/local/cuda*/bin/ptxas | head -1)
$PTXAS -arch=sm_90a -v -o /dev/null $R/gpu/kernels/wgmma.sm90.ptx 2>&1 | tail -8 | tee $OUT/ptxas.log
(cd /tmp/zb && ZONOS_GOLDEN_DIR=$G timeout 200 ./gpu.test -test.v -test.count=1 -test.run 'TestWgLinear|TestWbfAccuracy|TestPDLWaitFirst|TestLinear' > $OUT/gpu-test.log 2>&1; echo "gpu.test rc=$?")
grep -E "^(--- |ok|PASS|FAIL)|tc_wg|panic|Error" $OUT/gpu-test.log | head -30
for r in 1 2; do for a in "wg:/tmp/zb:" "base:/tmp/zbase:" "wbf:/tmp/zb:ZONOS_TC_WG=0" ; do IFS=: read l d e <<<"$a"
  echo "== arm $l commit $(cat $d/commit) env ${e:-none}" >> $OUT/ab.log
  (cd $d && env $e timeout 90 ./zonos bench --backend cuda --runs 3 --steps 60 --batch 0 --frames 40 >> $OUT/ab.log 2>&1)
done; done
bash ab-summary.sh $OUT/ab.log > $OUT/ab-summary.txt 2>&1; cat $OUT/ab-summary.txt
(cd /tmp/zb && ZONOS_GOLDEN_DIR=$G timeout 120 ./zonos conformance --backend cuda --golden $G > $OUT/conformance.log 2>&1; echo "conf rc=$?")
grep -E "logits|passed" $OUT/conformance.log | head -14
