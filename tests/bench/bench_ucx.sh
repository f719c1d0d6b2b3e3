# tests/bench/bench_ucx.sh - FT_Allreduce on the ucx backend against the tcp
# ring (issue 37, doc/PERFORMANCE.md): 2 groups of one rank (mode A, each
# its own `mpirun -np 1`), bench_allreduce ft up to 64 MiB (BENCH_QUICK:
# 2 MiB), four variants run in interleaved rounds so that one run decides
# (tcp; ucx as the library sets it up: tcp/lo for messages and cross-memory
# attach for the rendezvous data, src/comm/ucx_lib.c; ucx with
# UCX_POSIX_ERROR_HANDLING=y: shared memory for the messages; ucx with
# UCX_CMA_MEMORY_INVALIDATE=n: UCX 1.13's own choice, tcp/lo alone, as
# before the library set it), ROUNDS rounds (BENCH_QUICK: 1).  Per size: the median over the rounds of each run's median; the bus
# bandwidth 2(n-1)/n * bytes/time and the ratio of each ucx variant's bus
# bandwidth to tcp's (> 1: ucx faster).  With BENCH_UCX_BASE (the build
# directory of another tree, bench_allreduce built there: the library
# before a change), its ucx runs as two more variants in the same rounds
# (ucx0, ucx0 shm), and their ratios to tcp follow.  Skipped (a note) in a
# build without UCX.
. "$(dirname "$0")/bench_common.sh"
bench_selected ucx || exit 0
grep -q '^#define FTMPI_HAVE_UCX 1' "$top_builddir/ftmpi_config.h" 2>/dev/null || {
    note "built without UCX: nothing to measure"
    exit 0
}

NP=2
MAX=64m
REPS=5
ROUNDS=3
if [ -n "$BENCH_QUICK" ]; then
    MAX=2m
    REPS=3
    ROUNDS=1
fi
PROG=$BENCH_BIN/bench_allreduce
RUN_TIMEOUT=300
[ -x "$PROG" ] || { note "missing $PROG"; exit 1; }
PROG0=
VARIANTS="tcp:n ucx:n ucx:y ucxc:n"
if [ -n "$BENCH_UCX_BASE" ]; then
    PROG0=$BENCH_UCX_BASE/tests/bench/bench_allreduce
    [ -x "$PROG0" ] || { note "missing $PROG0 (BENCH_UCX_BASE)"; exit 1; }
    VARIANTS="$VARIANTS ucx0:n ucx0:y"
fi

# run BACKEND POSIX_EH OUTPREFIX [PROGRAM]: NP groups of one rank; RESULT
# lines of replica rank 0 into OUTPREFIX.res.  CMA (n or empty): UCX's
# UCX_CMA_MEMORY_INVALIDATE for this run (empty: the library's default).
run() {
    _prog=${4:-$PROG}
    start_lighthouse "$3.lh" --min-replicas "$NP" --join-timeout-ms 30000 \
        --heartbeat-timeout-ms 30000 --quorum-tick-ms 10 || return 1
    _pids=""
    _i=0
    while [ $_i -lt "$NP" ]; do
        bg_group "$3.g$_i" env FTMPI_LIGHTHOUSE="$LH_ADDR" FTMPI_REPLICA_ID="u$_i" \
            FTMPI_BACKEND="$1" UCX_POSIX_ERROR_HANDLING="$2" ${CMA:+UCX_CMA_MEMORY_INVALIDATE=$CMA} \
            timeout -s KILL $RUN_TIMEOUT \
            "$MPIRUN" --oversubscribe --bind-to none -np 1 \
            -x FTMPI_LIGHTHOUSE -x FTMPI_REPLICA_ID -x FTMPI_BACKEND -x FTMPI_LOG_LEVEL \
            -x UCX_POSIX_ERROR_HANDLING "$_prog" ft --max "$MAX" --reps "$REPS"
        _pids="$_pids $BG_PID"
        _i=$((_i + 1))
    done
    _ok=0
    for _p in $_pids; do
        wait "$_p" || _ok=1
    done
    stop_lighthouse
    cat "$3".g* | grep '^RESULT' >"$3.res"
    if [ $_ok -ne 0 ] || [ ! -s "$3.res" ]; then
        note "$1 (UCX_POSIX_ERROR_HANDLING=$2) failed:"
        tail -n 5 "$3".g* "$3.lh" >&2
        return 1
    fi
}

: >"$BENCH_OUT/ucx.txt"
echo "# bench_ucx $(date -u +%Y-%m-%dT%H:%M:%SZ) $BENCH_MACHINE; np=$NP reps=$REPS rounds=$ROUNDS max=$MAX${PROG0:+ base=$BENCH_UCX_BASE}" |
    table_out ucx.txt
status=0
r=1
while [ $r -le "$ROUNDS" ]; do
    for v in $VARIANTS; do
        b=${v%:*} eh=${v#*:} prog=$PROG CMA=
        [ "$b" = ucx0 ] && b=ucx prog=$PROG0
        [ "$b" = ucxc ] && b=ucx CMA=n
        note "round $r: ${v%:*} (UCX_POSIX_ERROR_HANDLING=$eh${CMA:+ UCX_CMA_MEMORY_INVALIDATE=$CMA})"
        run "$b" "$eh" "$BT/${v%:*}$eh.r$r" "$prog" || status=1
    done
    r=$((r + 1))
done
# bytes, then per variant the median (over rounds) of its median_us
cat "$BT"/*.res >/dev/null 2>&1 || exit 1
awk -v np=$NP -v base="$PROG0" '
    function med(list,   n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
            t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n ? a[int((n + 1) / 2)] : ""
    }
    FNR == 1 { v = FILENAME; sub(/.*\//, "", v); sub(/\.r[0-9]+\.res$/, "", v) }
    { if (!($2 in seen)) { seen[$2] = 1; order[++k] = $2 } t[v, $2] = t[v, $2] " " $4 }
    END {
        printf "%10s %11s %11s %11s %11s %9s %9s %9s %8s %8s %8s", "bytes", "tcp_us", "ucx_us",
            "ucxshm_us", "nocma_us", "tcp_bus", "ucx_bus", "shm_bus", "ucx/tcp", "shm/tcp",
            "nocma/tcp"
        if (base != "")
            printf " %11s %11s %8s %8s", "ucx0_us", "ucx0shm_us", "ucx0/tcp", "shm0/tcp"
        printf "\n"
        for (i = 1; i <= k; i++) {
            b = order[i]; a = med(t["tcpn", b]); u = med(t["ucxn", b]); s = med(t["ucxy", b])
            c = med(t["ucxcn", b])
            if (a + 0 == 0 || u + 0 == 0 || s + 0 == 0 || c + 0 == 0) continue
            f = 2 * (np - 1) / np * b
            printf "%10d %11.1f %11.1f %11.1f %11.1f %9.1f %9.1f %9.1f %8.2f %8.2f %8.2f", b, a, u,
                s, c, f / a, f / u, f / s, a / u, a / s, a / c
            u0 = med(t["ucx0n", b]); s0 = med(t["ucx0y", b])
            if (base != "" && u0 + 0 > 0 && s0 + 0 > 0)
                printf " %11.1f %11.1f %8.2f %8.2f", u0, s0, a / u0, a / s0
            printf "\n"
        }
        printf "(bus bandwidth in MB/s = 1e6 B/s; ratios of bus bandwidth, > 1: ucx faster)\n"
    }' "$BT"/*.res | table_out ucx.txt
exit $status
