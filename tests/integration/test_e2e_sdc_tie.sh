#!/bin/sh
# Issue 26 item 1, must-hold 1 (2 groups): with two groups there is no
# majority.  g1 flips one bit of its registered state after step 12 (ft_sgd
# --flip-at-step, a test hook); the SDC check of step 15 (FTMPI_SDC_EVERY=5)
# must report both groups (lighthouse log, /metrics, and each group's own
# log), and FTMPI_SDC_ON_TIE decides: continue (default) - both go on to
# the end, their states still different (nobody knows which is right);
# stop - FT_Quorum returns FT_ERR_SDC in both groups, which leave (ft_sgd
# exits 6), never exit/abort in the library.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
need_test_hooks # ft_sgd --flip-at-step
PROBE=$top_builddir/tests/integration/lh_probe
[ -x "$PROBE" ] || skip "$PROBE not built"
need_cmd timeout
T=$TEST_TMPDIR
K=5
FLIP=12
FTMPI_SDC_EVERY=$K
export FTMPI_SDC_EVERY
L=$T/lighthouse.log

# first_report ID: the step of the first tie the lighthouse reported of ID
first_report() {
    grep "SDC: group $1 differs from .* with no majority" "$L" | head -n 1 |
        sed -n 's/.* at step \([0-9][0-9]*\) .*/\1/p'
}

e2e_lighthouse_start 2
# ---- continue (the default)
e2e_group_start g0 1 --steps 30 --sleep-ms 5 --print-every 5
e2e_group_start g1 1 --steps 30 --sleep-ms 5 --print-every 5 --flip-at-step $FLIP
e2e_wait_agents 180 g0 g1
file_has "$T/g1.err" "test hook: group g1 rank 0 flipped bit 22" || e2e_fail "g1 did not flip its bit"
for g in g0 g1; do
    s=$(first_report $g)
    [ -n "$s" ] && [ "$s" -gt $FLIP ] && [ "$s" -le $((FLIP + K)) ] ||
        e2e_fail "the lighthouse did not report $g within $K steps of the flip at $FLIP (step '$s')"
    grep "SDC: group $g differs" "$L" | head -n 1 | grep -q "group rank 0, buffer 'weights'" ||
        e2e_fail "the report of $g does not name group rank 0 and buffer 'weights'"
    file_has "$T/$g.err" "SDC: this group's state differs from another group's with no majority at step $s: .*FTMPI_SDC_ON_TIE=continue: going on" ||
        e2e_fail "$g's own log does not report the tie of step $s"
    grep -q '^steps committed 30 ' "$T/$g.out" || e2e_fail "$g did not go on to step 30"
done
e2e_log "continue: both reported at step $(first_report g0), both went on"
cmp -s "$T/g0.dump" "$T/g1.dump" && e2e_fail "the states are equal: nothing was corrupted?"
timeout 10 "$PROBE" http "$E2E_LH_HTTP" GET /metrics >"$T/metrics" || e2e_fail "no /metrics"
for g in g0 g1; do
    grep -q "^ftmpi_group_sdc_mismatches_total{job=\"ftmpi\",group=\"$g\"} [1-9]" "$T/metrics" ||
        e2e_fail "/metrics: no SDC mismatch counted for $g"
done

# ---- stop: both groups end with FT_ERR_SDC (ft_sgd: exit 6)
FTMPI_SDC_ON_TIE=stop
export FTMPI_SDC_ON_TIE
E2E_RUN_FLAGS="--max-restarts 0"
e2e_group_start s0 1 --steps 1000 --sleep-ms 5 --print-every 5
e2e_group_start s1 1 --steps 1000 --sleep-ms 5 --print-every 5 --flip-at-step $FLIP
for g in s0 s1; do
    pid=$(e2e_agent_pid $g)
    wait_pid_timeout "$pid" 180 || e2e_fail "$g still runs: FTMPI_SDC_ON_TIE=stop did not stop it"
    wait "$pid"
    st=$?
    [ "$st" -ne 0 ] || e2e_fail "$g ended with status 0"
    s=$(first_report $g)
    [ -n "$s" ] && [ "$s" -gt $FLIP ] && [ "$s" -le $((FLIP + K)) ] ||
        e2e_fail "the lighthouse did not report $g within $K steps of the flip (step '$s')"
    file_has "$T/$g.out" "^stopped at step $s: silent data corruption" ||
        e2e_fail "$g's FT_Quorum did not return FT_ERR_SDC at step $s"
    file_has "$T/$g.err" "FTMPI_SDC_ON_TIE=stop: FT_Quorum returns FT_ERR_SDC" ||
        e2e_fail "$g's log does not say why it stops"
    file_has "$T/$g.err" "leaves: silent data corruption with no majority" ||
        e2e_fail "$g did not leave on FT_ERR_SDC"
    e2e_log "stop: $g reported at step $s, left with status $st"
done
echo "PASS ($TEST_NAME)"
