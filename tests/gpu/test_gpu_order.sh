#!/bin/sh
# baby-nccl orders a device buffer after the work that wrote it (CUDA IPC
# events, src/comm/baby_nccl.c): 2 groups (one GPU each) run gpu_order on
# FTMPI_BACKEND=baby-nccl; every step writes the buffer on a stream (a
# created one, the per-thread default one, the legacy default one) behind a
# 200 ms host function and calls FT_Allreduce at once.  A child that did not
# wait for the rank's event reduces zeros: gpu_order exits 1 and never
# prints its "ordered" line.  Needs 2 GPUs (NCCL refuses two ranks of one
# communicator on one GPU); skips (77) without.
. "$top_srcdir/tests/gpu/gpu_common.sh"
e2e_init
gpu_need 2
[ -x "$top_builddir/tests/gpu/gpu_order" ] || { echo "SKIP: gpu_order not built"; exit 77; }
FTMPI_BACKEND=baby-nccl FTMPI_BABY_PATH=$top_builddir/ftmpi-baby
E2E_PROG=$top_builddir/tests/gpu/gpu_order
export FTMPI_BACKEND FTMPI_BABY_PATH
e2e_lighthouse_start 2
CUDA_VISIBLE_DEVICES=0
export CUDA_VISIBLE_DEVICES
e2e_group_start a 1 --steps 6 --delay-ms 200
CUDA_VISIBLE_DEVICES=1
e2e_group_start b 1 --steps 6 --delay-ms 200
unset CUDA_VISIBLE_DEVICES
e2e_wait_agents 120 a b
for g in a b; do
    if grep -q 'did not wait' "$TEST_TMPDIR/$g.err"; then
        e2e_fail "group $g: $(grep 'did not wait' "$TEST_TMPDIR/$g.err" | head -1)"
    fi
    l=$(grep 'ordered steps=' "$TEST_TMPDIR/$g.out" | tail -1)
    [ "$l" = "ordered steps=6 participants=2" ] || e2e_fail "group $g ended with '$l'"
done
echo "PASS ($TEST_NAME): both groups, 6 steps, each write waited for"
