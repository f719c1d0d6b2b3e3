#!/bin/sh
# tests/bench/bench_ucx_nodes.sh - FT_Allreduce on the ucx backend against
# the tcp ring across two nodes (issue 37's second bar, doc/PERFORMANCE.md
# section 14): the nodes of tests/nodes (network, UTS, mount and pid
# namespaces joined by veth pairs to a bridge, UCX over TCP on eth0 as on a
# cluster without InfiniBand), the lighthouse on node0, one group of one rank
# on each node (mode A, its own `mpirun -np 1` inside its node),
# bench_allreduce ft up to 64 MiB (BENCH_QUICK: 2 MiB), the two backends in
# interleaved rounds so that one run decides.  Per size: the median over the
# rounds of each run's median, the bus bandwidth and ucx/tcp (> 1: ucx
# faster).  Needs root and namespaces (as `make check-nodes`); elsewhere a
# note and nothing measured.  Selected by BENCH_ONLY=ucx or ucx_nodes.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$(pwd)}
: "${BENCH_OUT:=$top_builddir/bench-results}"
_note() { echo "[bench_ucx_nodes] $*" >&2; }
case " ${BENCH_ONLY:-ucx} " in *" ucx "* | *" ucx_nodes "*) ;; *) exit 0 ;; esac
grep -q '^#define FTMPI_HAVE_UCX 1' "$top_builddir/ftmpi_config.h" 2>/dev/null || {
    _note "built without UCX: nothing to measure"
    exit 0
}
# the measurement runs in a second shell: the test library's skip (77: not
# root, no namespaces, no sshd) is a note here, not a failed `make bench`
if [ -z "$_BUN_INNER" ]; then
    mkdir -p "$BENCH_OUT" || exit 1
    _BUN_INNER=1 top_srcdir=$top_srcdir top_builddir=$top_builddir BENCH_OUT=$BENCH_OUT \
        ${SHELL:-sh} "$0"
    rc=$?
    [ $rc -eq 77 ] && { _note "skipped: the nodes cannot be made here (above)"; exit 0; }
    exit $rc
fi

. "$top_srcdir/tests/nodes/nodes_lib.sh"
NODES_RUN=$(nodes_run_dir) || { _note "cannot make a run folder"; exit 1; }
TMPDIR=$NODES_RUN
export TMPDIR
. "$top_srcdir/tests/integration/common.sh"
at_cleanup nodes_down
at_cleanup "rm -rf $NODES_RUN"
need_mpirun
for _b in ftmpi-lighthouse tests/bench/bench_allreduce tests/nodes/node_init; do
    [ -x "$top_builddir/$_b" ] || die "$top_builddir/$_b is not built (make bench builds it)"
done
T=$TEST_TMPDIR
MAX=64m REPS=5 ROUNDS=${BENCH_UCX_NODES_ROUNDS:-5}
[ -z "$BENCH_QUICK" ] || { MAX=2m REPS=3 ROUNDS=1; }
nodes_init
nodes_up 2
(umask 077 && printf 'bench-nodes-4c1d8e7f2a9b6035\n' >"$T/token")
FTMPI_TOKEN_FILE=$T/token FTMPI_BIND_HOST=hostname FTMPI_UCX=1 FTMPI_TIMEOUT_MS=60000
FTMPI_LOG_LEVEL=${FTMPI_LOG_LEVEL:-info} # the lanes UCX took, below
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export FTMPI_TOKEN_FILE FTMPI_BIND_HOST FTMPI_UCX FTMPI_TIMEOUT_MS FTMPI_LOG_LEVEL \
    OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
