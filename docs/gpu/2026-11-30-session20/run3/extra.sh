#!/bin/bash
# session 20 run 3: the new defaults; paced L2 hints; chunk GEMV occupancy
cd "$(dirname "$0")"
TARGS='-test.run TestMamba2Run$|TestMamba2RunTrace' TT=150 NOCONF=1 NOBENCH=1 TAILN=30 bash run.sh
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
grep "a run\|FAIL" $OUT/gpu-test.log
if grep -q "^PASS$" $OUT/gpu-test.log; then
  arms=("default:" "l2x4:ZONOS_RUN_L2=4" "l2x8:ZONOS_RUN_L2=8" "gemv72:ZONOS_GEMV_SMEM=72")
  n=${#arms[@]}
  for r in 0 1; do for ((i = 0; i < n; i++)); do
    j=$(((i + r) % n)); IFS=: read -r label envs <<<"${arms[$j]}"
    echo "== arm $label commit $(cat /tmp/zb/commit) env ${envs:-none}" | tee -a $OUT/ab.log
    (cd /tmp/zb && env $envs timeout 90 ./zonos bench --backend cuda --runs 3 --steps 60 --batch 0 2>&1) >>$OUT/ab.log
  done; done
  bash ab-summary.sh $OUT/ab.log | tee $OUT/ab-summary.txt
fi
