#!/bin/bash
# final run: A/B of tc_wide's splits, then the full suite (tests, conformance, bench report) and the ncu profile.
cd "$(dirname "$0")/.."
mkdir -p /tmp/zb && tar xJf .devbin/bundle.tar.xz -C /tmp/zb
( export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb; cd /tmp/zb
b() { echo "== bench $*" | tee -a $OUT/ab.log
  env "$@" timeout 60 ./zonos bench --backend cuda --runs 5 --steps 10 --batch 0 2>&1 | tee -a $OUT/ab.log | grep -E "prefill|TTFA" | cut -c1-120; }
b ZONOS_TC_SPLITS=new; b ZONOS_TC_SPLITS=old; b ZONOS_TC_SPLITS=new; b ZONOS_TC_SPLITS=old )
PROF=1 TT=400 TAILN=12 bash .devbin/run.sh
