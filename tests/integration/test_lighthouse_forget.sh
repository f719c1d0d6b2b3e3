#!/bin/sh
# Issue 35 item 4: the lighthouse forgets what it kept of a group gone for
# longer than the history window (--forget-after, 2 s here; 15 min by
# default): 3 rounds of 100 group ids that each report 4 ranks' counters,
# a recovery and a failed step, leave an SDC fingerprint that is never
# judged (--min-replicas 2: no quorum) and die.  After each round every
# /metrics series of its groups goes (group="..") and no
# fingerprint waits (ftmpi_lighthouse_sdc_groups 0), so the series stay
# bounded by the groups of the last window.  Before: every series of the
# 300 groups stayed on /metrics for good.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
T=$TEST_TMPDIR
start_lighthouse lh --min-replicas 2 --http-bind 127.0.0.1:0 --forget-after 2
[ -n "$LH_HTTP" ] || die "no http address"

# series of the cycled groups on /metrics (into $T/n), fingerprints waiting (into $T/sdc)
count() {
    http GET /metrics
    [ "$HTTP_CODE" = 200 ] || die "GET /metrics: $HTTP_CODE"
    grep -v '^#' "$HTTP_BODY" | grep -c -E '(group|replica_id)="cyc' >"$T/n"
    sed -n 's/^ftmpi_lighthouse_sdc_groups \([0-9]*\)$/\1/p' "$HTTP_BODY" >"$T/sdc"
}
_gone() { count && [ "$(cat "$T/n")" = 0 ] && [ "$(cat "$T/sdc")" = 0 ]; }

for r in 0 1 2; do
    out=$(timeout 120 "$PROBE" cycle "$LH_ADDR" 100 "cyc${r}_") || die "lh_probe cycle: $out"
    count
    echo "round $r: $out; right after: $(cat "$T/n") series of them, $(cat "$T/sdc") with fingerprints"
    wait_until 60 _gone ||
        die "round $r: $(cat "$T/n") series of groups gone for over 2 s still on /metrics, $(cat "$T/sdc") groups' fingerprints kept"
done
echo "after 300 groups: no series and no fingerprint of them left"
echo "PASS ($TEST_NAME)"
