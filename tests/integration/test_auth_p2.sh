#!/bin/sh
# test_auth_p2.sh - P2 (issue 11): with a job secret configured, a process
# without it cannot join a quorum, finalize or kill a group, read its state
# (HEAL_METADATA / HEAL_FETCH) or read, write or delete its store; the HTTP
# kill needs the token; and a run where every group has the secret
# (FTMPI_TOKEN_FILE, the lighthouse's --token-file) trains as usual: two
# groups of ft_sgd, real processes on 127.0.0.1, attacked while they train,
# end with equal states and were never restarted.  Positive controls: the
# same probe with the secret does reach the handlers.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
PROBE=$top_builddir/tests/integration/lh_probe
[ -x "$PROBE" ] || skip "$PROBE not built"
need_cmd timeout
T=$TEST_TMPDIR

(umask 077 && printf 'p2-job-secret-7f3a9c2e41b8d6057e1f\n' >"$T/token" && printf 'a-guess-7f3a9c2e41b8d6057e1f\n' >"$T/wrong")

# a token file others can read, or an empty one, is refused with its name
printf 'shared\n' >"$T/world" && chmod 644 "$T/world"
: >"$T/empty" && chmod 600 "$T/empty"
for f in world empty; do
    FTMPI_TOKEN_FILE=$T/$f timeout 10 "$E2E_RUN_BIN" --replica-id x -- true 2>"$T/run.err"
    [ $? -eq 2 ] || e2e_fail "ftmpi-run took the $f token file"
    grep -qF "$T/$f" "$T/run.err" || e2e_fail "ftmpi-run does not name the file: $(cat "$T/run.err")"
    timeout 10 "$E2E_LH_BIN" --min-replicas 1 --token-file "$T/$f" 2>"$T/lh.err" >/dev/null
    [ $? -eq 2 ] || e2e_fail "the lighthouse took the $f token file"
    grep -qF "$T/$f" "$T/lh.err" || e2e_fail "the lighthouse does not name the file: $(cat "$T/lh.err")"
done

FTMPI_TOKEN_FILE=$T/token
export FTMPI_TOKEN_FILE
AUTH='Authorization: Bearer p2-job-secret-7f3a9c2e41b8d6057e1f'
STEPS=300

e2e_lighthouse_start 2 0 --token-file "$T/token"
LH=$FTMPI_LIGHTHOUSE
# the groups train up to step STEPS - 10 and wait there (ft_sgd --pace-file)
# until the attacks and the positive controls are done: under ASan at a
# high load they once finished first, and g0's manager was gone for the
# controls ("could not connect")
e2e_pace $((STEPS - 10))
e2e_groups_start "g0 g1" 1 --steps $STEPS --sleep-ms 20 --print-every 10 --pace-file "$E2E_PACE"
e2e_wait_step g0 20 120

# the group's manager (rank server: kill, store, heal) from status.json,
# which shows addresses only with the token
timeout 10 "$PROBE" http "$E2E_LH_HTTP" GET /status.json >"$T/status.nokey" ||
    e2e_fail "no /status.json"
! grep -q '"address":"127' "$T/status.nokey" || e2e_fail "status.json shows addresses without the token"
timeout 10 "$PROBE" http "$E2E_LH_HTTP" GET /status.json -H "$AUTH" >"$T/status.json" ||
    e2e_fail "no /status.json"
ADDR=$(tr ',' '\n' <"$T/status.json" | sed -n '/"replica_id":"g0"/{n;s/.*"address":"\([^"]*\)".*/\1/p;}' | head -n 1)
[ -n "$ADDR" ] || e2e_fail "no address of g0 in $(cat "$T/status.json")"
e2e_log "g0's manager at $ADDR"

