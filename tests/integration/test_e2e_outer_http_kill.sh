#!/bin/sh
# test_e2e_outer_http_kill.sh - an operator's HTTP kill ends a group that
# trains with --localsgd or --diloco as it ends one of the per-step loop
# (test_e2e_http_kill.sh): FT_Outer_step returns FT_ERR_KILLED, ft_sgd
# says "killed at step N" and exits 5 (not 4, "the group lost a rank"),
# its agent (--max-restarts 0) ends with that status, and the survivor
# syncs on without it.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
PROBE=$top_builddir/tests/integration/lh_probe
[ -x "$PROBE" ] || skip "$PROBE not built"
need_cmd timeout
T=$TEST_TMPDIR
secret=outer-kill-0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab
(umask 077 && printf '%s\n' "$secret" >"$T/token")
FTMPI_TOKEN_FILE=$T/token
export FTMPI_TOKEN_FILE
E2E_HB_TIMEOUT_MS=600000
SGD="--steps 1000000 --sleep-ms 20 --print-every 1"

agent_ended() { ! pid_alive "$(e2e_agent_pid "$1")"; }

for algo in localsgd diloco; do
    e2e_log "---- $algo"
    rm -f "$T"/g*.out "$T"/g*.err "$T"/g*.agent "$T"/g*.events
    e2e_lighthouse_start 1 0 --token-file "$T/token"
    e2e_group_start g0 1 --$algo 5 $SGD
    E2E_RUN_FLAGS="--max-restarts 0" e2e_group_start g1 1 --$algo 5 $SGD
    e2e_wait_step g0 3 120
    e2e_wait_step g1 3 120
    timeout 10 "$PROBE" http "$E2E_LH_HTTP" POST /replica/g1/kill \
        -H "Authorization: Bearer $secret" >"$T/kill.out" 2>&1 ||
        e2e_fail "no HTTP response to the kill: $(cat "$T/kill.out")"
    head -n 1 "$T/kill.out" | grep -q '^HTTP 200' || e2e_fail "kill: $(head -n 1 "$T/kill.out")"
    wait_until 120 agent_ended g1 || e2e_fail "g1 ($algo, killed) still running after 120 s"
    file_has "$T/g1.out" '^killed at step' ||
        e2e_fail "g1 ($algo) did not say it was killed: $(tail -n 3 "$T/g1.out")"
    file_has "$T/g1.err" 'leaves: the lighthouse killed the group' ||
        e2e_fail "g1 ($algo) did not leave on FT_ERR_KILLED: $(grep 'leaves' "$T/g1.err")"
    file_has "$T/g1.agent" '"event":"exit".*"status":5[,}]' ||
        e2e_fail "g1 ($algo) did not exit 5: $(grep '"exit"' "$T/g1.agent")"
    e2e_log "g1 ($algo): $(grep '^killed at step' "$T/g1.out"), exit status 5"
    _s=$(e2e_step g0)
    e2e_wait_step g0 $((_s + 3)) 120
    e2e_lighthouse_kill
    kill -TERM "$(e2e_agent_pid g0)" 2>/dev/null
    wait_until 60 agent_ended g0 || pkill -KILL -s "$(e2e_agent_pid g0)"
done
echo "PASS ($TEST_NAME)"
