#!/bin/sh
# Healing device state (FT_State_register of cudaMalloc'ed memory): g0
# runs gpu_heal alone; g1 starts once g0 is past step 10, heals w from g0
# (the source's pinned host mirror, cudaMemcpy into place on the healer),
# and both end with the same bytes.  One GPU, two groups over tcp (device
# buffers staged through host memory: NCCL refuses two ranks on one GPU).
. "$top_srcdir/tests/gpu/gpu_common.sh"
e2e_init
# gpu_need also wants gpu_allreduce (built with NCCL): this needs CUDA alone
[ -n "$(ls /dev/nvidia[0-9]* 2>/dev/null)" ] || { echo "SKIP: no CUDA device"; exit 77; }
[ -x "$top_builddir/tests/gpu/gpu_heal" ] || { echo "SKIP: gpu_heal not built"; exit 77; }
FTMPI_BACKEND=tcp
E2E_PROG=$top_builddir/tests/gpu/gpu_heal
export FTMPI_BACKEND
e2e_lighthouse_start 1
e2e_group_start g0 1 --steps 60 --count 1000003 --sleep-ms 200
e2e_wait_step g0 10 60
e2e_group_start g1 1 --steps 60 --count 1000003 --sleep-ms 200
e2e_wait_agents 180 g0 g1
h=$(grep '^healed at step' "$TEST_TMPDIR/g1.out" | head -1)
[ -n "$h" ] || e2e_fail "g1 did not heal (its first step: $(e2e_first_step_of_run g1 1))"
f0=$(gpu_final g0); f1=$(gpu_final g1)
case $f0 in *"steps=60 "*) ;; *) e2e_fail "g0 ended with '$f0'" ;; esac
[ "$f0" = "$f1" ] || e2e_fail "groups differ: '$f0' '$f1'"
echo "PASS ($TEST_NAME): g1 $h; $f0"
