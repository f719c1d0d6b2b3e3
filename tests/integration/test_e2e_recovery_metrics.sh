#!/bin/sh
# Issue 26, must hold 3: after a SIGKILLed group's recovery (ftmpi-run
# restarts it), the lighthouse's /metrics carries the recovery breakdown
# (detect, quorum, slice, heal, duration; heal bytes; steps lost), and it
# agrees with the groups' event logs ("recovery" lines) to the millisecond.
# The dashboard lists the recoveries and every failed step with its reason.
# g1 is killed while every group is held before step 30's allreduce, and
# the survivors are held again at step 40 until g1's new run waits at the
# lighthouse for a quorum (or healed), so it heals whatever the load
# (e2e_lib.sh, "holding the run")
E2E_JOIN_TIMEOUT_MS=120000
E2E_HB_TIMEOUT_MS=5000
FTMPI_QUORUM_TIMEOUT_MS=120000
export FTMPI_QUORUM_TIMEOUT_MS
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
. "$top_srcdir/tests/integration/lh_common.sh"

JOB=recotest
e2e_lighthouse_start 1 0 --job "$JOB"
LH_HTTP=$E2E_LH_HTTP
e2e_pace 0
for g in g0 g1 g2; do
    e2e_group_start $g 1 --steps 300 --sleep-ms 25 --print-every 5 --pace-file "$E2E_PACE"
done
e2e_gather 120 30 g0 g1 g2
e2e_wait_held 120 30 g0 g1 g2
e2e_kill_group g1
e2e_pace 40
e2e_wait_restart g1 2 60
e2e_wait_rejoining 120 g1
e2e_pace 1000000
e2e_wait_agents 180 g0 g1 g2

# Every group has left (its last heartbeat carried what was pending); the
# lighthouse still runs.  The event logs' recovery lines, per group:
# "count sums" of detect (only where measured), quorum, slice, heal,
# duration (ms), heal bytes, steps lost.
ev_sums() {
    awk -F'[,:{}]' '/"event":"recovery"/ {
        for (i = 1; i < NF; i++) v[$i] = $(i + 1)
        n++; if (v["\"detect_ms\""] >= 0) { nd++; d += v["\"detect_ms\""] }
        if (v["\"restart_ms\""] >= 0) { nr++; r += v["\"restart_ms\""] }
        q += v["\"quorum_ms\""]; s += v["\"slice_ms\""]; h += v["\"heal_ms\""]
        t += v["\"end_ms\""] - v["\"start_ms\""]; b += v["\"heal_bytes\""]
        if (v["\"heal_bytes\""] > 0) nb++
        l += v["\"steps_lost\""]
    } END { printf "%d %d %d %d %d %d %d %d %d %d %d %d\n", n + 0, nd + 0, d + 0, q + 0, s + 0, h + 0, t + 0, nb + 0, b + 0, l + 0, nr + 0, r + 0 }' "$1"
}
ms_to_s() { awk -v ms="$1" 'BEGIN { printf "%d.%03d", int(ms / 1000), ms % 1000 }'; }
m() { awk -v want="$1" 'index($0, want " ") == 1 { v = substr($0, length(want) + 2) } END { print v }' "$HTTP_BODY"; }

