#!/bin/bash
# session 15 run 10 (be45a19): the race detector over the gpu tests that exercise this session's concurrency
# (the pool's collection goroutine, run scopes, lanes, concurrent callers, the step graph and token feedback)
D=$(cd "$(dirname "$0")" && pwd); cd $D
AB= NOTEST=1 NOCONF=1 NOBENCH=1 bash run.sh >/dev/null 2>&1   # unpack only
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
xz -dc gpu-race.test.xz > /tmp/zb/gpu-race.test && chmod +x /tmp/zb/gpu-race.test
G=$D/golden
(cd /tmp/zb && ZONOS_GOLDEN_DIR=$G timeout 240 ./gpu-race.test -test.v -test.count=1 -test.short -test.timeout 240s \
  -test.run 'TestRunScope|TestCollectionRunsBehind|TestSteadyStateAllocates|TestConcurrentCallers|TestGraphReplay|TestFeedAt|TestStepGraphMatchesEager|TestMisusePanicsInCaller|TestLaneRunsBesideMain|TestEngineVocoderOnLane|TestCUDASoak' 2>&1) > $OUT/gpu-race.log
echo rc=$?; grep -E "^(--- |ok|PASS|FAIL)|DATA RACE|WARNING" $OUT/gpu-race.log | sort | uniq -c | sort -rn | head -30
# then, on the same warm machine (two more calls; the first pointed ZONOS_GOLDEN_DIR at a wrong path and the soak skipped):
#   mkdir -p /tmp/g && tar xJf .devbin/golden.tar.xz -C /tmp/g
#   cd /tmp/zb && ZONOS_GOLDEN_DIR=/tmp/g/golden timeout 170 ./gpu-race.test -test.v -test.count=1 -test.timeout 170s -test.run TestCUDASoak
# gpu-race.test: CGO_ENABLED=1 go test -c -race -tags cuda -ldflags='-s -w' ./gpu/ at be45a19, xz-compressed into .devbin
