#!/bin/sh
# Asynchronous progress end to end (e2e_async.c): 3 groups of one rank run
# steps of 6 buckets of 8 MiB in flight at once, half the steps with an
# asynchronous quorum; every result is checked exactly and against
# FT_Allreduce.  A fourth group joins late and heals in an asynchronous
# quorum: it must end with the same state.  Then 3 new groups, one of which
# kills itself with 5 buckets in flight: every outstanding request of the
# survivors fails within one FTMPI_TIMEOUT_MS (e2e_async.c: plus slack for
# load, far below one timeout per request), that step does not commit, and
# the survivors go on to the last step.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
E2E_PROG=$top_builddir/tests/integration/e2e_async
[ -x "$E2E_PROG" ] || die "$E2E_PROG is not built"
E2E_RUN_FLAGS="--max-restarts 0"
FTMPI_TIMEOUT_MS=5000
export FTMPI_TIMEOUT_MS

# the last step group ID printed ("step N async|sync ...")
_async_step_ge() {
    _s=$(sed -n 's/^step \([0-9][0-9]*\) .*/\1/p' "$TEST_TMPDIR/$1.out" 2>/dev/null | tail -n 1)
    [ "${_s:-0}" -ge "$2" ]
}

# 1. results, several buckets, async quorum, a late group healing
# a3 must join while the others train: they are held (SIGSTOP) until a3
# finished FT_Init, and the lighthouse waits for every healthy group (join
# and heartbeat timeouts of 10 min, longer than the hold)
E2E_HB_TIMEOUT_MS=600000 E2E_JOIN_TIMEOUT_MS=600000 e2e_lighthouse_start 3
e2e_groups_start "a0 a1 a2" 1 --steps 12 --buckets 6 --elems 2097152 --sleep-ms 200
wait_until 120 _async_step_ge a0 3 || e2e_fail "a0 did not reach step 3"
e2e_group_start a3 1 --steps 12 --buckets 6 --elems 2097152 --sleep-ms 200
e2e_hold_groups "a0 a1 a2" 120 e2e_inited a3
e2e_wait_agents 300 a0 a1 a2 a3
for id in a0 a1 a2 a3; do
    grep -q '^PASS' "$TEST_TMPDIR/$id.out" || e2e_fail "group $id: no PASS line"
    e2e_log "$id: $(tail -n 1 "$TEST_TMPDIR/$id.out")"
done
grep -q ' async n=4 ' "$TEST_TMPDIR/a0.out" || e2e_fail "no asynchronous step with the 4 groups"
# a3's first quorum (asynchronous: step 0) healed it from a later step
grep -q '"event":"heal".*"step":0,"max_step":[1-9].*"error":0' "$TEST_TMPDIR/a3.events" ||
    e2e_fail "a3 did not heal in its first (asynchronous) quorum"
e2e_check_final 1 a0 a1 a2 a3
kill -KILL "$E2E_LH_PID" 2>/dev/null

# 2. a group killed with requests in flight
# The victim kills itself only in a quorum of all 3 groups.  The lighthouse
# waits for every healthy group (join timeout longer than the test): with
# the default 500 ms, a slow step (ASan, a loaded machine) left one group
# out of every quorum, the victim never fired and k0 ended alone.  The dead
# group drops out by its heartbeat (3 s, below the client's 5 s quorum timeout).
E2E_HB_TIMEOUT_MS=3000 E2E_JOIN_TIMEOUT_MS=600000 e2e_lighthouse_start 2
e2e_groups_start "k0 k1 k2" 1 --steps 10 --buckets 6 --elems 2097152 --sleep-ms 50 --victim k2 --kill-step 3
e2e_wait_agents 300 k0 k1
for id in k0 k1; do
    grep -q '^PASS' "$TEST_TMPDIR/$id.out" || e2e_fail "group $id: no PASS line"
    grep '^FAILSTEP' "$TEST_TMPDIR/$id.out" >/dev/null || e2e_fail "group $id: no failed step"
    e2e_log "$id: $(grep '^FAILSTEP' "$TEST_TMPDIR/$id.out" | head -n 1); $(tail -n 1 "$TEST_TMPDIR/$id.out")"
done
grep -q '^victim: killing' "$TEST_TMPDIR/k2.out" || e2e_fail "the victim did not kill itself"
e2e_check_final 1 k0 k1
kill -KILL "$E2E_LH_PID" 2>/dev/null
echo "PASS ($TEST_NAME)"
