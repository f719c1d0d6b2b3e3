#!/bin/sh
# LocalSGD (ft_sgd --localsgd 10), a group SIGKILLed between syncs: g1's
# rank 0 kills itself halfway through the inner steps after sync 6
# committed.  The survivors' next sync leaves it out and commits (no sync
# fails: the lighthouse dropped g1 when its connection closed); ftmpi-run
# restarts g1, it joins a later sync, heals the global parameters and
# takes part again.  At the end every rank of every group holds bitwise the
# same parameters and the loss went down.
# groups wait for each other at a sync (a slow group is not left out of it)
: "${E2E_JOIN_TIMEOUT_MS:=5000}"
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init

e2e_lighthouse_start 2
flags="--localsgd 10 --steps 600 --sleep-ms 20 --print-every 1"
e2e_group_start g0 2 $flags
e2e_group_start g1 2 $flags --die-at-step 6 --die-where inner
e2e_group_start g2 2 $flags
e2e_wait_restart g1 2 60
e2e_log "g1 restarted"
e2e_wait_agents 180 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_final 2 g0 g1 g2
e2e_check_loss g0 g1 g2

grep -q 'SIGKILL to myself at sync 6 (between syncs)' "$TEST_TMPDIR/g1.err" ||
    e2e_fail "g1 did not die between syncs 6 and 7"
for g in g0 g2; do
    f=$TEST_TMPDIR/$g.out
    # a sync after the kill committed with 2 participants
    awk '/^step ([7-9]|[1-9][0-9]) loss .* participants 2$/ { ok = 1 } END { exit !ok }' "$f" ||
        e2e_fail "$g: no sync committed without g1"
    e2e_log "$g: $(grep -c ' failed: ' "$f") failed sync(s)"
done
first=$(e2e_first_step_of_run g1 2)
[ -n "$first" ] && [ "$first" -gt 6 ] || e2e_fail "g1's second run began at step '$first'"
healed=$(grep '^outer ' "$TEST_TMPDIR/g1.out" | tail -n 1 | awk '{ print $6 }')
[ "${healed:-0}" -ge 1 ] || e2e_fail "g1's second run did not heal: $(grep '^outer ' "$TEST_TMPDIR/g1.out")"
final=$(sed -n 's/^final loss \([0-9.]*\)/\1/p' "$TEST_TMPDIR/g0.out")
awk -v f="$final" 'BEGIN { exit !(f < 0.2) }' || e2e_fail "final loss $final is not sane"
e2e_log "g1 rejoined at step $first (healed); final loss $final"
echo "PASS ($TEST_NAME)"
