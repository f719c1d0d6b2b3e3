#!/bin/sh
# Two of three groups are killed with SIGKILL at the same moment.  The last
# one goes on alone (min replicas 1), both are restarted by their agents,
# heal from it and rejoin; every group ends with the same parameters.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init

e2e_lighthouse_start 1
e2e_groups_start "g0 g1 g2" 1 --steps 150 --sleep-ms 25 --print-every 5
e2e_wait_step g2 25 40
# each group's step when it was killed: under load the two kills can be a
# second apart, and g1 is then killed steps before g2
e2e_kill_group g1
killed_at_g1=$(e2e_step g1)
e2e_kill_group g2
killed_at_g2=$(e2e_step g2)
s0=$(e2e_step g0)
e2e_wait_step g0 $((s0 + 5)) 20
e2e_wait_restart g1 2 20
e2e_wait_restart g2 2 20
e2e_wait_agents 90 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_loss g0 g1 g2
e2e_check_final 1 g0 g1 g2
for g in g1 g2; do
    first=$(e2e_first_step_of_run $g 2)
    eval "killed_at=\$killed_at_$g"
    [ -n "$first" ] && [ "$first" -gt "$killed_at" ] ||
        e2e_fail "group $g's restarted run began at step '${first}' (killed at $killed_at): no heal"
    e2e_log "group $g rejoined at step $first"
done
[ "$(e2e_failures g0)" -ge 1 ] || e2e_fail "g0 reports no failure survived"
echo "PASS ($TEST_NAME)"
