#!/bin/sh
# A group killed with SIGKILL and restarted at once under the same replica
# id (ftmpi-run always restarts under the same id) is a new incarnation: the
# quorum it rejoins must get a new quorum id, so the survivor builds a new
# ring and the restarted group meets on fresh store keys.  Before the
# incarnation rule the quorum kept its id (same sorted replica ids), the
# survivor kept its ring to the dead process and the first step of the
# restarted group failed: one step lost on every restart.
#
# Two groups of one rank, --min-replicas 2 (the survivor cannot go on
# alone, so the next quorum always has both, as in an immediate restart).
# g1 kills itself (SIGKILL) at step 15 after the step's allreduce, before
# its commit: the survivor saw no error, committed the step and waits in
# its next quorum.  Asserts: the restarted run's first quorum id differs
# from every id of the first run; no step of either group fails (the
# survivor's attempts equal its commits, the restarted run's first attempt
# commits); both groups end with bitwise equal states.  FTMPI_BACKEND=tcp:
# "the survivor saw no error" is the tcp ring's (its last bytes reach the
# survivor before the dead process's socket closes); on ucx the survivor's
# allreduce of step 15 may still fail (UCX drops what it had not delivered
# when the endpoint fails), and this test is about quorum ids, not backends.
: "${FTMPI_QUORUM_TIMEOUT_MS:=30000}" # the survivor waits out a slow restart
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
FTMPI_BACKEND=tcp
export FTMPI_BACKEND

e2e_lighthouse_start 2
e2e_group_start g0 1 --steps 40 --sleep-ms 25 --print-every 1
e2e_group_start g1 1 --steps 40 --sleep-ms 25 --print-every 1 --die-at-step 15 --die-where commit
e2e_wait_restart g1 2 40
e2e_log "g1 died at step 15 and was restarted"
e2e_wait_agents 90 g0 g1
e2e_check_states g0 g1

# g1's runs are split by its "initial loss" lines; step lines read
# "step N loss L quorum Q participants P", failures "step N failed: ...".
out=$TEST_TMPDIR/g1.out
ids1=$(awk '/^initial loss/ { run++ } run == 1 && /^step [0-9]+ loss/ { print $6 }' "$out" | sort -u)
first2=$(awk '/^initial loss/ { run++ } run == 2 && /^step [0-9]+ loss/ { print $6; exit }' "$out")
failed2=$(awk '/^initial loss/ { run++ } run == 2 && /^step [0-9]+ loss/ { exit }
    run == 2 && /^step [0-9]+ failed/ { n++ } END { print n + 0 }' "$out")
[ -n "$ids1" ] || e2e_fail "g1's first run printed no quorum id"
[ -n "$first2" ] || e2e_fail "g1's restarted run committed no step"
e2e_log "g1 run 1 quorum ids: $(echo $ids1); run 2 first committed step in quorum $first2," \
    "$failed2 failed attempts before it"
for q in $ids1; do
    [ "$q" != "$first2" ] ||
        e2e_fail "g1 restarted under the same replica id got quorum id $q again (stale ring and store keys)"
done
failed0=$(count_lines "$TEST_TMPDIR/g0.out" '^step [0-9]+ failed')
[ "$failed0" -eq 0 ] ||
    e2e_fail "the survivor g0 lost $failed0 step(s): $(grep 'failed' "$TEST_TMPDIR/g0.out" | tail -n 3)"
[ "$failed2" -eq 0 ] ||
    e2e_fail "g1's restarted run lost $failed2 step(s) before its first commit: $(grep 'failed' "$out" | tail -n 3)"
echo "PASS ($TEST_NAME)"
