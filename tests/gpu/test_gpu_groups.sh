#!/bin/sh
# Several replica groups on one GPU with device buffers over baby-tcp (NCCL
# itself refuses two ranks of one communicator on one GPU): 3 groups of one
# rank run gpu_allreduce (FT_Allreduce of cudaMalloc'ed memory, staged
# through pinned host memory into each rank's ftmpi-baby ring); every group
# commits every step with 3 participants and ends with the same bytes.
. "$top_srcdir/tests/gpu/gpu_common.sh"
e2e_init
gpu_need 1
FTMPI_BACKEND=baby-tcp FTMPI_BABY_PATH=$top_builddir/ftmpi-baby
E2E_PROG=$top_builddir/tests/gpu/gpu_allreduce
export FTMPI_BACKEND FTMPI_BABY_PATH
e2e_lighthouse_start 3
for g in g0 g1 g2; do
    e2e_group_start $g 1 --steps 20 --count 262144
done
e2e_wait_agents 120 g0 g1 g2
f0=$(gpu_final g0); f1=$(gpu_final g1); f2=$(gpu_final g2)
case $f0 in *"steps=20 participants=3 "*) ;; *) e2e_fail "g0 ended with '$f0'" ;; esac
[ "$f0" = "$f1" ] && [ "$f1" = "$f2" ] || e2e_fail "groups differ: '$f0' '$f1' '$f2'"
echo "PASS ($TEST_NAME): $f0"
