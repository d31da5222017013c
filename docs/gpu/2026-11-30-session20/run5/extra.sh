#!/bin/bash
# session 20 run 5: gated fc1 GEMV and the register sampler: tests; A/B against ee894ce and the fold off
cd "$(dirname "$0")"
TARGS='-test.run TestLinearSwiGLU|TestGemvChunk|TestSampleMatchesHost|TestSampleSequence|TestGuide|TestHybridRealShape|TestZonosRealShape|TestStepGraph' TT=300 NOCONF=1 NOBENCH=1 TAILN=30 bash run.sh
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
mkdir -p /tmp/zbase && tar xJf base-ee894ce.tar.xz -C /tmp/zbase
if grep -q "^PASS$" $OUT/gpu-test.log; then
  arms=("new:/tmp/zb:" "noglu:/tmp/zb:ZONOS_GLU_FOLD=0" "ee894ce:/tmp/zbase:")
  n=${#arms[@]}
  for r in 0 1; do for ((i = 0; i < n; i++)); do
    j=$(((i + r) % n)); IFS=: read -r label dir envs <<<"${arms[$j]}"
    echo "== arm $label commit $(cat $dir/commit) env ${envs:-none}" | tee -a $OUT/ab.log
    (cd $dir && env $envs timeout 90 ./zonos bench --backend cuda --runs 3 --steps 60 --batch 0 2>&1) >>$OUT/ab.log
  done; done
  bash ab-summary.sh $OUT/ab.log | tee $OUT/ab-summary.txt
fi
