#!/bin/sh
# test_lighthouse_badinput.sh - bad RPC input against a running lighthouse:
# garbage bytes, an oversized frame, a truncated frame, an unknown method and
# a payload that does not decode.  Each gets an error reply and/or a closed
# connection (lh_probe checks which), the lighthouse keeps serving a normal
# client throughout, and /metrics counts each reject reason once.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
T=$TEST_TMPDIR
CAP=65536

start_lighthouse lh --min-replicas 1 --max-frame-bytes $CAP --http-bind 127.0.0.1:0 \
    --join-timeout-ms 200 --heartbeat-timeout-ms 2000 --initial-quorum-id 0
start_sim steady --groups 1 --prefix steady --step-ms 20 --strict
STEADY=$SIM_PID
wait_until 10 file_has "$T/steady.out" '^steady00 quorum 1 ' || die "the normal client got no quorum"

quorums() { count_lines "$T/steady.out" '^steady00 quorum '; }
# after each bad frame: the lighthouse lives and the normal client gets 3 more quorums
more_quorums() { [ "$(quorums)" -ge $(($1 + 3)) ]; }

for kind in garbage oversize truncated unknown undecodable; do
    before=$(quorums)
    timeout 15 "$PROBE" frame "$LH_ADDR" $kind $CAP >"$T/$kind.out" 2>&1 ||
        die "$kind: not answered as expected: $(cat "$T/$kind.out")"
    pid_alive "$LH_PID" || die "lighthouse died after $kind: $(tail -5 "$T/lh.err")"
    wait_until 10 more_quorums "$before" ||
        die "normal client stalled after $kind ($(quorums) quorums): $(tail -3 "$T/steady.out")"
done
grep -q 'garbage: error reply status -24' "$T/garbage.out" || die "garbage: $(cat "$T/garbage.out")"
grep -q 'garbage: connection closed' "$T/garbage.out" || die "garbage: $(cat "$T/garbage.out")"
grep -q 'oversize: error reply status -24' "$T/oversize.out" || die "oversize: $(cat "$T/oversize.out")"
grep -q 'oversize: connection closed' "$T/oversize.out" || die "oversize: $(cat "$T/oversize.out")"
grep -q 'truncated: connection closed' "$T/truncated.out" || die "truncated: $(cat "$T/truncated.out")"
grep -q 'unknown: error reply status -2 ' "$T/unknown.out" || die "unknown: $(cat "$T/unknown.out")"
grep -q 'unknown: connection still serves' "$T/unknown.out" || die "unknown: $(cat "$T/unknown.out")"
grep -q 'undecodable: error reply status -24' "$T/undecodable.out" ||
    die "undecodable: $(cat "$T/undecodable.out")"
grep -q 'undecodable: connection still serves' "$T/undecodable.out" ||
    die "undecodable: $(cat "$T/undecodable.out")"

# every reason counted exactly once (the counters reach /metrics within a tick)
counted() {
    http GET /metrics
    for r in garbage oversize truncated unknown_method decode; do
        grep -q "^ftmpi_lighthouse_rejected_frames_total{reason=\"$r\"} 1\$" "$HTTP_BODY" || return 1
    done
}
wait_until 5 counted || die "reject counters in /metrics: $(grep rejected "$HTTP_BODY")"

# the normal client saw no error at all (--strict: exit 1 otherwise)
kill -TERM "$STEADY"
wait_pid_timeout "$STEADY" 10 || die "lh_sim did not stop on SIGTERM"
wait "$STEADY"
rc=$?
[ "$rc" -eq 0 ] || die "the normal client saw errors (exit $rc): $(grep error "$T/steady.out")"
pid_alive "$LH_PID" || die "lighthouse died"
exit 0
