#!/bin/sh
# test_e2e_http_kill.sh - an operator's HTTP kill (POST /replica/<id>/kill
# with the token) ends the group, and from the kill on the lighthouse counts
# it neither healthy nor a member, whatever its processes still do.  The
# lighthouse's heartbeat timeout is 10 minutes here: only the kill can make
# it stop waiting for the killed group (two groups, the split-brain guard
# needs more than half of the healthy groups).
#  1. g1 running, killed: its ranks get FT_ERR_KILLED, ft_sgd exits 5 and
#     its agent (--max-restarts 0) ends; g0 commits 20 more steps.
#  2. a new incarnation of g1 (a new agent) joins again and trains.
#  3. g1 frozen with SIGSTOP, then killed: status.json says at once that it
#     is neither healthy nor in the quorum; g0 commits 20 more steps while
#     g1 is frozen; after SIGCONT g1's calls (its heartbeat or its quorum
#     request, whichever its threads send first) are refused, it is still
#     not healthy and it ends.
# Times from the kill are logged (not asserted: the test waits on progress).
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
PROBE=$top_builddir/tests/integration/lh_probe
[ -x "$PROBE" ] || skip "$PROBE not built"
need_cmd timeout
T=$TEST_TMPDIR
# a 256-bit secret (a weaker one is refused, issue 23)
secret=kill-test-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
(umask 077 && printf '%s\n' "$secret" >"$T/token")
FTMPI_TOKEN_FILE=$T/token
export FTMPI_TOKEN_FILE
AUTH="Authorization: Bearer $secret"
E2E_HB_TIMEOUT_MS=600000
STEPS=1000000
SGD="--steps $STEPS --sleep-ms 20 --print-every 1"

ms() { date +%s%3N; }

# http_kill ID: the kill with the token; HTTP 200 expected
http_kill() {
    timeout 10 "$PROBE" http "$E2E_LH_HTTP" POST "/replica/$1/kill" -H "$AUTH" >"$T/kill.out" 2>&1 ||
        e2e_fail "no HTTP response to the kill of $1: $(cat "$T/kill.out")"
    head -n 1 "$T/kill.out" | grep -q '^HTTP 200' || e2e_fail "kill of $1: $(head -n 1 "$T/kill.out")"
    e2e_log "HTTP kill of $1 answered"
}

# not_counted ID WHEN: status.json shows ID neither healthy nor in the quorum
not_counted() {
    timeout 10 "$PROBE" http "$E2E_LH_HTTP" GET /status.json -H "$AUTH" >"$T/status.json" ||
        e2e_fail "no /status.json"
    # one member a line: {"replica_id":"ID",...,"healthy":...,"killed":...}
    _l=$(sed -n "s/^\({\"replica_id\":\"$1\",\"address\"[^}]*}\).*/\1/p" "$T/status.json")
    if echo "$_l" | grep -q '"healthy":true\|"in_quorum":true'; then
        e2e_fail "$2: the lighthouse still counts $1: $_l"
    fi
    e2e_log "$2: $1 neither healthy nor a member (${_l:-not listed})"
}

# more_steps ID N SECS: the group commits N more steps within SECS
more_steps() {
    _s=$(e2e_step "$1")
    e2e_wait_step "$1" $((_s + $2)) "$3"
}

agent_ended() { ! pid_alive "$(e2e_agent_pid "$1")"; }

e2e_lighthouse_start 1 0 --token-file "$T/token"
e2e_group_start g0 1 $SGD
E2E_RUN_FLAGS="--max-restarts 0" e2e_group_start g1 1 $SGD
e2e_wait_step g0 20 60
e2e_wait_step g1 20 60

