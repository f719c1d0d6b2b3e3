#!/bin/sh
# I2: one of 3 groups (1 rank each) is killed with SIGKILL in the middle of
# the run; the two others go on without it, its agent (ftmpi-run) restarts
# it, it heals from a live group and takes part again.  At the end every
# group holds bitwise the same parameters.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
: "${E2E_NP:=1}"

e2e_lighthouse_start 1
for g in g0 g1 g2; do
    e2e_group_start $g "$E2E_NP" --steps 150 --sleep-ms 25 --print-every 5
done
e2e_wait_step g1 25 40
e2e_kill_group g1
killed_at=$(e2e_step g1)
# the survivors keep committing while g1 is down
s0=$(e2e_step g0)
e2e_wait_step g0 $((s0 + 5)) 20
e2e_wait_restart g1 2 20
e2e_log "g1 restarted; survivors at step $(e2e_step g0)"
e2e_wait_agents 90 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_loss g0 g1 g2
e2e_check_final "$E2E_NP" g0 g1 g2

# g1's second run started from a healed step, not from 0
first=$(e2e_first_step_of_run g1 2)
[ -n "$first" ] || e2e_fail "g1's restarted run committed no step"
[ "$first" -gt "$killed_at" ] || e2e_fail "g1's restarted run began at step $first (killed at $killed_at): it did not heal"
e2e_log "g1 killed at step $killed_at, rejoined at step $first"
for g in g0 g2; do
    [ "$(e2e_failures $g)" -ge 1 ] || e2e_fail "group $g reports no failure survived"
done
echo "PASS ($TEST_NAME)"