# attack CMD...: the probe without the secret, then with a wrong one: each
# must be refused as unauthenticated (exit 3 for `call`, the message for
# the library clients)
attack() {
    for _tf in "" "$T/wrong"; do
        FTMPI_TOKEN_FILE=$_tf timeout 10 "$PROBE" "$@" >"$T/attack.out" 2>&1
        _rc=$?
        [ "$_rc" -ne 0 ] || e2e_fail "'$*' succeeded without the secret (${_tf:-none}): $(cat "$T/attack.out")"
        grep -q 'authentication failed' "$T/attack.out" ||
            e2e_fail "'$*' (secret ${_tf:-none}) failed, but not for authentication: $(cat "$T/attack.out")"
        [ "$1" != call ] || [ "$_rc" -eq 3 ] || e2e_fail "'$*': exit $_rc, expected 3"
    done
    e2e_log "refused without the secret: $*"
}
attack quorum "$LH" fake 1000000 2000
attack heartbeat "$LH" fake
attack call "$LH" finalize g0
attack call "$ADDR" kill "intruder"
attack call "$ADDR" heal_metadata 0
attack call "$ADDR" heal_fetch w 0
attack call "$ADDR" store_set p2/key intruder-value
attack call "$ADDR" store_get p2/key
attack call "$ADDR" store_delete ""

# HTTP kill: no token, a wrong one, the token outside the header
for h in "" "Authorization: Bearer a-guess-7f3a9c2e41b8d6057e1f"; do
    timeout 10 "$PROBE" http "$E2E_LH_HTTP" POST /replica/g0/kill ${h:+-H "$h"} >"$T/http.out" ||
        e2e_fail "no HTTP response"
    head -n 1 "$T/http.out" | grep -q '^HTTP 401' || e2e_fail "HTTP kill without the token: $(head -n 1 "$T/http.out")"
done
timeout 10 "$PROBE" http "$E2E_LH_HTTP" POST '/replica/g0/kill?token=p2-job-secret-7f3a9c2e41b8d6057e1f' >"$T/http.out"
head -n 1 "$T/http.out" | grep -q '^HTTP 401' || e2e_fail "HTTP kill with the token in the query string: $(head -n 1 "$T/http.out")"

# positive controls: with the secret the same calls reach the handlers
timeout 10 "$PROBE" call "$ADDR" store_set p2/key probe-value >"$T/ok.out" 2>&1 ||
    e2e_fail "store_set with the secret: $(cat "$T/ok.out")"
timeout 10 "$PROBE" call "$ADDR" store_get p2/key >"$T/ok.out" 2>&1 ||
    e2e_fail "store_get with the secret: $(cat "$T/ok.out")"
timeout 10 "$PROBE" heartbeat "$LH" probe-hb >"$T/ok.out" 2>&1 ||
    e2e_fail "heartbeat with the secret: $(cat "$T/ok.out")"

# the lighthouse counted the refused connections (2 per attack on it)
timeout 10 "$PROBE" http "$E2E_LH_HTTP" GET /metrics >"$T/metrics"
n=$(sed -n 's/^ftmpi_lighthouse_rejected_frames_total{reason="auth"} \([0-9]*\)$/\1/p' "$T/metrics")
[ "${n:-0}" -ge 6 ] || e2e_fail "lighthouse counted ${n:-no} auth rejects, expected >= 6"
! grep -q '"replica_id":"fake"' "$T/status.json" || e2e_fail "the fake group joined"

# the groups were never disturbed: they finish, equal, without a restart
e2e_pace 1000000
e2e_wait_agents 300 g0 g1
e2e_check_states g0 g1
e2e_check_final 1 g0 g1
for g in g0 g1; do
    [ "$(e2e_starts $g)" -eq 1 ] || e2e_fail "group $g was restarted"
    grep -q "^steps committed $STEPS " "$T/$g.out" || e2e_fail "group $g did not commit $STEPS steps"
    ! grep -q 'killed' "$T/$g.err" || e2e_fail "group $g saw a kill: $(grep killed "$T/$g.err")"
done
grep -q 'unauthenticated' "$T/g0.err" && e2e_fail "a group with the secret says it is unauthenticated"
echo "PASS ($TEST_NAME)"
