#!/bin/sh
# Issue 29 benchmark: FT_Allreduce of a device buffer over baby-tcp (staged
# through pinned host memory) against the same on a host buffer, 2 groups of
# one rank on one GPU, 4M floats (16 MiB), 12 steps each.  Prints the mean
# time of one FT_Allreduce for both and their ratio.
. "$top_srcdir/tests/gpu/gpu_common.sh"
e2e_init
gpu_need 1
FTMPI_BACKEND=baby-tcp FTMPI_BABY_PATH=$top_builddir/ftmpi-baby
E2E_PROG=$top_builddir/tests/gpu/gpu_allreduce
export FTMPI_BACKEND FTMPI_BABY_PATH
for where in device host; do
    h=0
    [ $where = host ] && h=1
    e2e_lighthouse_start 2
    for g in a b; do
        e2e_group_start $where$g 1 --steps 12 --count 4194304 --host $h
    done
    e2e_wait_agents 120 ${where}a ${where}b
    e2e_lighthouse_kill
done
d=$(sed -n 's/.*us_per_allreduce=//p' "$TEST_TMPDIR/devicea.out" | tail -1)
h=$(sed -n 's/.*us_per_allreduce=//p' "$TEST_TMPDIR/hosta.out" | tail -1)
[ -n "$d" ] && [ -n "$h" ] || e2e_fail "no timing line (device '$d', host '$h')"
echo "bench staging: 16 MiB FT_Allreduce over baby-tcp, 2 groups: device $d us, host $h us, ratio $(awk -v d="$d" -v h="$h" 'BEGIN { printf "%.2f", d / h }')"
echo "PASS ($TEST_NAME)"
