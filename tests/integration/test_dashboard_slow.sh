#!/bin/sh
# Issue 35 item 3: slow HTTP clients of one address do not blind the
# dashboard.  70 connections from 127.0.0.2 that send half a request head
# and stall, each opened again at once when the lighthouse closes it (a
# slowloris client), for 40 s:
#  1. /metrics from another address (127.0.0.1) is answered every time
#     meanwhile (before: the 64 slots were all theirs until the 15 s cut,
#     and again at once after it: lh_probe gave up after 5 s);
#  2. the lighthouse says once that 127.0.0.2 is over its share (8), and
#     answers its extra connections 503;
#  3. a connection that sends half a head is closed by the head deadline
#     (5 s), not the 15 s one;
#  4. once the slow client is gone, its address is served again.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
T=$TEST_TMPDIR
start_lighthouse lh --min-replicas 1 --http-bind 127.0.0.1:0 --log-level debug
[ -n "$LH_HTTP" ] || die "no http address"
"$PROBE" http "$LH_HTTP" GET /metrics -b 127.0.0.2 >/dev/null 2>&1 ||
    skip "cannot connect from 127.0.0.2 (loopback beyond 127.0.0.1)"

"$PROBE" stall "$LH_HTTP" 70 40000 127.0.0.2 reopen >"$T/stall.out" 2>&1 &
STALL=$!
register_pid $STALL
wait_until 30 file_has "$T/stall.out" '^(opened 70|answered)' ||
    die "the slow client could not open its connections: $(cat "$T/stall.out")"
i=0
while [ $i -lt 6 ]; do # about 20 s of the attack, past the first deadlines
    http GET /metrics
    [ "$HTTP_CODE" = 200 ] || die "GET /metrics from 127.0.0.1 under the slow client: $HTTP_CODE"
    grep -q '^ftmpi_lighthouse_quorums_total ' "$HTTP_BODY" || die "GET /metrics: no metrics"
    i=$((i + 1))
    sleep 3
done
echo "6 scrapes from 127.0.0.1 answered while 127.0.0.2 stalled"
wait_pid_timeout $STALL 90 || die "the slow client did not end"
cat "$T/stall.out" | tail -3
grep -q 'http: 127.0.0.2 holds 8 connections, its share of the 64' "$T/lh.err" ||
    die "no warning about 127.0.0.2's share: $(grep 'http:' "$T/lh.err" | head -5)"
grep -q '^answered: HTTP/1.1 503' "$T/stall.out" ||
    die "the slow client's extra connections were not answered 503"

cuts=$(grep -c 'sent no whole request within 5000 ms' "$T/lh.err")
out=$("$PROBE" stall "$LH_HTTP" 1 60000 127.0.0.3 once) || die "lh_probe stall failed: $out"
echo "$out"
echo "$out" | grep -q "closed 1 by the server" || die "a stalled head was never closed: $out"
[ "$(grep -c 'sent no whole request within 5000 ms' "$T/lh.err")" -gt "$cuts" ] ||
    die "the stalled head was not closed by the head deadline"

out=$("$PROBE" http "$LH_HTTP" GET /metrics -b 127.0.0.2) ||
    die "127.0.0.2 not served after its slow client ended: $out"
echo "$out" | head -1 | grep -q '^HTTP 200' || die "127.0.0.2: $(echo "$out" | head -1)"
echo "PASS ($TEST_NAME)"
