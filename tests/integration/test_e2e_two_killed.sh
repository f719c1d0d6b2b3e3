#!/bin/sh
# Two of three groups are killed with SIGKILL at the same moment.  The last
# one goes on alone (min replicas 1), both are restarted by their agents,
# heal from it and rejoin; every group ends with the same parameters.
#
# Whatever the load (e2e_lib.sh, "holding the run"): every group is held
# before step 30's allreduce and g1 and g2 are killed there; g0 may then go
# on up to step 40 but no further until both restarted groups wait at the
# lighthouse for a quorum (or healed), which the lighthouse cannot issue
# without g0 (the long join timeout waits for the healthy g0), so g0 cannot
# finish before they rejoin and they heal from it.  At a load of 17 the poller saw g2 at step 84, not 25, and g0
# finished before the restarted g2 asked: g2 trained alone from step 0.
E2E_JOIN_TIMEOUT_MS=120000
E2E_HB_TIMEOUT_MS=5000
FTMPI_QUORUM_TIMEOUT_MS=120000
export FTMPI_QUORUM_TIMEOUT_MS
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
P=30

e2e_lighthouse_start 1
e2e_pace 0
e2e_groups_start "g0 g1 g2" 1 --steps 150 --sleep-ms 25 --print-every 5 --pace-file "$E2E_PACE"
e2e_gather 120 $P g0 g1 g2
e2e_wait_held 120 $P g0 g1 g2
# held in step P: both committed P steps (printed "step P") when killed
killed_at_g1=$(e2e_step g1)
killed_at_g2=$(e2e_step g2)
e2e_kill_group g1
e2e_kill_group g2
# the survivors may go on (without the killed, if the lighthouse forgets
# them before their restarts ask) up to step P + 10, no further
e2e_pace $((P + 10))
e2e_wait_restart g1 2 60
e2e_wait_restart g2 2 60
e2e_wait_rejoining 120 g1 g2
s0=$(e2e_step g0)
e2e_pace 1000000
e2e_wait_step g0 $((s0 + 5)) 60
e2e_wait_agents 120 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_loss g0 g1 g2
e2e_check_final 1 g0 g1 g2
for g in g1 g2; do
    first=$(e2e_first_step_of_run $g 2)
    eval "killed_at=\$killed_at_$g"
    [ -n "$first" ] && [ "$first" -gt "$killed_at" ] ||
        e2e_fail "group $g's restarted run began at step '${first}' (killed at $killed_at): no heal"
    e2e_healed $g || e2e_fail "group $g's restarted run did not log its heal"
    e2e_log "group $g rejoined at step $first"
done
[ "$(e2e_failures g0)" -ge 1 ] || e2e_fail "g0 reports no failure survived"
echo "PASS ($TEST_NAME)"
