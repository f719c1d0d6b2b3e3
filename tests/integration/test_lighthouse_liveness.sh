#!/bin/sh
# test_lighthouse_liveness.sh - failure detection by connection close
# (DESIGN section 6), with a 5 s heartbeat timeout:
#  1. a group whose process is SIGKILLed (its connections close) is left out
#     of the survivors' next quorum well under the heartbeat timeout
#     (measured from the kill to a survivor receiving the quorum without it);
#     the lighthouse logs it and the dashboard shows it dead at once;
#  2. the group restarted (a new incarnation) is back in a quorum, and the
#     history has its "dead" and "restarted" events;
#  3. a SIGSTOPped group closes nothing: the survivors' quorum without it
#     still waits for the heartbeat timeout.
# lh_sim --liveness sends an incarnation with its requests and heartbeats,
# as a group's manager does.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
T=$TEST_TMPDIR
HB_TIMEOUT=5000
CLOSE_BOUND=2000 # kill -> survivors' quorum; loaded 2-core machines included

start_lighthouse lh --min-replicas 1 --join-timeout-ms 60000 --heartbeat-timeout-ms $HB_TIMEOUT \
    --http-bind 127.0.0.1:0
SIMARGS="--liveness --step-ms 20 --heartbeat-ms 100 --timestamps --timeout-ms 30000"
start_sim a --groups 2 $SIMARGS
A_PID=$SIM_PID
start_sim b1 --groups 1 --first 2 $SIMARGS
B_PID=$SIM_PID

# first_after FILE LINE REGEX: the timestamp of the first line after line
# LINE of FILE that matches REGEX ("" if none)
first_after() {
    awk -v from="$2" -v re="$3" 'NR > from && $0 ~ re { gsub(/[][]/, "", $1); print $1; exit }' "$1"
}
lines() { wc -l <"$1" | tr -d ' '; }
has_after() { [ -n "$(first_after "$1" "$2" "$3")" ]; }

wait_until 20 file_has "$T/a.out" '^\[[0-9]+\] g00 quorum [0-9]+ step [0-9]+ members 3 ' ||
    die "no quorum of 3 within 20 s: $(tail -3 "$T/a.out")"

# ---- 1. SIGKILL: dropped at once -----------------------------------------
from=$(lines "$T/a.out")
t_kill=$(now_ms)
kill -9 "$B_PID"
wait_until 10 has_after "$T/a.out" "$from" ' g00 quorum [0-9]+ step [0-9]+ members 2 ' ||
    die "no quorum of 2 within 10 s of the kill"
t_q=$(first_after "$T/a.out" "$from" ' g00 quorum [0-9]+ step [0-9]+ members 2 ')
dt=$((t_q - t_kill))
echo "SIGKILL -> survivors' quorum without the group: $dt ms (heartbeat timeout $HB_TIMEOUT ms)"
[ "$dt" -lt "$CLOSE_BOUND" ] ||
    die "the quorum without the killed group took $dt ms (bound $CLOSE_BOUND ms): not detected by the closed connection"
file_has "$T/lh.err" "g02: its manager's connections closed" ||
    die "the lighthouse did not log the closed connections of g02"
http GET /status.json
grep -q '"kind":"dead","replica_id":"g02"' "$HTTP_BODY" || die "no dead event of g02 in /status.json"
grep -q '"replica_id":"g02","state":"dead"' "$HTTP_BODY" || die "g02 not shown dead in /status.json"
http GET /
grep -q 'class="g-dead"><td>g02<' "$HTTP_BODY" || die "the dashboard does not show g02 dead"

# ---- 2. restart: a new incarnation ---------------------------------------
from=$(lines "$T/a.out")
start_sim b2 --groups 1 --first 2 $SIMARGS
C_PID=$SIM_PID
wait_until 20 has_after "$T/a.out" "$from" ' g00 quorum [0-9]+ step [0-9]+ members 3 ' ||
    die "the restarted g02 is in no quorum within 20 s"
http GET /status.json
grep -q '"kind":"restarted","replica_id":"g02"' "$HTTP_BODY" || die "no restarted event of g02"

# ---- 3. SIGSTOP: nothing closes, the heartbeat timeout decides -------------
from=$(lines "$T/a.out")
t_stop=$(now_ms)
kill -STOP "$C_PID"
wait_until 20 has_after "$T/a.out" "$from" ' g00 quorum [0-9]+ step [0-9]+ members 2 ' ||
    die "no quorum of 2 within 20 s of the SIGSTOP"
t_q=$(first_after "$T/a.out" "$from" ' g00 quorum [0-9]+ step [0-9]+ members 2 ')
dt=$((t_q - t_stop))
echo "SIGSTOP -> survivors' quorum without the group: $dt ms"
[ "$dt" -ge $((HB_TIMEOUT - 500)) ] ||
    die "a stopped group was dropped after $dt ms, before the heartbeat timeout ($HB_TIMEOUT ms)"
kill -9 "$C_PID"
pid_alive "$A_PID" || die "the survivors' lh_sim died"
echo "ok"
