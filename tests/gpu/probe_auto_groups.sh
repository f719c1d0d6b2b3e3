#!/bin/sh
# Issue 29 item 5: two replica groups on one GPU, FTMPI_BACKEND=auto (the
# default), device buffers.  NCCL refuses two ranks of one communicator on
# one GPU; the library must notice that the members share the GPU and stage
# through host memory, so both groups commit every step with 2 participants
# and end with the same bytes.
. "$top_srcdir/tests/gpu/gpu_common.sh"
e2e_init
gpu_need 1
FTMPI_BACKEND=auto FTMPI_BABY_PATH=$top_builddir/ftmpi-baby
E2E_PROG=$top_builddir/tests/gpu/gpu_allreduce
export FTMPI_BACKEND FTMPI_BABY_PATH
e2e_lighthouse_start 2
for g in g0 g1; do
    e2e_group_start $g 1 --steps 8 --count 65536
done
e2e_wait_agents 100 g0 g1
f0=$(gpu_final g0); f1=$(gpu_final g1)
case $f0 in *"steps=8 participants=2 "*) ;; *) e2e_fail "g0 ended with '$f0'" ;; esac
[ "$f0" = "$f1" ] || e2e_fail "groups differ: '$f0' '$f1'"
echo "PASS ($TEST_NAME): $f0"
