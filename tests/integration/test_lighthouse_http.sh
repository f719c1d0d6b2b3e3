#!/bin/sh
# test_lighthouse_http.sh - the lighthouse's HTTP side against real simulated
# groups: GET / names every quorum member (ids HTML-escaped) and marks a
# member behind the max step; /status.json escapes strings; /metrics passes
# the Prometheus text format check; 404 and 405 where due; POST kill is
# refused (401) without the token, 404 for an unknown id, and with the token
# reaches the group's manager, which drops out of the next quorum.  With the
# token (the job secret) the addresses are shown only to a request that
# carries it, a cross-site POST (foreign Origin) is refused even with it, and
# the simulated groups hold the secret (FTMPI_TOKEN_FILE) for their RPCs.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
T=$TEST_TMPDIR
PROMCHECK=$top_srcdir/tests/integration/lh_promcheck.awk
WEIRD='<i>x&y"00'                 # a replica id that needs escaping
WEIRD_HTML='&lt;i&gt;x&amp;y&quot;00'
WEIRD_URL='%3Ci%3Ex%26y%2200'
(umask 077 && printf '  s3cret-token-7f3a9c2e41b8d6057e1f \n' >"$T/token")
FTMPI_TOKEN_FILE=$T/token
export FTMPI_TOKEN_FILE
AUTH='Authorization: Bearer s3cret-token-7f3a9c2e41b8d6057e1f'

start_lighthouse lh --min-replicas 2 --http-bind 127.0.0.1:0 --token-file "$T/token" \
    --join-timeout-ms 300 --heartbeat-timeout-ms 1500 --initial-quorum-id 0
[ -n "$LH_HTTP" ] || die "no http address: $(cat "$T/lh.out")"
start_sim a --groups 3 --step-ms 100 --rejoin-ms 1500 --no-heal
start_sim w --groups 1 --prefix '<i>x&y"' --step-ms 100
four() { file_has "$T/a.out" "^g00 quorum [0-9]+ step [0-9]+ members 4 \\[<i>x&y\"00 g00 g01 g02\\]"; }
wait_until 15 four || die "no quorum of 4: $(tail -3 "$T/a.out")"

# ---- GET /: every member named, the weird id escaped, the waiting reason
http GET /
[ "$HTTP_CODE" = 200 ] || die "GET /: $HTTP_CODE"
for m in g00 g01 g02 "$WEIRD_HTML"; do
    grep -qF "<td>$m</td><td>yes</td>" "$HTTP_BODY" || die "GET / does not list quorum member $m"
done
! grep -qF "$WEIRD" "$HTTP_BODY" || die "GET / shows the replica id unescaped"
grep -q 'id="quorum-id">[0-9][0-9]*<' "$HTTP_BODY" || die "GET / shows no quorum id"
grep -q 'Next quorum: <span class="reason">[^<]' "$HTTP_BODY" || die "GET / shows no waiting reason"
grep -q 'http-equiv="refresh"' "$HTTP_BODY" || die "GET / does not refresh itself"
http GET '/index.html'
[ "$HTTP_CODE" = 200 ] || die "GET /index.html: $HTTP_CODE"

# ---- /status.json: addresses only with the token
http GET /status.json
[ "$HTTP_CODE" = 200 ] || die "GET /status.json without the token: $HTTP_CODE"
! grep -q '127\.0\.0\.1' "$HTTP_BODY" || die "status.json shows addresses without the token"
grep -qF '"addresses_hidden":true' "$HTTP_BODY" || die "status.json does not say the addresses are hidden"
http GET /
! grep -q '127\.0\.0\.1' "$HTTP_BODY" || die "GET / shows addresses without the token"
grep -q 'onclick="killReplica' "$HTTP_BODY" || die "GET / without the token lost its kill buttons"
http GET /status.json -H "$AUTH"
[ "$HTTP_CODE" = 200 ] || die "GET /status.json: $HTTP_CODE"
grep -qF '"addresses_hidden":false' "$HTTP_BODY" || die "status.json hides the addresses from the token"
for m in g00 g01 g02; do
    grep -qF "{\"replica_id\":\"$m\",\"address\":\"127.0.0.1:" "$HTTP_BODY" || die "status.json lacks $m"
done
grep -qF '"replica_id":"<i>x&y\"00"' "$HTTP_BODY" || die "status.json: weird id not JSON-escaped"
grep -q '^{"quorum_id":[0-9][0-9]*,"quorum_created_ms":[1-9]' "$HTTP_BODY" || die "status.json head"
grep -q '"in_quorum":true' "$HTTP_BODY" || die "status.json: no member in quorum"
tail -c 4 "$HTTP_BODY" | grep -q '^]}}$' || die "status.json does not end with the history's ]}}"
grep -q '"history":{"events_total":[1-9][0-9]*,"events":\[' "$HTTP_BODY" || die "status.json: no history"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$HTTP_BODY" ||
        die "status.json is not valid JSON"
fi

# ---- /metrics: format and content
http GET /metrics
[ "$HTTP_CODE" = 200 ] || die "GET /metrics: $HTTP_CODE"
awk -f "$PROMCHECK" "$HTTP_BODY" >"$T/promcheck.out" ||
    die "/metrics is not valid Prometheus text: $(cat "$T/promcheck.out")"
