#!/bin/sh
# DiLoCo (ft_sgd --diloco 10), a group SIGKILLed inside a sync: g1's rank 0
# kills itself in sync 6, after the sync's quorum, while g0 and g2 reduce
# with it.  That sync does not commit in the survivors (it costs that sync
# only: they commit the next one without g1); ftmpi-run restarts g1, it
# joins a later sync, heals the global parameters and the outer momentum
# (registered state) and takes part again.  At the end every rank of every
# group holds bitwise the same parameters and the loss went down.
# groups wait for each other at a sync (a slow group is not left out of it)
: "${E2E_JOIN_TIMEOUT_MS:=5000}"
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init

e2e_lighthouse_start 2
flags="--diloco 10 --steps 600 --sleep-ms 20 --print-every 1"
e2e_group_start g0 1 $flags
e2e_group_start g1 1 $flags --die-at-step 6 --die-where compute
e2e_group_start g2 1 $flags
e2e_wait_restart g1 2 60
e2e_log "g1 restarted"
e2e_wait_agents 180 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_final 1 g0 g1 g2
e2e_check_loss g0 g1 g2

grep -q 'SIGKILL to myself at sync 6 (in the sync, after its quorum)' "$TEST_TMPDIR/g1.err" ||
    e2e_fail "g1 did not die inside sync 6"
for g in g0 g2; do
    f=$TEST_TMPDIR/$g.out
    # sync 6 (FT_Step 6 -> 7) failed; the next one committed without g1
    grep -q '^step 6 failed: ' "$f" || e2e_fail "$g: sync 6, in which g1 died, did not fail"
    awk '/^step 6 failed/ { f = 1 } f && /^step 7 loss/ { ok = 1; exit } END { exit !ok }' "$f" ||
        e2e_fail "$g: no committed sync after the failed one"
    nfail=$(grep -c ' failed: ' "$f")
    e2e_log "$g: $nfail failed sync(s): $(grep ' failed: ' "$f" | tr '\n' ';')"
    [ "$(e2e_failures $g)" -ge 1 ] || e2e_fail "$g reports no failure survived"
done
# the restarted g1 healed (outer line of its second run) at a step past 6
first=$(e2e_first_step_of_run g1 2)
[ -n "$first" ] && [ "$first" -gt 6 ] || e2e_fail "g1's second run began at step '$first'"
healed=$(grep '^outer ' "$TEST_TMPDIR/g1.out" | tail -n 1 | awk '{ print $6 }')
[ "${healed:-0}" -ge 1 ] || e2e_fail "g1's second run did not heal: $(grep '^outer ' "$TEST_TMPDIR/g1.out")"
final=$(sed -n 's/^final loss \([0-9.]*\)/\1/p' "$TEST_TMPDIR/g0.out")
awk -v f="$final" 'BEGIN { exit !(f < 0.2) }' || e2e_fail "final loss $final is not sane"
e2e_log "g1 rejoined at step $first (healed); final loss $final"
echo "PASS ($TEST_NAME)"
