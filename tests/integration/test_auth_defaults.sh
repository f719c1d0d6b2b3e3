#!/bin/sh
# test_auth_defaults.sh - safe defaults without a job secret (issue 11
# item 2).  (1) ftmpi-lighthouse binds 127.0.0.1:29510 by default without
# --token-file, 0.0.0.0:29510 with it, and says the job is
# unauthenticated.  (2) A rank with a non-loopback FTMPI_BIND_HOST and no
# FTMPI_TOKEN_FILE warns loudly at FT_Init; a loopback one does not.
# (3) The step plausibility check (lighthouse/quorum.h): in an
# unauthenticated job, a fake group that joins
# while two real groups of ft_sgd train and claims step 1,000,000 gets into
# a quorum, but recorded at step 0: the real groups never heal from it (no
# heal, no jump of their step), they finish their own steps with equal
# states, and the lighthouse warns, naming the group.  Before the check,
# every real group healed from such a group (confirmed at commit 433406e).
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
PROBE=$top_builddir/tests/integration/lh_probe
[ -x "$PROBE" ] || skip "$PROBE not built"
need_cmd timeout
T=$TEST_TMPDIR
STEPS=200
unset FTMPI_TOKEN_FILE

# (1) the default RPC address: either it listens there or it names the
# address it could not take (another lighthouse on this machine)
(umask 077 && printf 'defaults-secret-7f3a9c2e41b8d6057e1f\n' >"$T/token")
lh_default() {
    "$E2E_LH_BIN" --min-replicas 1 --log-level info "$@" >"$T/lhd.out" 2>"$T/lhd.err" </dev/null &
    _lpid=$!
    register_pid $_lpid
    _lhd_up() { file_has "$T/lhd.out" 'listening on' || file_has "$T/lhd.err" 'cannot serve'; }
    wait_until 10 _lhd_up || e2e_fail "the lighthouse did not start: $(cat "$T/lhd.err")"
    kill -TERM $_lpid 2>/dev/null
    wait_pid_timeout $_lpid 10 || kill -KILL $_lpid 2>/dev/null
    cat "$T/lhd.out" "$T/lhd.err"
}
lh_default >"$T/lhd.all"
grep -q 'listening on 127.0.0.1:29510 \|cannot serve on .127.0.0.1:29510' "$T/lhd.all" ||
    e2e_fail "no --token-file: not on 127.0.0.1:29510 by default: $(cat "$T/lhd.all")"
grep -q 'unauthenticated' "$T/lhd.err" || e2e_fail "no unauthenticated warning: $(cat "$T/lhd.err")"
grep -q 'loopback only' "$T/lhd.err" || e2e_fail "no loopback note: $(cat "$T/lhd.err")"
lh_default --token-file "$T/token" >"$T/lhd.all"
grep -q 'listening on 0.0.0.0:29510 \|cannot serve on .0.0.0.0:29510' "$T/lhd.all" ||
    e2e_fail "--token-file: not on 0.0.0.0:29510 by default: $(cat "$T/lhd.all")"
! grep -q 'unauthenticated' "$T/lhd.err" || e2e_fail "with a secret it says unauthenticated"
"$E2E_LH_BIN" --help | grep -q 'default 127.0.0.1:29510' || e2e_fail "--help does not say the default"
e2e_log "lighthouse defaults: 127.0.0.1:29510, 0.0.0.0:29510 with --token-file"

# (2) FTMPI_BIND_HOST: FT_Init warns for a network address without a
# secret (ft_sgd fails later: no lighthouse at port 1)
bind_run() {
    FTMPI_LIGHTHOUSE=127.0.0.1:1 FTMPI_BIND_HOST=$1 setsid "$MPIRUN" -np 1 "$E2E_SGD_BIN" \
        --steps 1 >"$T/bind.out" 2>&1 </dev/null &
    _bpid=$!
    register_pgid $_bpid
    # the rank's servers say 'unauthenticated' once they start (after the check)
    wait_until 20 file_has "$T/bind.out" 'unauthenticated' ||
        e2e_fail "FTMPI_BIND_HOST=$1: the rank did not start: $(cat "$T/bind.out")"
    kill -KILL -"$_bpid" 2>/dev/null
    wait "$_bpid" 2>/dev/null
}
bind_run hostname
grep -q 'WITHOUT authentication' "$T/bind.out" ||
    e2e_fail "FTMPI_BIND_HOST=hostname without a secret: no warning: $(cat "$T/bind.out")"
bind_run 127.0.0.1
! grep -q 'WITHOUT authentication' "$T/bind.out" || e2e_fail "a loopback bind host warns"
e2e_log "FTMPI_BIND_HOST=hostname without a secret warns"

# (3)

e2e_lighthouse_start 2 0
e2e_groups_start "g0 g1" 1 --steps $STEPS --sleep-ms 20 --print-every 10
e2e_wait_step g0 20 60

# the fake group: one quorum request at step 1,000,000 (waits for the
# real groups' next request, which includes it: a new member)
timeout 30 "$PROBE" quorum "$FTMPI_LIGHTHOUSE" evil 1000000 20000 >"$T/evil.out" 2>&1 ||
    e2e_fail "the fake group got no quorum: $(cat "$T/evil.out")"
grep -q '^quorum [0-9]* members 3 \[evil g0 g1\]' "$T/evil.out" ||
    e2e_fail "the fake group was not in a quorum with the real ones: $(cat "$T/evil.out")"
e2e_log "fake group: $(cat "$T/evil.out")"
grep -q 'evil claims step 1000000.*recorded as step 0' "$TEST_TMPDIR/lighthouse.log" ||
    e2e_fail "the lighthouse did not flag the claim: $(grep evil "$TEST_TMPDIR/lighthouse.log")"

e2e_wait_agents 120 g0 g1
e2e_check_states g0 g1
e2e_check_final 1 g0 g1
for g in g0 g1; do
    ev=$(ls "$T/$g.events"* 2>/dev/null)
    [ -n "$ev" ] || e2e_fail "group $g wrote no event log"
    # shellcheck disable=SC2086
    grep -q '"evil"' $ev || e2e_fail "group $g never saw the fake group in a quorum"
    # shellcheck disable=SC2086
    ! grep '"evil"' $ev | grep -q '"heal":true' || e2e_fail "group $g healed in the fake's quorum"
    # shellcheck disable=SC2086
    ! grep '"event":"heal"' $ev | grep -q 'evil\|"max_step":1000000' ||
        e2e_fail "group $g healed from the fake group"
    grep -q "^steps committed $STEPS " "$T/$g.out" || e2e_fail "group $g did not commit $STEPS steps"
    [ "$(e2e_starts $g)" -eq 1 ] || e2e_fail "group $g was restarted"
done
echo "PASS ($TEST_NAME)"