for m in ftmpi_lighthouse_quorums_total ftmpi_lighthouse_quorum_id ftmpi_lighthouse_members \
    ftmpi_lighthouse_heartbeats_total ftmpi_lighthouse_quorum_requests_total \
    ftmpi_lighthouse_rejected_frames_total ftmpi_lighthouse_quorum_formation_seconds; do
    grep -q "^# HELP $m " "$HTTP_BODY" || die "/metrics: no HELP for $m"
    grep -q "^# TYPE $m " "$HTTP_BODY" || die "/metrics: no TYPE for $m"
done
grep -q '^# TYPE ftmpi_lighthouse_quorum_formation_seconds histogram$' "$HTTP_BODY" || die "histogram type"
grep -q '^ftmpi_lighthouse_quorum_formation_seconds_bucket{le="+Inf"} [1-9]' "$HTTP_BODY" ||
    die "no formation observations"
for r in garbage oversize truncated unknown_method decode auth; do
    grep -q "^ftmpi_lighthouse_rejected_frames_total{reason=\"$r\"} 0\$" "$HTTP_BODY" ||
        die "/metrics: no rejected_frames_total for $r"
done
[ "$(metric ftmpi_lighthouse_members)" = 4 ] || die "ftmpi_lighthouse_members is not 4"
# the groups ask again every 100 ms, so more quorums follow the first one
# (which may already have held all 4 when both simulators joined in time)
two_quorums() { [ "$(metric ftmpi_lighthouse_quorums_total)" -ge 2 ]; }
wait_until 10 two_quorums ||
    die "ftmpi_lighthouse_quorums_total stays at $(metric ftmpi_lighthouse_quorums_total)"

# ---- 404 / 405 / 401
expect() { # CODE METHOD PATH [ARGS]
    _c=$1
    shift
    http "$@"
    [ "$HTTP_CODE" = "$_c" ] || die "$*: HTTP $HTTP_CODE, expected $_c"
}
expect 404 GET /nope
expect 404 GET /replica/g00
expect 404 POST /replica//kill -H "$AUTH"
expect 405 POST /metrics
expect 405 DELETE /
expect 405 PUT /status.json
expect 405 GET /replica/g00/kill
expect 401 POST /replica/g00/kill
expect 401 POST /replica/g00/kill -H 'Authorization: Bearer wrong'
expect 401 POST /replica/g00/kill -H 'Authorization: Bearer s3cret-token-7f3a9c2e41b8d6057e1f-and-more'
expect 401 POST /replica/g00/kill -H 'Authorization: s3cret-token-7f3a9c2e41b8d6057e1f'
expect 404 POST /replica/nosuchgroup/kill -H "$AUTH"
# CSRF: a page of another site cannot make a browser kill, token or not;
# a token in the query string, a cookie or the body counts for nothing
expect 403 POST /replica/g00/kill -H "$AUTH" -H 'Origin: http://evil.example'
expect 401 POST '/replica/g00/kill?token=s3cret-token-7f3a9c2e41b8d6057e1f'
expect 401 POST /replica/g00/kill -H 'Cookie: token=s3cret-token-7f3a9c2e41b8d6057e1f'
expect 401 POST /replica/g00/kill -d 'token=s3cret-token-7f3a9c2e41b8d6057e1f'
expect 404 POST /replica/nosuchgroup/kill -H "$AUTH" -H "Origin: http://$LH_HTTP"
sleep 0.3
! grep -q 'drops out' "$T/a.out" || die "a refused kill reached a group: $(grep 'drops out' "$T/a.out")"

# ---- kill g02 with the token: it drops out, the next quorum excludes it;
# it rejoins at step 0 and the dashboard marks it behind
expect 200 POST /replica/g02/kill -H "$AUTH" -d 'test kill'
grep -q 'kill sent to g02' "$HTTP_BODY" || die "kill reply: $(cat "$HTTP_BODY")"
wait_until 10 file_has "$T/a.out" '^g02 drops out killed by the lighthouse: test kill$' ||
    die "g02 did not receive the kill: $(tail -3 "$T/a.out")"
without_g02() { file_has "$T/a.out" "^g00 quorum [0-9]+ step [0-9]+ members 3 \\[<i>x&y\"00 g00 g01\\]"; }
wait_until 10 without_g02 || die "no quorum without g02: $(tail -3 "$T/a.out")"
wait_until 10 file_has "$T/a.out" '^g02 rejoins at step 0$' || die "g02 did not rejoin"
behind() {
    http GET /
    grep -qF '<tr class="behind"><td>g02</td><td>yes</td><td class="step">' "$HTTP_BODY" &&
        grep -qF '(behind)' "$HTTP_BODY"
}
wait_until 10 behind || die "GET / does not mark g02 behind: $(grep g02 "$HTTP_BODY")"

# ---- the id that needs escaping, killed through its URL-encoded form
expect 200 POST "/replica/$WEIRD_URL/kill" -H "$AUTH"
wait_until 10 file_has "$T/w.out" 'drops out killed by the lighthouse' ||
    die "the escaped id did not receive the kill: $(tail -3 "$T/w.out")"
# ---- a client without the secret is refused before decoding, and counted
FTMPI_TOKEN_FILE= timeout 10 "$PROBE" heartbeat "$LH_ADDR" intruder >"$T/probe.out" 2>&1 &&
    die "a heartbeat without the secret was accepted"
grep -q 'authentication failed' "$T/probe.out" || die "probe: $(cat "$T/probe.out")"
auth_counted() { [ "$(metric 'ftmpi_lighthouse_rejected_frames_total{reason="auth"}')" -ge 1 ]; }
wait_until 5 auth_counted || die "/metrics did not count the refused connection"
pid_alive "$LH_PID" || die "lighthouse died"
exit 0
