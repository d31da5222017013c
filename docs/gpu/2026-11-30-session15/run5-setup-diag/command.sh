#!/bin/bash
# session 15 run 5 (662ef0b+worktree: uncommitted stderr stamps, ZONOS_DIAG, in engine/stream.go,
# zonos Generate/Prefix/runTokens; not kept): where the time before the prefill goes; GODEBUG=gctrace=1
D=$(cd "$(dirname "$0")" && pwd); cd $D
AB= NOTEST=1 NOCONF=1 NOBENCH=1 bash run.sh >/dev/null 2>&1   # unpack only
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
(cd /tmp/zb && ZONOS_DIAG=1 GODEBUG=gctrace=1 timeout 200 ./zonos bench --backend cuda --runs 12 --steps 5 --frames 20 --batch 0 > $OUT/bench.log 2> $OUT/diag.log)
