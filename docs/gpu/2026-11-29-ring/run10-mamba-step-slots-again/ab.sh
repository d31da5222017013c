#!/bin/bash
# run 10: the same A/B again, order reversed (machine warm).
cd "$(dirname "$0")/.."
mkdir -p /tmp/zo /tmp/zb && tar xJf .devbin/old.tar.xz -C /tmp/zo && tar xJf .devbin/bundle.tar.xz -C /tmp/zb
export ESPEAK_DATA_PATH=/tmp/zb
b() { d=$1; echo "== bench $d $(cat $d/commit)" | tee -a $OUT/ab.log
  (cd $d && LD_LIBRARY_PATH=/tmp/zb/lib timeout 50 ./zonos bench --backend cuda --runs 3 --steps 60 --batch 0 2>&1) | tee -a $OUT/ab.log | grep -aE "decode step \(|prefill \(|TTFA" | cut -c1-100; }
b /tmp/zo; b /tmp/zb