machine="$(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# run BACKEND OUTPREFIX: the lighthouse on node0, group uK on nodeK
run() {
    _port=$((29600 + _runs))
    _runs=$((_runs + 1))
    on_node 0 timeout -k 5 600 "$top_builddir/ftmpi-lighthouse" --bind "node0:$_port" \
        --token-file "$T/token" --min-replicas 2 --join-timeout-ms 60000 \
        --heartbeat-timeout-ms 60000 --quorum-tick-ms 10 --log-level warn \
        >"$2.lh" 2>&1 </dev/null &
    _lh=$!
    register_pid $_lh
    _up() { file_has "$2.lh" 'listening on'; }
    wait_until 60 _up "$@" || { cat "$2.lh" >&2; die "the lighthouse did not start on node0"; }
    _pids=
    for _k in 0 1; do
        on_node $_k env FTMPI_LIGHTHOUSE="node0:$_port" FTMPI_REPLICA_ID="u$_k" FTMPI_BACKEND="$1" \
            timeout -s KILL 600 "$MPIRUN" --oversubscribe --bind-to none -np 1 \
            -x FTMPI_LIGHTHOUSE -x FTMPI_REPLICA_ID -x FTMPI_BACKEND -x FTMPI_LOG_LEVEL \
            -x FTMPI_TOKEN_FILE -x FTMPI_BIND_HOST -x FTMPI_UCX -x FTMPI_TIMEOUT_MS \
            "$top_builddir/tests/bench/bench_allreduce" ft --max "$MAX" --reps "$REPS" \
            >"$2.g$_k" 2>&1 </dev/null &
        _pids="$_pids $!"
        register_pid $!
    done
    _ok=0
    for _p in $_pids; do wait "$_p" || _ok=1; done
    kill -TERM $_lh 2>/dev/null
    wait_pid_timeout $_lh 10 || kill -KILL $_lh 2>/dev/null
    grep -h '^RESULT' "$2".g* >"$2.res"
    if [ $_ok -ne 0 ] || [ ! -s "$2.res" ]; then
        tail -n 5 "$2".g* "$2.lh" >&2
        die "FTMPI_BACKEND=$1 across the nodes failed (above)"
    fi
}

_runs=0
echo "# bench_ucx_nodes $(date -u +%Y-%m-%dT%H:%M:%SZ) $machine; 2 nodes (veth, UCX over tcp on eth0), np=2 reps=$REPS rounds=$ROUNDS max=$MAX" |
    tee -a "$BENCH_OUT/ucx_nodes.txt"
r=1
while [ $r -le $ROUNDS ]; do
    for b in tcp ucx; do
        _note "round $r: $b"
        run $b "$T/$b.r$r"
    done
    r=$((r + 1))
done
# the lanes UCX took across the nodes (ucx.c logs them once)
echo "# ucx lanes: $(grep -h 'to replica rank' "$T"/ucx.r1.g0 | head -n 1 | sed 's/.*choose); //')" |
    tee -a "$BENCH_OUT/ucx_nodes.txt"
awk '
    function med(list,   n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
            t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n ? a[int((n + 1) / 2)] : ""
    }
    FNR == 1 { v = FILENAME; sub(/.*\//, "", v); sub(/\.r[0-9]+\.res$/, "", v) }
    { if (!($2 in seen)) { seen[$2] = 1; order[++k] = $2 } t[v, $2] = t[v, $2] " " $4 }
    END {
        printf "%10s %11s %11s %9s %9s %8s\n", "bytes", "tcp_us", "ucx_us", "tcp_bus", "ucx_bus", "ucx/tcp"
        for (i = 1; i <= k; i++) {
            b = order[i]; a = med(t["tcp", b]); u = med(t["ucx", b])
            if (a == "" || u == "" || a + 0 == 0 || u + 0 == 0) continue
            printf "%10d %11.1f %11.1f %9.1f %9.1f %8.2f\n", b, a, u, b / a, b / u, a / u
        }
        printf "(2 ranks: bus bandwidth = bytes/time in MB/s; ratio of bus bandwidth, > 1: ucx faster)\n"
    }' "$T"/*.res | tee -a "$BENCH_OUT/ucx_nodes.txt"
