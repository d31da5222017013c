#!/bin/bash
# run 3: chunked prefill scan — tests, conformance, same-run A/B vs the previous commit, ncu profile.
cd "$(dirname "$0")/.."
NOBENCH=1 PROF=1 TT=300 TARGS="-test.run=TestMamba2|TestZonosRealShape|TestHybridRealShape|TestStepGraph|TestPrefill|TestCUDASoak" bash .devbin/run.sh
mkdir -p /tmp/zo && tar xJf .devbin/old.tar.xz -C /tmp/zo && cp -r /tmp/zb/espeak-ng-data /tmp/zo/ 2>/dev/null
export ESPEAK_DATA_PATH=/tmp/zb
b() { d=$1; shift; echo "== bench $d $(cat $d/commit)" | tee -a $OUT/ab.log
  (cd $d && LD_LIBRARY_PATH=/tmp/zb/lib timeout 90 ./zonos bench --backend cuda --runs 10 --steps 40 --batch 0 2>&1) | tee -a $OUT/ab.log | grep -E "decode step \(|prefill|TTFA|generation real" | cut -c1-120; }
b /tmp/zb; b /tmp/zo; b /tmp/zb; b /tmp/zo
