#!/bin/sh
# Issue 29 benchmark: a heal of device memory against one of host memory.
# g0 runs gpu_heal alone with 16M floats (64 MiB) of weights; g1 starts once
# g0 is past step 5 and heals them from g0 (device: the source's pinned host
# mirror, cudaMemcpy into place; host: straight into malloc'ed memory).  One
# GPU, tcp.  Prints the healing FT_Quorum's time for both.
. "$top_srcdir/tests/gpu/gpu_common.sh"
e2e_init
[ -n "$(ls /dev/nvidia[0-9]* 2>/dev/null)" ] || { echo "SKIP: no CUDA device"; exit 77; }
FTMPI_BACKEND=tcp
E2E_PROG=$top_builddir/tests/gpu/gpu_heal
export FTMPI_BACKEND
for where in device host; do
    h=0
    [ $where = host ] && h=1
    e2e_lighthouse_start 1
    e2e_group_start ${where}0 1 --steps 25 --count 16777216 --sleep-ms 100 --host $h
    e2e_wait_step ${where}0 5 60
    e2e_group_start ${where}1 1 --steps 25 --count 16777216 --sleep-ms 100 --host $h
    e2e_wait_agents 120 ${where}0 ${where}1
    e2e_lighthouse_kill
done
d=$(sed -n 's/.*heal_ms=\([0-9.]*\).*/\1/p' "$TEST_TMPDIR/device1.out" | head -1)
h=$(sed -n 's/.*heal_ms=\([0-9.]*\).*/\1/p' "$TEST_TMPDIR/host1.out" | head -1)
[ -n "$d" ] && [ -n "$h" ] || e2e_fail "a group did not heal (device '$d' ms, host '$h' ms)"
echo "bench heal: 64 MiB of weights, tcp, 2 groups: device $d ms, host $h ms"
echo "PASS ($TEST_NAME)"
