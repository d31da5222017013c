#!/bin/bash
# session 14 run 3: ncu kernel times of one prefill + decode step (TestProfileDecodeStep) with tc_wg and with tc_wbf; tc_wg per shape
D=$(cd "$(dirname "$0")" && pwd); R=$(cd $D/.. && pwd)
cd $D
AB= NOTEST=1 NOCONF=1 NOBENCH=1 bash run.sh >/dev/null 2>&1   # unpack only
export LD_LIBRARY_PATH=/tmp/zb/lib ESPEAK_DATA_PATH=/tmp/zb
G=$D/golden
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for a in "wg:" "wbf:ZONOS_TC_WG=0"; do IFS=: read l e <<<"$a"
 (cd /tmp/zb && env $e ZONOS_PROFILE=1 timeout 200 $NCU --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv ./gpu.test -test.run TestProfileDecodeStep > $OUT/prof-$l.csv 2>$OUT/prof-$l.err; echo "prof $l rc=$?")
done
(cd /tmp/zb && timeout 200 $NCU --clock-control none --kernel-name regex:'tc_w|bf16_parts|tc_reduce' --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active --csv ./gpu.test -test.run TestWgLinear > $OUT/ncu-wg.csv 2>&1; echo "ncu wg rc=$?")
