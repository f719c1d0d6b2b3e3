#!/bin/sh
# Issue 29: examples/ft_sgd_gpu in 3 groups (one GPU, FTMPI_BACKEND as set,
# default baby-tcp); g1 is killed with SIGKILL once it has committed 30
# steps, its agent restarts it, it heals from a live group, and all three
# end with the same final checksum.
. "$top_srcdir/tests/gpu/gpu_common.sh"
e2e_init
gpu_need 1
: "${FTMPI_BACKEND:=baby-tcp}"
FTMPI_BABY_PATH=$top_builddir/ftmpi-baby
E2E_PROG=$top_builddir/examples/ft_sgd_gpu
export FTMPI_BACKEND FTMPI_BABY_PATH
commits() { cat "$TEST_TMPDIR/$1.events"* 2>/dev/null | grep -c '"committed":true'; }
g1_past() { [ "$(commits g1)" -ge "$1" ]; }
e2e_lighthouse_start 1
for g in g0 g1 g2; do
    e2e_group_start $g 1 4000
done
wait_until 60 g1_past 30 || e2e_fail "g1 committed $(commits g1) steps in 60 s"
e2e_kill_group g1
e2e_wait_restart g1 2 30
e2e_log "g1 restarted"
e2e_wait_agents 150 g0 g1 g2
heals=$(cat "$TEST_TMPDIR/g1.events"* | grep -c '"heal":true')
[ "$heals" -ge 1 ] || e2e_fail "g1's restarted run did not heal"
e2e_check_final 1 g0 g1 g2
echo "PASS ($TEST_NAME): g1 killed, restarted, healed ($heals); 3 groups agree"