# 1. g1 running
s0=$(e2e_step g0)
t0=$(ms)
http_kill g1
not_counted g1 "right after the kill"
more_steps g0 1 60
e2e_log "g0 committed step $(e2e_step g0) (was $s0) $(($(ms) - t0)) ms after the kill"
more_steps g0 20 60
wait_until 60 agent_ended g1 || e2e_fail "g1 (killed) still running after 60 s"
e2e_log "g1's agent ended $(($(ms) - t0)) ms after the kill"
file_has "$T/g1.out" '^killed at step' || e2e_fail "g1 did not say it was killed"
file_has "$T/g1.err" 'leaves: the lighthouse killed the group' || e2e_fail "g1 did not leave on FT_ERR_KILLED"
not_counted g1 "after g1 ended"

# 2. a new incarnation of g1 joins again (ft_sgd's second "initial loss" line)
E2E_RUN_FLAGS="--max-restarts 0" e2e_group_start g1 1 $SGD
_run2() { [ -n "$(e2e_first_step_of_run g1 2)" ]; }
wait_until 60 _run2 || e2e_fail "the restarted g1 never committed a step"
e2e_log "the new incarnation of g1 committed from step $(e2e_first_step_of_run g1 2)"
more_steps g1 10 60

# 3. g1 frozen, then killed
e2e_signal_group g1 STOP
frozen_at=$(e2e_step g1)
s0=$(e2e_step g0)
t0=$(ms)
http_kill g1
not_counted g1 "frozen g1 right after the kill"
more_steps g0 20 60
e2e_log "g0 went from step $s0 to $(e2e_step g0) while g1 was frozen at $frozen_at ($(($(ms) - t0)) ms)"
# the dashboard says why g0's step with the frozen g1 failed (if one did:
# the kill may have come before g0's step with g1 started)
if file_has "$T/g0.out" '^step [0-9]+ failed: '; then
    _why() {
        timeout 10 "$PROBE" http "$E2E_LH_HTTP" GET /status.json -H "$AUTH" >"$T/why.json" &&
            grep -q '"replica_id":"g0","state":"[a-z]*".*"last_failure":"step [0-9]*: [a-z]' "$T/why.json"
    }
    wait_until 60 _why || e2e_fail "the dashboard does not say why g0's step failed: $(grep -o '"last_failure":"[^"]*"' "$T/why.json")"
    e2e_log "dashboard: g0 $(grep -o '"replica_id":"g0","state".*' "$T/why.json" | grep -o '"last_failure":"[^"]*"' | head -n 1)"
fi
# after SIGCONT g1's heartbeat thread and its main thread (in FT_Quorum)
# both call the lighthouse at once; whichever call comes first is refused
# and ends g1 (the other may never be sent): either refusal is the one
# wanted, which one comes first is the threads' race (seen both ways)
refusals="was killed; heartbeats stop|quorum request failed: the lighthouse asked this group to stop"
refused0=$(count_lines "$T/g1.err" "$refusals")
e2e_signal_group g1 CONT
_refused() { [ "$(count_lines "$T/g1.err" "$refusals")" -gt "$refused0" ]; }
wait_until 60 _refused || e2e_fail "g1's calls after SIGCONT were not refused"
e2e_log "after SIGCONT: $(grep -E "$refusals" "$T/g1.err" | tail -n 1 | sed 's/.*] //')"
not_counted g1 "after SIGCONT"
wait_until 60 agent_ended g1 || e2e_fail "g1 (killed, continued) still running after 60 s"
[ "$(count_lines "$T/g1.out" '^killed at step')" -ge 2 ] || e2e_fail "the second g1 did not say it was killed"
more_steps g0 5 60

# the last group killed too: it ends, and its agent (--max-restarts 5)
# restarts it as a new incarnation, which the lighthouse takes again
http_kill g0
_g0_again() { [ -n "$(e2e_first_step_of_run g0 2)" ]; }
wait_until 60 _g0_again || e2e_fail "g0, killed and restarted by its agent, never committed again"
file_has "$T/g0.out" '^killed at step' || e2e_fail "g0 did not say it was killed"
file_has "$T/lighthouse.log" 'g0: a new incarnation after its kill' ||
    e2e_fail "the lighthouse did not take g0's new incarnation"
echo "PASS ($TEST_NAME)"
