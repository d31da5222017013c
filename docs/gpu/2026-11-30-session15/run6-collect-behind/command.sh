#!/bin/bash
# session 15 run 6 (dbf9f12, BASE=662ef0b): the pool collects behind the owner (new) vs base, with GODEBUG=gctrace=1;
# TestRunScope, TestCollectionRunsBehind, TestSteadyStateAllocates; then the whole gpu.test and conformance
D=$(cd "$(dirname "$0")" && pwd); cd $D
AB= NOTEST=1 NOCONF=1 NOBENCH=1 bash run.sh >/dev/null 2>&1   # unpack only
mkdir -p /tmp/zbase && tar xJf base.tar.xz -C /tmp/zbase
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
G=$D/golden
(cd /tmp/zb && ZONOS_GOLDEN_DIR=$G timeout 60 ./gpu.test -test.v -test.count=1 -test.run 'TestRunScope|TestCollectionRunsBehind|TestSteadyStateAllocates' 2>&1) > $OUT/gpu-test-quick.log
for r in 1 2; do for a in "new:/tmp/zb:" "base:/tmp/zbase:"; do IFS=: read l dir e <<<"$a"
  echo "== arm $l commit $(cat $dir/commit) env ${e:-none}" >> $OUT/ab.log
  (cd $dir && env $e GODEBUG=gctrace=1 timeout 90 ./zonos bench --backend cuda --runs 10 --steps 20 --frames 40 --batch 0 >> $OUT/ab.log 2>$OUT/gc-$l-$r.log)
done; done
bash ab-summary.sh $OUT/ab.log > $OUT/ab-summary.txt 2>&1
(cd /tmp/zb && ZONOS_GOLDEN_DIR=$G timeout 300 ./gpu.test -test.v -test.count=1 -test.timeout 300s 2>&1) > $OUT/gpu-test.log
(cd /tmp/zb && ZONOS_GOLDEN_DIR=$G timeout 150 ./zonos conformance --backend cuda --golden $G 2>&1) > $OUT/conformance-cuda.log
