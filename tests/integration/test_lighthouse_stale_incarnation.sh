#!/bin/sh
# Issue 23 item 5: the lighthouse's liveness record keeps the live
# incarnation of a group.  g00 runs (lh_sim --liveness: an incarnation on
# its requests and heartbeats, as a manager sends); a second process claims
# g00 under another incarnation.  It is refused (naming both addresses), and
# when it is SIGKILLed its closed connections do not drop the live g00
# (before: its binding replaced g00's, and its close dropped g00 at once).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
T=$TEST_TMPDIR
start_lighthouse lh --min-replicas 1 --join-timeout-ms 60000 --heartbeat-timeout-ms 5000
SIMARGS="--liveness --step-ms 20 --heartbeat-ms 100 --timeout-ms 30000"
start_sim a --groups 1 $SIMARGS
A_PID=$SIM_PID
wait_until 20 file_has "$T/a.out" 'g00 quorum [0-9]+ step [0-9]+ members 1 ' || die "g00 got no quorum"
start_sim x --groups 1 $SIMARGS
X_PID=$SIM_PID
REFUSED="replica id 'g00' is held by a live process at [0-9.:]*; refused the one at [0-9.:]*"
_answered() { file_has "$T/lh.err" "$REFUSED" || file_has "$T/x.out" 'g00 quorum '; }
wait_until 20 _answered || die "the second claimant of g00 got no answer"
kill -9 "$X_PID"
n=$(grep -c 'g00 quorum ' "$T/a.out")
_more() { [ "$(grep -c 'g00 quorum ' "$T/a.out")" -ge $((n + 20)) ]; }
wait_until 30 _more || die "the live g00 got no more quorums after the second claimant died"
! file_has "$T/lh.err" "g00: its manager's connections closed" ||
    die "the second claimant's close dropped the live g00"
pid_alive "$A_PID" || die "the live g00's lh_sim died"
file_has "$T/lh.err" "$REFUSED" || die "the second claim of g00 was not refused"
! file_has "$T/x.out" 'g00 quorum ' || die "the second claimant of g00 took part in a quorum"
echo "PASS ($TEST_NAME)"
