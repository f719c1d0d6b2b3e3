#!/bin/sh
# test_lighthouse_one.sh - L9: a real ftmpi-lighthouse with --min-replicas 1
# and one client forms a quorum of one (through the library's lighthouse
# client, then through lh_sim); the id stays when the membership does; SIGTERM
# stops the server cleanly with exit 0.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
T=$TEST_TMPDIR

start_lighthouse lh --min-replicas 1 --initial-quorum-id 0 --join-timeout-ms 1000 --log-level info
[ -z "$LH_HTTP" ] || die "http should be off by default, got '$LH_HTTP'"
grep -q '^ftmpi-lighthouse listening on 127\.0\.0\.1:[1-9][0-9]* (http off)$' "$T/lh.out" ||
    die "unexpected listening line: $(cat "$T/lh.out")"

# the library's client: a quorum of one, id 1
timeout 10 "$PROBE" quorum "$LH_ADDR" solo 0 5000 7 >"$T/q1.out" 2>&1 || die "quorum 1: $(cat "$T/q1.out")"
grep -q '^quorum 1 members 1 \[solo\] created [1-9][0-9]*$' "$T/q1.out" ||
    die "expected quorum 1 of [solo], got: $(cat "$T/q1.out")"
# same member (same incarnation 7), next step: same id (L6), answered at
# once (fast quorum)
t0=$(now_ms)
timeout 10 "$PROBE" quorum "$LH_ADDR" solo 1 5000 7 >"$T/q2.out" 2>&1 || die "quorum 2: $(cat "$T/q2.out")"
t1=$(now_ms)
grep -q '^quorum 1 members 1 \[solo\]' "$T/q2.out" || die "expected quorum 1 again, got: $(cat "$T/q2.out")"
[ $((t1 - t0)) -lt 900 ] || die "second quorum took $((t1 - t0)) ms (fast quorum expected)"
# the same replica id from another process (a restarted group, incarnation
# 8): a new id, so nobody meets it on the old quorum's ring or store keys
timeout 10 "$PROBE" quorum "$LH_ADDR" solo 2 5000 8 >"$T/q3.out" 2>&1 || die "quorum 3: $(cat "$T/q3.out")"
grep -q '^quorum 2 members 1 \[solo\]' "$T/q3.out" ||
    die "expected quorum 2 for a new incarnation of solo, got: $(cat "$T/q3.out")"
timeout 10 "$PROBE" heartbeat "$LH_ADDR" solo >"$T/hb.out" 2>&1 || die "heartbeat: $(cat "$T/hb.out")"

# lh_sim: one group, 3 rounds; a new member set -> a new id (3), then kept
timeout 20 "$SIM" --lighthouse "$LH_ADDR" --groups 1 --rounds 3 --step-ms 10 --strict \
    >"$T/sim.out" 2>"$T/sim.err" || die "lh_sim failed: $(cat "$T/sim.out" "$T/sim.err")"
[ "$(count_lines "$T/sim.out" '^g00 quorum 3 step [0-2] members 1 \[g00\] created [1-9]')" -eq 3 ] ||
    die "expected 3 quorums of [g00] with id 3: $(cat "$T/sim.out")"

# SIGTERM: clean stop, exit 0
kill -TERM "$LH_PID"
wait_pid_timeout "$LH_PID" 10 || die "lighthouse still runs 10 s after SIGTERM"
wait "$LH_PID"
rc=$?
[ "$rc" -eq 0 ] || die "lighthouse exit status $rc after SIGTERM"
file_has "$T/lh.err" 'stopped' || die "no 'stopped' line: $(cat "$T/lh.err")"
exit 0
