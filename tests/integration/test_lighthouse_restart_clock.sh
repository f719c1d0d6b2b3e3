#!/bin/sh
# A lighthouse restarted on a host whose clock is behind must not issue a
# quorum id that the running groups already used (a live slice's ring and
# store keys are named by it).  The first lighthouse seeds its ids from the
# wall clock (the default); the second one is started on the same port with
# --initial-quorum-id 1, which is what its wall-clock seed would be with a
# clock 55 years behind.  The groups report the highest quorum id they saw
# (max_quorum_id in every quorum request and heartbeat), so every id the
# second lighthouse issues is above every id of the first.
#
# Asserts: each group's printed quorum ids never decrease over the run, the
# ids after the restart are all above the ids before it, training resumed
# (steps committed under the second lighthouse), states bitwise equal.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init

e2e_lighthouse_start 1
for g in g0 g1; do
    e2e_group_start $g 1 --steps 80 --sleep-ms 20 --print-every 1
done
e2e_wait_step g0 20 40
e2e_lighthouse_kill
sleep 1 # the step in flight ends; no step commits without a lighthouse
ids() { awk '/^step [0-9]+ loss/ { print $6 }' "$TEST_TMPDIR/$1.out"; }
before=$( (ids g0; ids g1) | sort -n | tail -n 1)
n0=$(wc -l <"$TEST_TMPDIR/g0.out")
n1=$(wc -l <"$TEST_TMPDIR/g1.out")
[ -n "$before" ] || e2e_fail "no quorum id printed before the restart"
e2e_lighthouse_start 1 "$E2E_LH_PORT" --initial-quorum-id 1
e2e_wait_agents 90 g0 g1
e2e_check_states g0 g1

after=$( (tail -n +$((n0 + 1)) "$TEST_TMPDIR/g0.out"; tail -n +$((n1 + 1)) "$TEST_TMPDIR/g1.out") |
    awk '/^step [0-9]+ loss/ { print $6 }' | sort -n)
[ -n "$after" ] || e2e_fail "no step committed under the restarted lighthouse"
low=$(echo "$after" | head -n 1)
e2e_log "highest quorum id before the restart $before; ids after it $low .. $(echo "$after" | tail -n 1)"
[ "$low" -gt "$before" ] ||
    e2e_fail "the restarted lighthouse issued quorum id $low, not above $before seen before it"
for g in g0 g1; do
    ids $g | awk -v g=$g 'NR > 1 && $1 < prev { print g ": quorum id " prev " then " $1; bad = 1 }
        { prev = $1 } END { exit bad }' || e2e_fail "quorum ids went back"
done
echo "PASS ($TEST_NAME)"
