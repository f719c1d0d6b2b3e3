#!/bin/sh
# A run that ends (issue 36 item 6): the lighthouse started with
# --exit-when-finalized 2 exits 0 once both groups finalized, and not
# before: g1 is killed mid-run and restarted by its agent, so one group
# finalized while the other is still to come back must keep it serving.
E2E_JOIN_TIMEOUT_MS=120000
E2E_HB_TIMEOUT_MS=5000
FTMPI_QUORUM_TIMEOUT_MS=120000
export FTMPI_QUORUM_TIMEOUT_MS
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init

e2e_lighthouse_start 1 0 --exit-when-finalized 2
lh=$E2E_LH_PID
# g1 kills itself at step 10 (whatever the load); both are held at step 0
# until both are in (e2e_gather: a g1 started late would otherwise heal
# past step 10 and never die), then g0 is held before step 20's allreduce
# until g1's new run waits at the lighthouse for a quorum (or healed:
# e2e_lib.sh, "holding the run"), so the restarted g1 heals from it past
# step 10
e2e_pace 0
e2e_group_start g0 1 --steps 400 --sleep-ms 25 --print-every 5 --pace-file "$E2E_PACE"
e2e_group_start g1 1 --steps 400 --sleep-ms 25 --print-every 5 --die-at-step 10 --pace-file "$E2E_PACE"
e2e_gather 120 20 g0 g1
e2e_wait_restart g1 2 60
e2e_wait_rejoining 120 g1
e2e_pace 1000000
pid_alive "$lh" || e2e_fail "the lighthouse ended while g1 was restarting"
e2e_wait_agents 120 g0 g1
e2e_check_states g0 g1
wait_pid_timeout "$lh" 60 || e2e_fail "the lighthouse still runs 60 s after both groups finalized"
st=0
wait "$lh" || st=$?
[ "$st" -eq 0 ] || e2e_fail "the lighthouse exited $st (expected 0)"
log=$TEST_TMPDIR/lighthouse.log
grep -q '2 groups finalized and none is left: the job is over' "$log" ||
    e2e_fail "no end line in the lighthouse's log"
# its end came after g1's second run finalized: both finalize lines precede it
fin=$(grep -n 'g1 finalized' "$log" | tail -n 1 | cut -d: -f1)
end=$(grep -n 'the job is over' "$log" | cut -d: -f1)
[ -n "$fin" ] && [ "$fin" -lt "$end" ] || e2e_fail "the lighthouse ended before g1 finalized"
e2e_log "the lighthouse exited 0 after g0 and the restarted g1 finalized"
echo "PASS ($TEST_NAME)"
