#!/bin/bash
# session 15 run 7 (3fd801a): lane stream priorities. default then: decode high, vocoder low; equal: both high;
# side: vocoder high, decode low (the default since 5b9174c)
D=$(cd "$(dirname "$0")" && pwd); cd $D
AB= NOTEST=1 NOCONF=1 NOBENCH=1 bash run.sh >/dev/null 2>&1   # unpack only
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
for r in 1 2; do for a in "default:" "equal:ZONOS_LANE_PRIORITY=equal" "side:ZONOS_LANE_PRIORITY=side"; do IFS=: read l e <<<"$a"
  echo "== arm $l commit $(cat /tmp/zb/commit) env ${e:-none}" >> $OUT/ab.log
  (cd /tmp/zb && env $e timeout 90 ./zonos bench --backend cuda --runs 10 --steps 20 --frames 60 --batch 0 >> $OUT/ab.log 2>&1)
done; done
bash ab-summary.sh $OUT/ab.log > $OUT/ab-summary.txt 2>&1
