#!/bin/sh
# I2: one of 3 groups (1 rank each) is killed with SIGKILL in the middle of
# the run; the two others go on without it, its agent (ftmpi-run) restarts
# it, it heals from a live group and takes part again.  At the end every
# group holds bitwise the same parameters.
#
# Whatever the load (e2e_lib.sh, "holding the run"): every group is held
# before step 30's allreduce and g1 is killed there; g0 and g2 may then go
# on up to step 40 but no further until the restarted g1 waits at the
# lighthouse for a quorum (or healed; the split-brain guard keeps the
# lighthouse from issuing one to g1 alone while g0 and g2 are healthy), so
# they cannot finish before g1 rejoins and g1 heals from one of them.  At a load of 17 the survivors had finished or were about to
# when g1's new run asked.
E2E_JOIN_TIMEOUT_MS=120000
E2E_HB_TIMEOUT_MS=5000
FTMPI_QUORUM_TIMEOUT_MS=120000
export FTMPI_QUORUM_TIMEOUT_MS
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
: "${E2E_NP:=1}"
P=30

e2e_lighthouse_start 1
e2e_pace 0
for g in g0 g1 g2; do
    e2e_group_start $g "$E2E_NP" --steps 150 --sleep-ms 25 --print-every 5 --pace-file "$E2E_PACE"
done
e2e_gather 120 $P g0 g1 g2
e2e_wait_held 120 $P g0 g1 g2
# held in step P: g1 committed P steps (printed "step P") when killed
killed_at=$(e2e_step g1)
e2e_kill_group g1
# the survivors may go on (without the killed, if the lighthouse forgets
# them before their restarts ask) up to step P + 10, no further
e2e_pace $((P + 10))
e2e_wait_restart g1 2 60
e2e_wait_rejoining 120 g1
s0=$(e2e_step g0)
e2e_pace 1000000
# the survivors go on: past the failed step (its allreduce lost g1) and on
e2e_wait_step g0 $((s0 + 5)) 60
e2e_log "g1 restarted; survivors at step $(e2e_step g0)"
e2e_wait_agents 120 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_loss g0 g1 g2
e2e_check_final "$E2E_NP" g0 g1 g2

# g1's second run started from a healed step, not from 0
first=$(e2e_first_step_of_run g1 2)
[ -n "$first" ] || e2e_fail "g1's restarted run committed no step"
[ "$first" -gt "$killed_at" ] || e2e_fail "g1's restarted run began at step $first (killed at $killed_at): it did not heal"
e2e_healed g1 || e2e_fail "g1's restarted run did not log its heal"
e2e_log "g1 killed at step $killed_at, rejoined at step $first"
for g in g0 g2; do
    [ "$(e2e_failures $g)" -ge 1 ] || e2e_fail "group $g reports no failure survived"
done
echo "PASS ($TEST_NAME)"
