#!/bin/sh
# A group frozen with SIGSTOP (a hung node: its sockets stay open, its
# heartbeats stop) is excluded once the lighthouse's heartbeat timeout
# passes; the other groups keep committing without it.  After SIGCONT it
# finds itself behind, heals and takes part again, without a restart.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init

e2e_lighthouse_start 1
e2e_groups_start "g0 g1 g2" 1 --steps 200 --sleep-ms 20 --print-every 5
e2e_wait_step g2 20 120
e2e_signal_group g2 STOP
stopped_at=$(e2e_step g2)
s0=$(e2e_step g0)
# a collective deadline (2 s) + the heartbeat timeout (1 s) + 20 steps;
# generous bounds: the test waits on progress, not on the clock
e2e_wait_step g0 $((s0 + 20)) 120
e2e_wait_step g1 $((s0 + 20)) 120
[ "$(e2e_step g2)" -eq "$stopped_at" ] || e2e_fail "g2 advanced while stopped"
e2e_log "g0/g1 went on from step $s0 to $(e2e_step g0) while g2 was frozen at $stopped_at"
grep -Eq "^step [0-9]+ loss .* participants 2\$" "$TEST_TMPDIR/g0.out" ||
    e2e_fail "g0 never committed a step with 2 participants"
e2e_signal_group g2 CONT
cont_at=$(e2e_step g0)
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
grep -q 'healed step' "$TEST_TMPDIR/g2.err" || e2e_fail "g2 rejoined without healing"
e2e_log "g2 rejoined at step $after"
echo "PASS ($TEST_NAME)"
