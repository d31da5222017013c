#!/bin/bash
# run 9: mamba_step_nS — tests, conformance, A/B against 6a4f5b3.
cd "$(dirname "$0")/.."
tar xJf .devbin/golden.tar.xz -C .devbin && NOBENCH=1 TT=120 TAILN=20 TARGS="-test.run=TestMamba|TestScanPre|TestStepGraph|TestCUDASoak|TestFeedAt" bash .devbin/run.sh
mkdir -p /tmp/zo && tar xJf .devbin/old.tar.xz -C /tmp/zo
export ESPEAK_DATA_PATH=/tmp/zb
b() { d=$1; echo "== bench $d $(cat $d/commit)" | tee -a $OUT/ab.log
  (cd $d && LD_LIBRARY_PATH=/tmp/zb/lib timeout 60 ./zonos bench --backend cuda --runs 3 --steps 60 --batch 0 2>&1) | tee -a $OUT/ab.log | grep -E "decode step \(|step graph alone|prefill|TTFA|generation real" | cut -c1-110; }
b /tmp/zb; b /tmp/zo
