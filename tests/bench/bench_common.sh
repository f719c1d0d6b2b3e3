# tests/bench/bench_common.sh - helpers of the benchmark drivers (POSIX sh).
# Source it first:  . "$(dirname "$0")/bench_common.sh"
#
# Environment (all optional):
#   top_builddir   the build dir (default: the current directory, as `make
#                  bench` runs the drivers from it)
#   top_srcdir     the source dir (default: two levels above this script)
#   MPIRUN         mpirun to use (default: mpirun)
#   BENCH_QUICK=1  a smoke run: fewer sizes, groups and repetitions
#   BENCH_ONLY     run only the drivers named (allreduce quorum step recovery)
#   BENCH_OUT      where the tables and raw outputs go
#                  (default: $top_builddir/bench-results)
#   BENCH_KEEP=1   keep the scratch directory of the raw per-process outputs
#
# It installs an EXIT trap that kills every session started with bg_group
# and every pid given to register_pid (SIGKILL), and removes the scratch
# directory $BT.
#
#   bench_selected NAME        false unless BENCH_ONLY is empty or names NAME
#   note MSG...                print to stderr (progress)
#   table_out FILE             tee stdin to stdout and $BENCH_OUT/FILE
#   register_pid PID           SIGKILL PID at exit
#   bg_group OUT CMD...        run CMD in its own session (setsid), stdout
#                              and stderr to OUT; sets BG_PID (= its session id)
#   kill_group SID             SIGKILL every process of that session, reap it
#   wait_pids SECS PID...      wait until every PID has exited; false on timeout
#   start_lighthouse OUT FLAGS...  ftmpi-lighthouse --bind 127.0.0.1:0 FLAGS;
#                              sets LH_PID and LH_ADDR (host:port)
#   stop_lighthouse            SIGTERM it and wait
#   now_us                     wall-clock microseconds (bench_stamp --now)
#   machine                    "HOST, N cores, load A B C" (other work skews
#                              the results on a small machine); BENCH_MACHINE
#                              holds it as it was when the driver started
#   mpirun1 ARGS...            $MPIRUN with the options every run here uses

: "${top_builddir:=$(pwd)}"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${MPIRUN:=mpirun}"
: "${BENCH_OUT:=$top_builddir/bench-results}"
BENCH_NAME=$(basename "$0" .sh)
BENCH_BIN=$top_builddir/tests/bench
LIGHTHOUSE=$top_builddir/ftmpi-lighthouse

OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OMPI_MCA_btl_tcp_if_include=lo
OMPI_MCA_oob_tcp_if_include=lo
OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_btl_tcp_if_include \
    OMPI_MCA_oob_tcp_if_include OMPI_MCA_rmaps_base_oversubscribe
# logs quiet unless asked for
: "${FTMPI_LOG_LEVEL:=error}"
export FTMPI_LOG_LEVEL

note() { echo "[$BENCH_NAME] $*" >&2; }

bench_selected() {
    [ -z "$BENCH_ONLY" ] && return 0
    case " $BENCH_ONLY " in *" $1 "*) return 0 ;; esac
    return 1
}

_bench_pids=""
_bench_pgids=""
register_pid() { _bench_pids="$_bench_pids $1"; }

_bench_cleanup() {
    _rc=$?
    trap - EXIT
    for _g in $_bench_pgids; do _kill_session "$_g"; done
    for _p in $_bench_pids; do kill -KILL "$_p" 2>/dev/null; done
    [ -n "$BT" ] && [ -z "$BENCH_KEEP" ] && rm -rf "$BT"
    [ -n "$BENCH_KEEP" ] && [ -n "$BT" ] && note "raw outputs kept in $BT"
    exit $_rc
}
trap _bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$BENCH_OUT" || exit 1
BT=$(mktemp -d "${TMPDIR:-/tmp}/ftmpi-$BENCH_NAME.XXXXXX") || exit 1

table_out() { tee -a "$BENCH_OUT/$1"; }

bg_group() {
    _out=$1
    shift
    # a shell that waits for CMD and exits, so a CMD killed by a signal
    # ends it normally (bash reports no "Killed" job line)
    setsid sh -c '"$@"; exit $?' bg_group "$@" >"$_out" 2>&1 </dev/null &
    BG_PID=$!
    _bench_pgids="$_bench_pgids $BG_PID"
}

# SIGKILL to every process of session $1 (bg_group's setsid): mpirun puts
# its ranks in process groups of their own, but they stay in the session.
# The members go first, so the leader (timeout) ends by itself and bash
# prints no "Killed" line; the leader is killed only if it stays.
_kill_session() {
    for _q in $(pgrep -s "$1" 2>/dev/null); do
        [ "$_q" = "$1" ] || kill -KILL "$_q" 2>/dev/null
    done
    wait_pids 2 "$1" || {
        kill -KILL "-$1" 2>/dev/null # no "--": dash's kill refuses it
        kill -KILL "$1" 2>/dev/null
    }
    return 0
}

kill_group() {
    _kill_session "$1"
    # braces: bash reports "Killed" on the shell's stderr, not wait's
    wait_pids 10 "$1" && { wait "$1"; } 2>/dev/null
    return 0
}

_alive() {
    kill -0 "$1" 2>/dev/null || return 1
    _st=$(sed -n 's/^.*) \(.\) .*$/\1/p' "/proc/$1/stat" 2>/dev/null)
    [ "$_st" != Z ]
}

wait_pids() {
    _end=$(($(date +%s) + $1))
    shift
    for _p in "$@"; do
        while _alive "$_p"; do
            [ "$(date +%s)" -ge "$_end" ] && return 1
            sleep 0.05
        done
    done
    return 0
}

start_lighthouse() {
    _out=$1
    shift
    [ -x "$LIGHTHOUSE" ] || { note "no $LIGHTHOUSE"; return 1; }
    : >"$_out"
    "$LIGHTHOUSE" --bind 127.0.0.1:0 --log-level warn "$@" >"$_out" 2>&1 </dev/null &
    LH_PID=$!
    register_pid "$LH_PID"
    LH_ADDR=""
    _i=0
    while [ $_i -lt 100 ]; do
        LH_ADDR=$(sed -n 's/^ftmpi-lighthouse listening on \([^ ]*\).*$/\1/p' "$_out")
        [ -n "$LH_ADDR" ] && return 0
        _alive "$LH_PID" || break
        sleep 0.05
        _i=$((_i + 1))
    done
    note "the lighthouse did not start:"
    cat "$_out" >&2
    return 1
}

stop_lighthouse() {
    [ -n "$LH_PID" ] || return 0
    kill -TERM "$LH_PID" 2>/dev/null
    wait_pids 10 "$LH_PID" || kill -KILL "$LH_PID" 2>/dev/null
    { wait "$LH_PID"; } 2>/dev/null
    LH_PID=""
    return 0
}

now_us() { "$BENCH_BIN/bench_stamp" --now; }

machine() { echo "$(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"; }
BENCH_MACHINE=$(machine)

mpirun1() { "$MPIRUN" --oversubscribe --bind-to none "$@"; }

# Programs every driver needs.
for _p in bench_stamp; do
    [ -x "$BENCH_BIN/$_p" ] || { note "missing $BENCH_BIN/$_p (run 'make bench')"; exit 1; }
done
