#!/bin/bash
# session 15 run 4 (662ef0b): Go CPU profile of the bench's rollouts (where the prefix conditioning's 1.5 ms go)
D=$(cd "$(dirname "$0")" && pwd); cd $D
AB= NOTEST=1 NOCONF=1 NOBENCH=1 bash run.sh >/dev/null 2>&1   # unpack only
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
(cd /tmp/zb && timeout 200 ./zonos bench --backend cuda --runs 40 --steps 5 --frames 20 --batch 0 --cpuprofile $OUT/cpu.pprof > $OUT/bench.log 2>&1)
