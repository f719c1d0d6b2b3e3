#!/bin/sh
# Issue 26 item 3: every rank's counters reach the lighthouse's /metrics
# through its group's manager (no file per process): 2 groups of 2 ranks;
# each rank's steps, commits, bytes reduced and time in each FT_ call are
# there, per group and group rank, as of the group's last quorum.  Issue
# 34: each rank's advertised address is in /status.json and on the
# dashboard (never in /metrics).
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
. "$top_srcdir/tests/integration/lh_common.sh"

STEPS=40
e2e_lighthouse_start 2 0 --job rk
LH_HTTP=$E2E_LH_HTTP
for g in g0 g1; do
    e2e_group_start $g 2 --steps $STEPS --sleep-ms 10 --print-every 10
done
e2e_wait_agents 180 g0 g1

m() { awk -v want="$1" 'index($0, want " ") == 1 { v = substr($0, length(want) + 2) } END { print v }' "$HTTP_BODY"; }
http GET /metrics
[ "$HTTP_CODE" = 200 ] || e2e_fail "GET /metrics: $HTTP_CODE"
for g in g0 g1; do
    for r in 0 1; do
        L="{job=\"rk\",group=\"$g\",rank=\"$r\"}"
        steps=$(m "ftmpi_rank_steps_total$L")
        commits=$(m "ftmpi_rank_commits_total$L")
        bytes=$(m "ftmpi_rank_reduced_bytes_total$L")
        ar=$(m "ftmpi_rank_call_seconds_total{job=\"rk\",group=\"$g\",rank=\"$r\",call=\"allreduce\"}")
        # the counters are as of the last quorum: before the last step's commit
        [ -n "$commits" ] && [ "$commits" -ge $((STEPS - 1)) ] && [ "$commits" -le "$STEPS" ] ||
            e2e_fail "$g rank $r: commits '$commits' on /metrics, want $((STEPS - 1))..$STEPS"
        [ -n "$steps" ] && [ "$steps" -ge "$commits" ] || e2e_fail "$g rank $r: steps '$steps' < commits $commits"
        [ -n "$bytes" ] && [ "$bytes" -gt 0 ] || e2e_fail "$g rank $r: no bytes reduced ('$bytes')"
        awk -v v="$ar" 'BEGIN { exit !(v > 0) }' || e2e_fail "$g rank $r: no time in FT_Allreduce ('$ar')"
        e2e_log "$g rank $r: steps $steps, commits $commits, $bytes bytes reduced, $ar s in FT_Allreduce"
    done
done
[ -z "$(m 'ftmpi_rank_commits_total{job="rk",group="g0",rank="2"}')" ] || e2e_fail "a rank 2 in a group of 2"
! grep -q '127\.0\.0\.1' "$HTTP_BODY" || e2e_fail "/metrics holds an address"
# issue 34: each rank's advertised address, as its FT_Init line says it
# (server host:port), in /status.json and on the dashboard
http GET /status.json
cp "$HTTP_BODY" "$TEST_TMPDIR/status.json"
http GET /
cp "$HTTP_BODY" "$TEST_TMPDIR/dash.html"
for g in g0 g1; do
    for r in 0 1; do
        a=$(sed -n "s/.*FT_Init: replica $g, group rank $r of 2, server \([^,]*\),.*/\1/p" "$TEST_TMPDIR/$g.err" | tail -n 1)
        [ -n "$a" ] || e2e_fail "$g rank $r: no FT_Init line with its server address"
        grep -q "\"replica_id\":\"$g\",.*\"ranks\":\[.*{\"group_rank\":$r,\"address\":\"$a\"}" \
            "$TEST_TMPDIR/status.json" || e2e_fail "$g rank $r: /status.json does not give its address $a"
        grep -q "rank $r $a" "$TEST_TMPDIR/dash.html" || e2e_fail "$g rank $r: the dashboard does not show $a"
        e2e_log "$g rank $r advertises $a: in /status.json and on the dashboard"
    done
done
echo "PASS ($TEST_NAME)"
