#!/bin/sh
# Issue 29, the stream-ordering check as one GPU allows it: one group of one
# rank runs gpu_order on baby-nccl (the child maps the buffer by CUDA IPC
# and must wait for the rank's event behind a late write on each stream
# kind); a child that did not wait reduces zeros and gpu_order fails.
. "$top_srcdir/tests/gpu/gpu_common.sh"
e2e_init
gpu_need 1
[ -x "$top_builddir/tests/gpu/gpu_order" ] || { echo "SKIP: gpu_order not built"; exit 77; }
FTMPI_BACKEND=baby-nccl FTMPI_BABY_PATH=$top_builddir/ftmpi-baby
E2E_PROG=$top_builddir/tests/gpu/gpu_order
export FTMPI_BACKEND FTMPI_BABY_PATH
e2e_lighthouse_start 1
e2e_group_start a 1 --steps 6 --delay-ms 200
e2e_wait_agents 100 a
if grep -q 'did not wait' "$TEST_TMPDIR/a.err"; then
    e2e_fail "$(grep 'did not wait' "$TEST_TMPDIR/a.err" | head -1)"
fi
l=$(grep 'ordered steps=' "$TEST_TMPDIR/a.out" | tail -1)
[ "$l" = "ordered steps=6 participants=1" ] || e2e_fail "ended with '$l'"
echo "PASS ($TEST_NAME): 6 steps, each write waited for"