# the restarted group's count on /metrics equals its event log's (the
# final heartbeats may still be on their way: a condition, not a sleep)
_counts_match() {
    http GET /metrics
    for _g in g0 g1 g2; do
        set -- $(ev_sums "$TEST_TMPDIR/$_g.events")
        [ "$(m "ftmpi_recovery_duration_seconds_count{job=\"$JOB\",group=\"$_g\"}")" = "$1" ] || return 1
    done
}
wait_until 30 _counts_match || {
    grep '^ftmpi_recovery_duration_seconds_count' "$HTTP_BODY" >&2
    e2e_fail "/metrics' recovery counts never matched the event logs'"
}
http GET /metrics
cp "$HTTP_BODY" "$TEST_TMPDIR/metrics.txt"
awk -f "$top_srcdir/tests/integration/lh_promcheck.awk" "$TEST_TMPDIR/metrics.txt" >"$TEST_TMPDIR/promcheck.out" ||
    e2e_fail "/metrics is not valid Prometheus text: $(head -n 5 "$TEST_TMPDIR/promcheck.out")"

total=0
for g in g0 g1 g2; do
    set -- $(ev_sums "$TEST_TMPDIR/$g.events")
    n=$1 nd=$2 d=$3 q=$4 s=$5 h=$6 t=$7 nb=$8 b=$9
    shift 9
    lost=$1 nr=$2 rs=$3
    total=$((total + n))
    L="{job=\"$JOB\",group=\"$g\"}"
    for spec in "detect $nd $d" "restart $nr $rs" "quorum $n $q" "slice $n $s" "heal $n $h" "duration $n $t"; do
        set -- $spec
        want_sum=$(ms_to_s "$3")
        got_n=$(m "ftmpi_recovery_$1_seconds_count$L")
        got_sum=$(m "ftmpi_recovery_$1_seconds_sum$L")
        [ "$got_n" = "$2" ] || e2e_fail "$g $1: /metrics count '$got_n', event log $2"
        [ "$got_sum" = "$want_sum" ] || e2e_fail "$g $1: /metrics sum '$got_sum' s, event log $want_sum s"
    done
    [ "$(m "ftmpi_recovery_heal_bytes_count$L")" = "$nb" ] || e2e_fail "$g heal bytes count differs"
    [ "$(m "ftmpi_recovery_heal_bytes_sum$L")" = "$b" ] || e2e_fail "$g heal bytes sum differs ($b in the event log)"
    [ "$(m "ftmpi_recovery_steps_lost_total$L")" = "$lost" ] || e2e_fail "$g steps lost differ ($lost in the event log)"
    e2e_log "$g: $n recoveries, detect $(ms_to_s "$d") s, quorum $(ms_to_s "$q") s, slice $(ms_to_s "$s") s, heal $(ms_to_s "$h") s ($b bytes), restart $(ms_to_s "$rs") s, total $(ms_to_s "$t") s, $lost step(s) lost: /metrics agrees"
done

# what happened is there: g1's restart healed bytes; a survivor's recovery
# names the error it saw
grep -q '"event":"recovery".*"kind":"restart".*"heal_bytes":[1-9][0-9]*,"steps_lost":[0-9]*,"restart_ms":[0-9]' \
    "$TEST_TMPDIR/g1.events" ||
    e2e_fail "g1's restart recovery did not heal, or has no restart time (from ftmpi-run's FTMPI_RESTART_LOST_MS)"
[ "$(m "ftmpi_recoveries_total{job=\"$JOB\",group=\"g1\",kind=\"restart\"}")" -ge 1 ] ||
    e2e_fail "/metrics counts no restart recovery of g1"
# (the survivors lose a step unless g1 died while they waited for it in a
# quorum: then the new quorum just leaves it out)
grep -h '"event":"recovery".*"kind":"survivor"' "$TEST_TMPDIR/g0.events" "$TEST_TMPDIR/g2.events" |
    grep -v '"error_name":"FT_ERR_' && e2e_fail "a survivor recovery names no error"
http GET /
grep -q 'id="recoveries"' "$HTTP_BODY" && grep -q '>restart<' "$HTTP_BODY" ||
    e2e_fail "the dashboard shows no recovery table with g1's restart"
if grep -q '"event":"commit".*"committed":false' "$TEST_TMPDIR/g0.events" "$TEST_TMPDIR/g2.events"; then
    grep -q 'id="failed-steps"' "$HTTP_BODY" && grep -q '<td>FT_ERR_' "$HTTP_BODY" ||
        e2e_fail "the dashboard gives no failed step's reason"
fi
grep -q '^ftmpi_rank_commits_total{job="'"$JOB"'",group="g0",rank="0"} [1-9]' "$TEST_TMPDIR/metrics.txt" ||
    e2e_fail "/metrics has no per-rank commits of g0"
# one label set (issue 36 item 7): every sample of a job's families carries
# job first, every per-group one group (the replica id), none replica_id
awk -v job="$JOB" '/^ftmpi_(group|recovery|rank|job)_/ {
        if (index($0, "{job=\"" job "\"") == 0 || /replica_id=/ ||
            (/^ftmpi_(group|recovery|rank)_/ && !/,group="/)) { print; bad = 1 } }
    END { exit bad }' "$TEST_TMPDIR/metrics.txt" >"$TEST_TMPDIR/labels.bad" ||
    e2e_fail "samples without the job and group labels: $(head -n 3 "$TEST_TMPDIR/labels.bad")"
grep -q '^ftmpi_group_alive{job="'"$JOB"'",group="g0"} ' "$TEST_TMPDIR/metrics.txt" ||
    e2e_fail "/metrics has no ftmpi_group_alive of g0 with job and group"
# every selector of the Grafana dashboard is filtered by its $job variable
awk '/"expr":/ { n = gsub(/ftmpi_[a-z_]+/, "&"); f = gsub(/ftmpi_[a-z_]+\{job=~\\"\$job\\"/, "&")
        if (n != f) { print; bad = 1 } } END { exit bad }' "$top_srcdir/doc/grafana-ftmpi.json" \
    >"$TEST_TMPDIR/grafana.bad" || e2e_fail "Grafana selectors not filtered by \$job: $(cat "$TEST_TMPDIR/grafana.bad")"
# every metric the Grafana dashboard and the alert examples use is exported
for f in "$top_srcdir/doc/grafana-ftmpi.json" "$top_srcdir/doc/prometheus-ftmpi-alerts.yml"; do
    for name in $(grep -o 'ftmpi_[a-z_]*' "$f" | sed 's/_\(bucket\|sum\|count\)$//' | sort -u); do
        grep -q "^# TYPE $name " "$TEST_TMPDIR/metrics.txt" ||
            e2e_fail "$(basename "$f") uses $name, which /metrics does not export"
    done
done
e2e_log "$total recoveries in all agree with the event logs"
echo "PASS ($TEST_NAME)"
