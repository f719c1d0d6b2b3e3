#!/bin/sh
# A group frozen with SIGSTOP (a hung node: its sockets stay open, its
# heartbeats stop) is excluded once the lighthouse's heartbeat timeout
# passes; the other groups keep committing without it.  After SIGCONT it
# finds itself behind, heals and takes part again, without a restart.
#
# Whatever the load (e2e_lib.sh, "holding the run"): the groups are held
# before step 20's allreduce and g2 is frozen there; g0 and g1 go on to
# step 60 and are held there until the woken g2 waits at the lighthouse for
# a quorum (the split-brain guard keeps it from one of g2 alone), so they
# cannot finish before g2 rejoins.  Under load the others had run on while
# the poller looked for g2's step 20.
E2E_JOIN_TIMEOUT_MS=120000
E2E_HB_TIMEOUT_MS=3000
FTMPI_QUORUM_TIMEOUT_MS=120000
export FTMPI_QUORUM_TIMEOUT_MS
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init

e2e_lighthouse_start 1
e2e_pace 0
e2e_groups_start "g0 g1 g2" 1 --steps 200 --sleep-ms 20 --print-every 5 --pace-file "$E2E_PACE"
e2e_gather 120 20 g0 g1 g2
e2e_wait_held 120 20 g0 g1 g2
e2e_signal_group g2 STOP
stopped_at=$(e2e_step g2)
s0=$(e2e_step g0)
e2e_pace 60
# a collective deadline (2 s) + the heartbeat timeout (3 s) + 40 steps;
# generous bounds: the test waits on progress, not on the clock
e2e_wait_held 120 60 g0 g1
[ "$(e2e_step g0)" -ge $((s0 + 20)) ] && [ "$(e2e_step g1)" -ge $((s0 + 20)) ] ||
    e2e_fail "g0/g1 did not go on 20 steps from $s0 (at $(e2e_step g0) and $(e2e_step g1))"
[ "$(e2e_step g2)" -eq "$stopped_at" ] || e2e_fail "g2 advanced while stopped"
e2e_log "g0/g1 went on from step $s0 to $(e2e_step g0) while g2 was frozen at $stopped_at"
grep -Eq "^step [0-9]+ loss .* participants 2\$" "$TEST_TMPDIR/g0.out" ||
    e2e_fail "g0 never committed a step with 2 participants"
# g2 may have healed when it joined at the start: count the heals after
heals=$(count_lines "$TEST_TMPDIR/g2.err" 'healed step')
e2e_signal_group g2 CONT
cont_at=$(e2e_step g0)
e2e_wait_rejoining 120 g2
e2e_pace 1000000
e2e_wait_agents 300 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_loss g0 g1 g2
e2e_check_final 1 g0 g1 g2
[ "$(e2e_starts g2)" -eq 1 ] || e2e_fail "g2 was restarted; it should have rejoined on its own"
# g2 committed again after SIGCONT, from a healed step beyond where it
# froze (a step it had in flight when frozen may still commit first)
after=$(awk -v s="$cont_at" '/^step [0-9]+ loss/ && $2 > s { print $2; exit }' "$TEST_TMPDIR/g2.out")
[ -n "$after" ] ||
    e2e_fail "g2 did not rejoin at the others' step after SIGCONT (no step above $cont_at, the others' step then)"
[ "$(count_lines "$TEST_TMPDIR/g2.err" 'healed step')" -gt "$heals" ] ||
    e2e_fail "g2 rejoined without healing"
e2e_log "g2 rejoined at step $after"
echo "PASS ($TEST_NAME)"
