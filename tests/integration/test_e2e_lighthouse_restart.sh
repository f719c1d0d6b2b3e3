#!/bin/sh
# The lighthouse is killed (SIGKILL) in the middle of a run of 2 groups and
# started again on the same port: no step commits while it is down (a step
# needs a quorum), the groups keep retrying, and training resumes once it is
# back.  The states are bitwise equal at the end.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init

e2e_lighthouse_start 1
for g in g0 g1; do
    e2e_group_start $g 1 --steps 120 --sleep-ms 20 --print-every 5
done
e2e_wait_step g0 30 40
e2e_lighthouse_kill
down_at=$(e2e_step g0)
sleep 2
# at most the step in flight may have finished (and one print period)
still=$(e2e_step g0)
[ "$still" -le $((down_at + 5)) ] ||
    e2e_fail "g0 went on from step $down_at to $still without a lighthouse"
e2e_lighthouse_start 1 "$E2E_LH_PORT"
e2e_wait_step g0 $((still + 10)) 30
e2e_log "training resumed: g0 at step $(e2e_step g0) (was $still when the lighthouse came back)"
e2e_wait_agents 90 g0 g1
e2e_check_states g0 g1
e2e_check_loss g0 g1
e2e_check_final 1 g0 g1
for g in g0 g1; do
    [ "$(e2e_starts $g)" -eq 1 ] || e2e_fail "group $g was restarted: the outage should not kill it"
done
echo "PASS ($TEST_NAME)"
