#!/bin/sh
# test_flight_rounds.sh - ftmpi-flight groups dumps by round and cause and
# names every rank's place (issue 36 item 7), on event logs written here
# (the lines the recorder writes, src/obs/event_log.h "flight"): g0 and g2
# dump on one SIGUSR1 20 ms apart (g0 between calls, g2 in an allreduce),
# as does g3, which has made no call yet (a "flight_dump" header and no
# record), and a minute later g1 dumps on a failed step.  Before: one table paired
# g0's and g2's SIGUSR1 dumps with g1's failure dump without saying so, and
# named no rank between calls.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
FLIGHT=$top_builddir/ftmpi-flight
[ -x "$FLIGHT" ] || die "$FLIGHT is not built"
T=$TEST_TMPDIR

# flight LOG TS RID DUMP REASON SEQ OP STEP START END RESULT
flight() {
    printf '{"ts_ms":%s,"event":"flight","replica_id":"%s","group_rank":0,"step":%s,"dump":%s,"reason":"%s","seq":%s,"op":"%s","bytes":%s,"quorum_id":7,"start_ms":%s,"end_ms":%s,"result":"%s"}\n' \
        "$2" "$3" "$8" "$4" "$5" "$6" "$7" "$([ "$7" = allreduce ] && echo 4096 || echo 0)" \
        "$9" "${10}" "${11}" >>"$T/$1.events"
}
# header LOG TS RID DUMP REASON RECORDS STEP
header() {
    printf '{"ts_ms":%s,"event":"flight_dump","replica_id":"%s","group_rank":0,"step":%s,"dump":%s,"reason":"%s","records":%s}\n' \
        "$2" "$3" "$7" "$4" "$5" "$6" >>"$T/$1.events"
}
S=1795000000000
header g0 $S g0 1 sigusr1 3 5
header g3 $((S + 30)) g3 1 sigusr1 0 -1
# g0: SIGUSR1, its last call a commit that ended 15 ms before the dump
flight g0 $S g0 1 sigusr1 40 quorum 5 $((S - 60)) $((S - 50)) FT_SUCCESS
flight g0 $S g0 1 sigusr1 41 allreduce 5 $((S - 50)) $((S - 30)) FT_SUCCESS
flight g0 $S g0 1 sigusr1 42 commit 5 $((S - 30)) $((S - 15)) FT_SUCCESS
# g2: the same SIGUSR1 20 ms later, still in its allreduce
flight g2 $((S + 20)) g2 1 sigusr1 40 quorum 5 $((S - 58)) $((S - 52)) FT_SUCCESS
flight g2 $((S + 20)) g2 1 sigusr1 41 allreduce 5 $((S - 52)) -1 running
# g1: a minute later, the first error of step 7
S1=$((S + 60000))
flight g1 $S1 g1 1 error 50 quorum 7 $((S1 - 40)) $((S1 - 35)) FT_SUCCESS
flight g1 $S1 g1 1 error 51 allreduce 7 $((S1 - 35)) $((S1 - 1)) FT_ERR_PROC_FAILED

"$FLIGHT" "$T/g0.events" "$T/g1.events" "$T/g2.events" "$T/g3.events" >"$T/out" 2>&1 || die "ftmpi-flight failed: $(cat "$T/out")"
cat "$T/out"
want() { grep -q "$1" "$T/out" || die "ftmpi-flight does not say '$1'"; }
want '^round 1 of 2: sigusr1 dumps, 3 of 4 ranks'
want '^round 2 of 2: error dumps (a failed step 7), 1 of 4 ranks'
want '^g3/0 had made no call yet at its dump$'
want '^g0/0 is between calls: its last call, commit of step 5 (call #42, ok), ended 15 ms before its dump$'
want '^g2/0 is in allreduce (step 5, call #41) for 72 ms at its dump$'
want '^g1/0 has no dump in this round (round 2: error)$'
want '^g0/0 has no dump in this round (round 1: sigusr1)$'
want '^g1/0 is between calls: its last call, allreduce of step 7 (call #51, FT_ERR_PROC_FAILED)'
# the SIGUSR1 round's table has g0 and g2, not g1
sed -n '/^round 1/,/^round 2/p' "$T/out" | grep '^step ' | grep -q 'g0/0 *g2/0 *g3/0 *$' ||
    die "round 1's columns are not g0/0, g2/0 and g3/0"
# --last: the failure round only; --window 10: g0 alone in the first round
"$FLIGHT" --last "$T/g0.events" "$T/g1.events" "$T/g2.events" "$T/g3.events" >"$T/last" || die "--last failed"
grep -c '^round ' "$T/last" | grep -qx 1 && grep -q '^round 2 of 2: error' "$T/last" ||
    die "--last printed: $(grep '^round ' "$T/last")"
"$FLIGHT" --window 10 "$T/g0.events" "$T/g1.events" "$T/g2.events" "$T/g3.events" >"$T/w10" || die "--window 10 failed"
[ "$(grep -c '^round 1 of 3: sigusr1 dumps, 1 of 4' "$T/w10")" = 1 ] || die "--window 10: $(grep '^round ' "$T/w10")"
# a restarted process (dump numbers from 1 again) and a second failure of
# g1 at another step: rounds of their own
flight g1 $((S1 + 100)) g1 1 error 3 allreduce 9 $((S1 + 90)) $((S1 + 99)) FT_ERR_TIMEOUT
"$FLIGHT" "$T/g0.events" "$T/g1.events" "$T/g2.events" "$T/g3.events" >"$T/out3" || die "ftmpi-flight failed"
grep -q '^round 3 of 3: error dumps (a failed step 9), 1 of 4 ranks' "$T/out3" ||
    die "g1's second failure is not a round of its own: $(grep '^round ' "$T/out3")"
"$FLIGHT" --window x "$T/g0.events" >/dev/null 2>&1 && die "--window x accepted"
echo "PASS ($TEST_NAME)"
