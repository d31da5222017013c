#!/bin/bash
# session 14 run 11: prefix conditioning and state reset in one hand-off, against HEAD~1
D=$(cd "$(dirname "$0")" && pwd)
cd $D
AB= NOTEST=1 NOCONF=1 NOBENCH=1 bash run.sh >/dev/null 2>&1   # unpack only
mkdir -p /tmp/zbase && tar xJf base.tar.xz -C /tmp/zbase
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
for r in 1 2; do for a in "new:/tmp/zb:" "base:/tmp/zbase:"; do IFS=: read l d e <<<"$a"
  echo "== arm $l commit $(cat $d/commit) env ${e:-none}" >> $OUT/ab.log
  (cd $d && env $e timeout 90 ./zonos bench --backend cuda --runs 20 --steps 20 --frames 40 --batch 0 >> $OUT/ab.log 2>&1)
done; done
bash ab-summary.sh $OUT/ab.log > $OUT/ab-summary.txt 2>&1; grep -E "arm|TTFA|prefill" $OUT/ab-summary.txt; grep "Where" $OUT/ab.log | sed 's/(the prefill itself/(itself/' | cut -c1-200
