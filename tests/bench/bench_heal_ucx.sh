# tests/bench/bench_heal_ucx.sh - a heal over UCX against today's tcp heal
# (issue 37 item 2, doc/PERFORMANCE.md section 14): bench_heal (source and
# healer in one process, no MPI, direct install) of SIZE (1 GiB; BENCH_QUICK:
# 256 MiB), three variants in interleaved rounds so that one run decides:
# tcp (HEAL_FETCH over the rank server's socket), ucx on UCX's choice of
# transports, ucx with UCX_POSIX_ERROR_HANDLING=y (shared memory).  Per
# variant: the median over the rounds of each run's median (REPS heals),
# MB/s and the ratio of each ucx variant's rate to tcp's (> 1: ucx faster).
# Skipped (a note) in a build without UCX.
. "$(dirname "$0")/bench_common.sh"
bench_selected ucx || exit 0
grep -q '^#define FTMPI_HAVE_UCX 1' "$top_builddir/ftmpi_config.h" 2>/dev/null || {
    note "built without UCX: nothing to measure"
    exit 0
}
SIZE=1g
REPS=3
ROUNDS=3
if [ -n "$BENCH_QUICK" ]; then
    SIZE=256m
    ROUNDS=1
fi
PROG=$BENCH_BIN/bench_heal
[ -x "$PROG" ] || { note "missing $PROG"; exit 1; }

: >"$BENCH_OUT/heal_ucx.txt"
echo "# bench_heal_ucx $(date -u +%Y-%m-%dT%H:%M:%SZ) $BENCH_MACHINE; size=$SIZE reps=$REPS rounds=$ROUNDS" |
    table_out heal_ucx.txt
status=0
r=1
while [ $r -le "$ROUNDS" ]; do
    for v in tcp:n ucx:n ucx:y; do
        b=${v%:*} eh=${v#*:}
        flag=
        [ "$b" = ucx ] && flag=--ucx
        note "round $r: heal over $b (UCX_POSIX_ERROR_HANDLING=$eh)"
        # shellcheck disable=SC2086
        UCX_POSIX_ERROR_HANDLING=$eh timeout 600 "$PROG" --bytes "$SIZE" --reps "$REPS" $flag \
            >"$BT/heal_$b$eh.r$r.out" 2>"$BT/heal_$b$eh.r$r.err" || {
            note "heal over $b (UCX_POSIX_ERROR_HANDLING=$eh) failed:"
            tail -n 5 "$BT/heal_$b$eh.r$r.err" >&2
            status=1
        }
    done
    r=$((r + 1))
done
# RESULT bytes median_us min_us max_us MiB/s; the median over rounds of median_us
for f in "$BT"/heal_*.out; do
    v=${f##*/heal_}
    v=${v%%.r*}
    grep '^RESULT' "$f" | awk -v v="$v" '{ print v, $2, $3 }'
done | awk '
    function med(list,   n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
            t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n ? a[int((n + 1) / 2)] : ""
    }
    { t[$1] = t[$1] " " $3; b = $2; runs[$1] = runs[$1] " " int($3 / 1000) }
    END {
        a = med(t["tcpn"]); u = med(t["ucxn"]); s = med(t["ucxy"])
        if (a == "" || u == "" || s == "") { print "(a variant has no result)"; exit 1 }
        printf "%10s %9s %9s %9s %8s %8s %8s %8s %8s\n", "bytes", "tcp_ms", "ucx_ms", "ucxshm_ms",
            "tcp_MBs", "ucx_MBs", "shm_MBs", "ucx/tcp", "shm/tcp"
        printf "%10d %9.0f %9.0f %9.0f %8.0f %8.0f %8.0f %8.2f %8.2f\n", b, a / 1000, u / 1000,
            s / 1000, b / a, b / u, b / s, a / u, a / s
        printf "(each round'"'"'s median in ms: tcp%s; ucx%s; ucx shm%s)\n", runs["tcpn"], runs["ucxn"], runs["ucxy"]
        printf "(MB/s = 1e6 B/s; ratios of rates, > 1: ucx faster)\n"
    }' | table_out heal_ucx.txt || status=1
exit $status
