#!/bin/bash
# session 14 run 10: attribution with the frees in place: tc_wg against tc_wbf (ZONOS_TC_WG=0)
D=$(cd "$(dirname "$0")" && pwd)
cd $D
AB= NOTEST=1 NOCONF=1 NOBENCH=1 bash run.sh >/dev/null 2>&1   # unpack only
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
for r in 1 2; do for a in "wg:" "wbf:ZONOS_TC_WG=0"; do IFS=: read l e <<<"$a"
  echo "== arm $l commit $(cat /tmp/zb/commit) env ${e:-none}" >> $OUT/ab.log
  (cd /tmp/zb && env $e timeout 90 ./zonos bench --backend cuda --runs 10 --steps 20 --frames 40 --batch 0 >> $OUT/ab.log 2>&1)
done; done
bash ab-summary.sh $OUT/ab.log > $OUT/ab-summary.txt 2>&1; cat $OUT/ab-summary.txt; grep "Where" $OUT/ab.log
