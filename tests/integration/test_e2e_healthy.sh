#!/bin/sh
# I1: a healthy run of 3 replica groups (1 rank each).  Each group starts
# from different initial parameters (--init-seed defaults to a hash of the
# replica id), so equal states at the end also show that the initial sync
# (FTMPI_INIT_SYNC=1) copied the primary's parameters at step 0.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init

e2e_lighthouse_start 3
for g in g0 g1 g2; do
    e2e_group_start $g 1 --steps 60 --sleep-ms 5 --print-every 10
done
e2e_wait_agents 60 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_loss g0 g1 g2
e2e_check_final 1 g0 g1 g2
for g in g0 g1 g2; do
    [ "$(e2e_starts $g)" -eq 1 ] || e2e_fail "group $g was restarted"
    grep -q '^steps committed 60 ' "$TEST_TMPDIR/$g.out" || e2e_fail "group $g did not commit 60 steps"
    grep -Eq '^step 60 loss .* participants 3$' "$TEST_TMPDIR/$g.out" ||
        e2e_fail "group $g: the last step did not have 3 participants"
done
# a finished job looks finished (issue 36 item 6): every group finalized, so
# the lighthouse says so per group and for the job, and the groups of the
# last quorum are "finished" in /status.json (they were "unhealthy")
PROBE=$top_builddir/tests/integration/lh_probe
timeout 10 "$PROBE" http "$E2E_LH_HTTP" GET /metrics >"$TEST_TMPDIR/metrics" || e2e_fail "no /metrics"
grep -q '^ftmpi_job_finished{job="ftmpi"} 1$' "$TEST_TMPDIR/metrics" ||
    e2e_fail "the job is not finished on /metrics: $(grep ftmpi_job_finished "$TEST_TMPDIR/metrics")"
timeout 10 "$PROBE" http "$E2E_LH_HTTP" GET /status.json >"$TEST_TMPDIR/status.json" || e2e_fail "no /status.json"
for g in g0 g1 g2; do
    grep -q "^ftmpi_group_finished{job=\"ftmpi\",group=\"$g\"} 1\$" "$TEST_TMPDIR/metrics" ||
        e2e_fail "group $g is not finished on /metrics"
    grep "\"replica_id\":\"$g\"" "$TEST_TMPDIR/status.json" | grep -q '"finished":true' ||
        e2e_fail "group $g is not finished in /status.json"
done
echo "PASS ($TEST_NAME)"
