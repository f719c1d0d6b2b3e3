#!/bin/sh
# ft_sgd on the baby-tcp data plane (FTMPI_BACKEND=baby-tcp: the tcp ring in
# an ftmpi-baby child per rank and quorum): 3 groups, one SIGKILLed mid-run
# and restarted by its agent; it heals and rejoins, every rank of every group
# ends with the same step and bytes, and the survivors' children were
# respawned for each new quorum (issue 12 item 5).
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
BABY=$top_builddir/ftmpi-baby
[ -x "$BABY" ] || skip "$BABY not built"
FTMPI_BACKEND=baby-tcp FTMPI_BABY_PATH=$BABY
export FTMPI_BACKEND FTMPI_BABY_PATH

e2e_lighthouse_start 1
for g in g0 g1 g2; do
    e2e_group_start $g 1 --steps 120 --sleep-ms 25 --print-every 5
done
e2e_wait_step g1 20 40
# the children run: one ftmpi-baby per rank
pgrep -f "$BABY" >/dev/null || e2e_fail "no ftmpi-baby child is running"
e2e_kill_group g1
killed_at=$(e2e_step g1)
s0=$(e2e_step g0)
e2e_wait_step g0 $((s0 + 5)) 20
e2e_wait_restart g1 2 20
e2e_wait_agents 90 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_loss g0 g1 g2
e2e_check_final 1 g0 g1 g2
first=$(e2e_first_step_of_run g1 2)
[ -n "$first" ] || e2e_fail "g1's restarted run committed no step"
[ "$first" -gt "$killed_at" ] || e2e_fail "g1's restarted run began at step $first (killed at $killed_at): it did not heal"
grep -q "backend baby-tcp" "$(e2e_err g0)" 2>/dev/null || grep -rq "baby-tcp" "$TEST_TMPDIR" ||
    e2e_fail "no log line says the baby-tcp backend ran"
# no child outlives its parent
sleep 1
if pgrep -f "$BABY" >/dev/null; then
    e2e_fail "ftmpi-baby children left after every group ended: $(pgrep -af "$BABY" | head -3)"
fi
e2e_log "g1 killed at step $killed_at, rejoined at step $first on baby-tcp"
echo "PASS ($TEST_NAME)"
