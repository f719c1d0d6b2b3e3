#!/bin/sh
# test_dashboard.sh - the lighthouse dashboard in a real headless browser
# (Debian's chromium; installed with apt-get when missing and this runs as
# root, else skipped): three simulated groups (lh_sim --liveness, as
# managers do), one SIGKILLed and restarted; then
#  - /status.json's history has the dead and restarted events of the group
#    and a dip of the step rate after the kill;
#  - chromium's DOM of GET / has the timeline with those events, the
#    step-rate and participants plots, the group shown dead at once (before
#    the heartbeat timeout);
#  - chromium's screenshot of GET / is a real PNG of the page's size.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
T=$TEST_TMPDIR

find_chromium() {
    for c in chromium chromium-browser google-chrome; do
        command -v "$c" >/dev/null 2>&1 && { command -v "$c"; return 0; }
    done
    return 1
}
CHROMIUM=$(find_chromium) || {
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 ||
        skip "no chromium, and not root with apt-get to install it"
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y --no-install-recommends \
        chromium >"$T/apt.log" 2>&1 || skip "apt-get install chromium failed: $(tail -2 "$T/apt.log")"
    CHROMIUM=$(find_chromium) || skip "chromium installed but not found"
}
need_cmd od

# chromium ARGS...: one headless run on a fresh profile, bounded in time
chromium_run() {
    _prof=$(mktemp -d "$T/profile.XXXXXX")
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --disable-dev-shm-usage --user-data-dir="$_prof" --window-size=1400,1000 "$@" \
        2>>"$T/chromium.err"
}

HB_TIMEOUT=5000
start_lighthouse lh --min-replicas 1 --heartbeat-timeout-ms $HB_TIMEOUT --http-bind 127.0.0.1:0
SIMARGS="--liveness --step-ms 40 --heartbeat-ms 100 --quiet --timeout-ms 30000"
start_sim a --groups 2 $SIMARGS
start_sim b1 --groups 1 --first 2 $SIMARGS
B_PID=$SIM_PID

three() { [ "$(metric ftmpi_lighthouse_members)" = 3 ]; }
wait_until 20 three || die "no quorum of 3 within 20 s"
sleep 4 # samples of the steady rate (one a second)
t_kill=$(now_ms)
kill -9 "$B_PID"
sleep 1
# shown dead at once: well before the heartbeat timeout
http GET /status.json
grep -q '"replica_id":"g02","state":"dead"' "$HTTP_BODY" ||
    die "g02 not dead 1 s after its kill (heartbeat timeout $HB_TIMEOUT ms)"
sleep 3
start_sim b2 --groups 1 --first 2 $SIMARGS
wait_until 20 three || die "the restarted g02 is in no quorum within 20 s"
sleep 3

# ---- /status.json: events and the dip -------------------------------------
http GET /status.json
cp "$HTTP_BODY" "$T/status.json"
grep -q '"kind":"dead","replica_id":"g02"' "$T/status.json" || die "no dead event of g02"
grep -q '"kind":"restarted","replica_id":"g02"' "$T/status.json" || die "no restarted event of g02"
# steady rate before the kill vs the lowest after it (samples: one per line)
tr '{' '\n' <"$T/status.json" | awk -v k="$t_kill" -F'[:,]' '
    /^"wall_ms":[0-9]*,"steps_per_s"/ { t = $2; r = $4; if (t < k) { if (r > before) before = r } else if (t < k + 4000) { if (after == "" || r < after) after = r } }
    END { printf "step rate: %.1f steps/s before the kill, %.1f after\n", before, after
          exit !(before > 0 && after != "" && after < 0.85 * before) }' >"$T/dip.txt" ||
    die "no dip of the step rate after the kill: $(cat "$T/dip.txt")"
cat "$T/dip.txt"

# ---- the browser: DOM and screenshot ---------------------------------------
URL="http://$LH_HTTP/"
chromium_run --dump-dom "$URL" >"$T/dom.html" || die "chromium --dump-dom failed: $(tail -3 "$T/chromium.err")"
for want in '<svg id="timeline"' '<svg id="plot-rate"' '<svg id="plot-participants"' \
    'class="ev ev-dead"' 'class="ev ev-restarted"' 'class="ev ev-quorum"' 'class="fail-mark"' \
    '<polyline class="series"'; do
    grep -qF "$want" "$T/dom.html" || die "the rendered page lacks $want"
done
grep -q 'class="ev ev-dead"[^>]*>[^<]*<title>dead g02' "$T/dom.html" ||
    die "the timeline's dead event does not name g02"
# the polyline has one point per sample: at least 10 over the run
n=$(grep -o '<polyline class="series"[^>]*points="[^"]*"' "$T/dom.html" | head -1 | tr ' ' '\n' |
    grep -c '^[0-9.]*,[0-9.]*$')
[ "$n" -ge 10 ] || die "the step-rate plot has $n points (want >= 10)"

chromium_run --screenshot="$T/dash.png" "$URL" >/dev/null || die "chromium --screenshot failed"
[ -s "$T/dash.png" ] || die "no screenshot"
sig=$(od -An -tx1 -N8 "$T/dash.png" | tr -d ' \n')
[ "$sig" = 89504e470d0a1a0a ] || die "the screenshot is not a PNG ($sig)"
# IHDR width and height (big-endian at bytes 16..23): the window's size
wh=$(od -An -tu1 -j16 -N8 "$T/dash.png" | awk '{ print $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8 }')
[ "$wh" = "1400 1000" ] || die "the screenshot is $wh, not 1400 1000"
size=$(wc -c <"$T/dash.png" | tr -d ' ')
[ "$size" -gt 20000 ] || die "the screenshot has $size bytes: an empty page?"
echo "screenshot $T/dash.png: $wh, $size bytes"
[ -z "${FTMPI_DASHBOARD_SHOT:-}" ] || cp "$T/dash.png" "$FTMPI_DASHBOARD_SHOT"
echo "ok"
