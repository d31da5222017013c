#!/bin/bash
# session 15 run 13: mamba_ssd_cb (new) vs ZONOS_SSD_CB=0 vs base bb2925c; the scan tests; conformance
# (BASE=bb2925c; golden.tar.xz held only the zonos-* packs, so the carry stayed under 64 MiB; the 60 s test timeout cut TestZonosRealShape after its hybrid part, whose figures equal run 8's)
D=$(cd "$(dirname "$0")" && pwd); cd $D
AB= NOTEST=1 NOCONF=1 NOBENCH=1 bash run.sh >/dev/null 2>&1   # unpack only
mkdir -p /tmp/zbase && tar xJf base.tar.xz -C /tmp/zbase
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
G=$D/golden
(cd /tmp/zb && ZONOS_GOLDEN_DIR=$G timeout 60 ./gpu.test -test.v -test.count=1 -test.run 'TestMambaSSDCB|TestMambaChunkedScan|TestMambaPrefillMatchesSteps|TestScanPreKernels|TestZonosRealShape' 2>&1) > $OUT/gpu-test.log; grep -E "^(--- |ok|PASS|FAIL)|max" $OUT/gpu-test.log | head -20
(cd /tmp/zb && ZONOS_GOLDEN_DIR=$G timeout 100 ./zonos conformance --backend cuda --golden $G --only zonos- 2>&1) > $OUT/conformance-cuda.log; tail -1 $OUT/conformance-cuda.log; grep "prefill.logits" $OUT/conformance-cuda.log
for r in 1 2; do for a in "new:/tmp/zb:" "nocb:/tmp/zb:ZONOS_SSD_CB=0" "base:/tmp/zbase:"; do IFS=: read l dir e <<<"$a"
  echo "== arm $l commit $(cat $dir/commit) env ${e:-none}" >> $OUT/ab.log
  (cd $dir && env $e timeout 60 ./zonos bench --backend cuda --runs 10 --steps 5 --frames 20 --batch 0 >> $OUT/ab.log 2>&1)
done; done
bash ab-summary.sh $OUT/ab.log > $OUT/ab-summary.txt 2>&1; grep -E "arm|prefill|TTFA|decode step" $OUT/ab-summary.txt; grep "Where" $OUT/ab.log | sed 's/.*(p50 from the request): //' | cut -c1-200
