#!/bin/sh
# Issue 26 item 1, must-hold 1: silent data corruption is caught.  Three
# replica groups of 2 ranks train with FTMPI_SDC_EVERY=5; right after step
# 17 committed, group rank 1 of g1 flips one bit of its own registered
# state (ft_sgd --flip-at-step, a test hook: outside any FT_ call, nothing
# tells the library).  The check of step 20 must catch it: the lighthouse
# names the group, the step, the group rank and the buffer (log line,
# /metrics counter, dashboard event), g1 heals from the majority in that
# same FT_Quorum, and every group ends with the same state (dumps equal).
# Without the check g1 keeps its flipped bit to the end and the dumps
# differ.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
need_test_hooks # ft_sgd --flip-at-step
PROBE=$top_builddir/tests/integration/lh_probe
[ -x "$PROBE" ] || skip "$PROBE not built"
need_cmd timeout
T=$TEST_TMPDIR
K=5
FLIP=17
FTMPI_SDC_EVERY=$K
export FTMPI_SDC_EVERY

e2e_lighthouse_start 3
for g in g0 g1 g2; do
    _flip=
    [ $g = g1 ] && _flip="--flip-at-step $FLIP --flip-rank 1"
    # shellcheck disable=SC2086
    e2e_group_start $g 2 --steps 40 --sleep-ms 5 --print-every 5 $_flip
done
e2e_wait_agents 180 g0 g1 g2
file_has "$T/g1.err" "test hook: group g1 rank 1 flipped bit 22 of weights\[1\] after step $FLIP" ||
    e2e_fail "g1's rank 1 did not flip its bit (the test hook did not run)"
# every group, every rank: the same state at the end
e2e_check_states g0 g1 g2
e2e_check_final 2 g0 g1 g2

# the lighthouse's report: group, step (the first check after the flip),
# group rank and buffer
L=$T/lighthouse.log
line=$(grep 'SDC: group g1 ' "$L" | head -n 1)
[ -n "$line" ] || e2e_fail "the lighthouse did not report g1"
e2e_log "lighthouse: $line"
step=$(echo "$line" | sed -n 's/.* at step \([0-9][0-9]*\).*/\1/p')
[ -n "$step" ] && [ "$step" -gt $FLIP ] && [ "$step" -le $((FLIP + K)) ] ||
    e2e_fail "g1 reported at step '$step', not within $K steps after the flip at $FLIP"
echo "$line" | grep -q "group rank 1, buffer 'weights'" ||
    e2e_fail "the report does not name group rank 1 and buffer 'weights': $line"
echo "$line" | grep -q 'majority' || e2e_fail "the report does not say the majority differs: $line"
for g in g0 g2; do
    if grep -q "SDC: group $g " "$L"; then
        e2e_fail "the lighthouse reported $g, whose state was right: $(grep "SDC: group $g " "$L")"
    fi
done
# g1 learnt it, and healed that step from a group of the majority
file_has "$T/g1.err" "SDC: .*step $step.*heal" || e2e_fail "g1's log does not say it heals (step $step)"
file_has "$T/g1.err" "healed step $step from g[02]" ||
    e2e_fail "g1 did not heal step $step from g0 or g2"
if grep -q "healed step $step from g1" "$T/g0.err" "$T/g2.err"; then
    e2e_fail "a group healed from g1, the corrupted one"
fi

# /metrics: the counter of g1 (and of no other group); the dashboard's event
timeout 10 "$PROBE" http "$E2E_LH_HTTP" GET /metrics >"$T/metrics" || e2e_fail "no /metrics"
grep -q '^ftmpi_group_sdc_mismatches_total{job="ftmpi",group="g1"} 1$' "$T/metrics" ||
    e2e_fail "/metrics: no ftmpi_group_sdc_mismatches_total of 1 for g1: $(grep sdc "$T/metrics")"
grep -q '^ftmpi_group_sdc_mismatches_total{job="ftmpi",group="g0"} 0$' "$T/metrics" ||
    e2e_fail "/metrics: g0's ftmpi_group_sdc_mismatches_total is not 0"
grep -q '^ftmpi_lighthouse_sdc_checks_total [1-9]' "$T/metrics" ||
    e2e_fail "/metrics: no SDC check counted"
timeout 10 "$PROBE" http "$E2E_LH_HTTP" GET /status.json >"$T/status.json" ||
    e2e_fail "no /status.json"
grep -q "\"kind\":\"sdc\",[^}]*\"replica_id\":\"g1\"" "$T/status.json" ||
    e2e_fail "/status.json: no sdc event of g1"
grep -q "\"group\":\"g1\",\"step\":$step,\"group_rank\":1,\"buffer\":\"weights\"" "$T/status.json" ||
    e2e_fail "/status.json: the sdc report does not name g1, step $step, group rank 1, 'weights'"
echo "PASS ($TEST_NAME)"
