# tests/integration/lh_common.sh - helpers for the lighthouse tests (POSIX sh).
# Source it after common.sh:
#
#     . "$top_srcdir/tests/integration/common.sh"
#     . "$top_srcdir/tests/integration/lh_common.sh"
#
#   LH, SIM, PROBE             paths of ftmpi-lighthouse, lh_sim, lh_probe
#   start_lighthouse NAME ARGS...
#                              starts ftmpi-lighthouse on 127.0.0.1:0 with ARGS
#                              (stdout/stderr in $TEST_TMPDIR/NAME.out/.err),
#                              waits for its "listening" line (10 s) and sets
#                              LH_PID, LH_ADDR and LH_HTTP ("" when http is off)
#   start_sim NAME ARGS...     starts lh_sim --lighthouse $LH_ADDR ARGS in the
#                              background (output in $TEST_TMPDIR/NAME.out/.err);
#                              sets SIM_PID
#   http METHOD PATH [ARGS...] one HTTP request to $LH_HTTP; body in $HTTP_BODY
#                              (a file), status code in $HTTP_CODE
#   metric NAME_OR_SAMPLE      the value of one /metrics sample ("" if absent),
#                              e.g. metric 'ftmpi_lighthouse_members'
#   now_ms                     wall clock in ms

LH=$top_builddir/ftmpi-lighthouse
SIM=$top_builddir/tests/integration/lh_sim
PROBE=$top_builddir/tests/integration/lh_probe
[ -x "$LH" ] || skip "$LH not built"
[ -x "$SIM" ] || skip "$SIM not built"
[ -x "$PROBE" ] || skip "$PROBE not built (make check builds it)"
need_cmd timeout

start_lighthouse() {
    _n=$1
    shift
    "$LH" --bind 127.0.0.1:0 "$@" >"$TEST_TMPDIR/$_n.out" 2>"$TEST_TMPDIR/$_n.err" </dev/null &
    LH_PID=$!
    register_pid $LH_PID
    if ! wait_until 60 file_has "$TEST_TMPDIR/$_n.out" '^ftmpi-lighthouse listening on '; then
        cat "$TEST_TMPDIR/$_n.err" >&2
        die "lighthouse $_n did not print its listening line within 60 s"
    fi
    LH_ADDR=$(sed -n 's/^ftmpi-lighthouse listening on \([^ ]*\) .*/\1/p' "$TEST_TMPDIR/$_n.out")
    LH_HTTP=$(sed -n 's/^ftmpi-lighthouse listening on .*(http \([^ )]*:[0-9]*\))$/\1/p' \
        "$TEST_TMPDIR/$_n.out")
    [ -n "$LH_ADDR" ] || die "no address in: $(cat "$TEST_TMPDIR/$_n.out")"
}

start_sim() {
    _n=$1
    shift
    "$SIM" --lighthouse "$LH_ADDR" "$@" >"$TEST_TMPDIR/$_n.out" 2>"$TEST_TMPDIR/$_n.err" </dev/null &
    SIM_PID=$!
    register_pid $SIM_PID
}

HTTP_BODY=$TEST_TMPDIR/http.body
http() {
    _m=$1
    _p=$2
    shift 2
    timeout 10 "$PROBE" http "$LH_HTTP" "$_m" "$_p" "$@" >"$HTTP_BODY.raw" 2>"$HTTP_BODY.err" ||
        die "HTTP $_m $_p: no response ($(cat "$HTTP_BODY.err"))"
    HTTP_CODE=$(sed -n '1s/^HTTP \([0-9]*\)$/\1/p' "$HTTP_BODY.raw")
    sed '1d' "$HTTP_BODY.raw" >"$HTTP_BODY"
}

metric() {
    http GET /metrics
    [ "$HTTP_CODE" = 200 ] || die "GET /metrics: $HTTP_CODE"
    awk -v want="$1" 'index($0, want " ") == 1 { v = substr($0, length(want) + 2) } END { print v }' \
        "$HTTP_BODY"
}

now_ms() {
    _ns=$(date +%s%N)
    echo $((_ns / 1000000))
}
