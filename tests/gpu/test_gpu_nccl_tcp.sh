#!/bin/sh
# nccl and tcp give the same bytes: 2 groups (one GPU each) run
# gpu_allreduce on FTMPI_BACKEND=nccl, then on tcp (device buffers staged
# through host memory); the final checksums must be equal.
. "$top_srcdir/tests/gpu/gpu_common.sh"
e2e_init
gpu_need 2
E2E_PROG=$top_builddir/tests/gpu/gpu_allreduce
for be in nccl tcp; do
    FTMPI_BACKEND=$be
    export FTMPI_BACKEND
    e2e_lighthouse_start 2
    CUDA_VISIBLE_DEVICES=0
    export CUDA_VISIBLE_DEVICES
    e2e_group_start a$be 1 --steps 10
    CUDA_VISIBLE_DEVICES=1
    e2e_group_start b$be 1 --steps 10
    unset CUDA_VISIBLE_DEVICES
    e2e_wait_agents 120 a$be b$be
    e2e_lighthouse_kill
done
n=$(gpu_final anccl); t=$(gpu_final atcp)
case $n in *"steps=10 participants=2 "*) ;; *) e2e_fail "nccl run ended with '$n'" ;; esac
[ "$n" = "$t" ] || e2e_fail "nccl '$n' and tcp '$t' differ"
[ "$n" = "$(gpu_final bnccl)" ] || e2e_fail "the nccl groups differ"
echo "PASS ($TEST_NAME): $n"
