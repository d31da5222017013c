#!/bin/bash
# session 14 run 1: lds128 branch vs main vs SCAN=seq; conformance splits; ncu of the ssd scan
D=$(cd "$(dirname "$0")" && pwd)
cd $D
AB= NOTEST=1 NOCONF=1 NOBENCH=1 bash run.sh >/dev/null 2>&1   # unpack only
mkdir -p /tmp/zbase && tar xJf base.tar.xz -C /tmp/zbase
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
G=$D/golden
for r in 1 2; do for a in "lds:/tmp/zb:" "main:/tmp/zbase:" "seq:/tmp/zb:ZONOS_SCAN=seq" "main:/tmp/zbase:"; do IFS=: read l d e <<<"$a"
  echo "== arm $l commit $(cat $d/commit) env ${e:-none}" >> $OUT/ab.log
  (cd $d && env $e timeout 90 ./zonos bench --backend cuda --runs 3 --steps 60 --batch 0 --frames 40 >> $OUT/ab.log 2>&1)
done; done
bash ab-summary.sh $OUT/ab.log > $OUT/ab-summary.txt 2>&1; cat $OUT/ab-summary.txt
for a in "default:" "parts3:ZONOS_TC_PARTS=3" "seq:ZONOS_SCAN=seq" "both:ZONOS_TC_PARTS=3 ZONOS_SCAN=seq"; do IFS=: read l e <<<"$a"
  (cd /tmp/zb && env $e ZONOS_GOLDEN_DIR=$G timeout 100 ./zonos conformance --backend cuda --golden $G --only zonos- > $OUT/conf-$l.log 2>&1; echo "conf $l rc=$?")
  grep -iE "logits|passed" $OUT/conf-$l.log | head -8
done
(cd /tmp/zb && ZONOS_GOLDEN_DIR=$G timeout 100 ./gpu.test -test.v -test.count=1 -test.run 'TestMambaChunkedScan|TestMambaPrefillMatchesSteps|TestMamba2Block' 2>&1 | tail -15 | tee $OUT/gpu-test.log)
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
(cd /tmp/zb && timeout 120 $NCU --clock-control none --kernel-name regex:mamba_ssd_pre --metrics gpu__time_duration.sum,launch__registers_per_thread --csv ./gpu.test -test.run TestMambaChunkedScan > $OUT/ncu-ssd.csv 2>&1; echo ncu rc=$?)
grep -E "ssd" $OUT/ncu-ssd.csv | tail -12
