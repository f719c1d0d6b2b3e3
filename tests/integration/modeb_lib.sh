# tests/integration/modeb_lib.sh - helpers of the mode-B tests: one
# `mpirun --enable-recovery`, MPI_COMM_WORLD split into groups of
# FTMPI_GROUP_SIZE ranks, the last world rank running the lighthouse.
# POSIX sh.  Source it first; it sources common.sh:
#
#     . "$top_srcdir/tests/integration/modeb_lib.sh"
#     mb_init                          skip (77) without mpirun; paths, settings
#     mb_start NP R PROG [ARGS...]     mpirun --enable-recovery -np NP in its own session
#     mb_wait_step W N SECS            until world rank W printed "step >= N"
#     mb_kill W                        SIGKILL to world rank W (MB_KILL_MS: when)
#     mb_wait_line W PATTERN SECS      until W's stdout has a line matching PATTERN
#     mb_wait_end SECS                 mpirun ends within SECS; MB_RC = its status
#     mb_check_final W...              world ranks W (every live rank) end at the
#                                      same step with the same registered bytes
#
# Every rank's stdout and stderr are files (mpirun --output-filename):
# mb_out W, mb_err W.  The mpirun leads its own session, killed at exit
# with everything in it.
#
# Measured on Open MPI 4.1.4 (see README.md, "Mode B"): with
# --enable-recovery mpirun exits 0 even when a rank was killed or exited
# non-zero, so the tests read the ranks' output; without it mpirun kills
# every rank about 1 s after one dies.
#
# Settings (environment, small so that every test takes seconds):
#   FTMPI_TIMEOUT_MS=2000 FTMPI_QUORUM_TIMEOUT_MS=5000 FTMPI_HEARTBEAT_MS=100
#   FTMPI_LH_HEARTBEAT_TIMEOUT_MS=1000 FTMPI_LH_JOIN_TIMEOUT_MS=1000

. "$top_srcdir/tests/integration/common.sh"

lib_test_env
: "${FTMPI_LH_HEARTBEAT_TIMEOUT_MS:=1000}"
: "${FTMPI_LH_JOIN_TIMEOUT_MS:=1000}"
: "${FTMPI_LH_QUORUM_TICK_MS:=50}"
export FTMPI_LH_HEARTBEAT_TIMEOUT_MS FTMPI_LH_JOIN_TIMEOUT_MS FTMPI_LH_QUORUM_TICK_MS
# mode B: no lighthouse address
unset FTMPI_LIGHTHOUSE
# Open MPI 5 (mpirun_prte.sh): mode B on ULFM, --enable-recovery said as
# --with-ft ulfm --mca pml ob1 (what doc/INSTALL.md recommends there)
FTI_PRTE_RECOVERY=ulfm
export FTI_PRTE_RECOVERY

MB_T0=$(date +%s)

mb_now_ms() { date +%s%3N; }
mb_log() { echo "[$(($(date +%s) - MB_T0))s] $*"; }

mb_out() { echo "$TEST_TMPDIR/out/1/rank.$1/stdout"; }
mb_err() { echo "$TEST_TMPDIR/out/1/rank.$1/stderr"; }

# Prints the tail of every rank's output, then fails.
mb_fail() {
    for _d in "$TEST_TMPDIR"/out/1/rank.*; do
        [ -d "$_d" ] || continue
        for _f in "$_d/stdout" "$_d/stderr"; do
            [ -f "$_f" ] || continue
            echo "---- ${_d##*/}/${_f##*/} (last 20 lines)" >&2
            tail -n 20 "$_f" >&2
        done
    done
    die "$*"
}

mb_init() {
    need_mpirun
    MB_SGD=$top_builddir/examples/ft_sgd
    [ -x "$MB_SGD" ] || die "$MB_SGD is not built"
    MB_PID=
    MB_PACE=$TEST_TMPDIR/pace
}

# mb_pace N: ft_sgd --pace-file "$MB_PACE" holds every rank before the
# allreduce of step N until the test writes a larger number: a test that
# kills a rank "later" bounds the run so that it cannot end first on a
# loaded machine (written whole, then renamed).
mb_pace() {
    echo "$1" > "$MB_PACE.tmp" && mv -f "$MB_PACE.tmp" "$MB_PACE"
}

# mb_start NP R PROG [ARGS...]: FTMPI_GROUP_SIZE=R, -np NP.
mb_start() {
    _np=$1
    FTMPI_GROUP_SIZE=$2
    export FTMPI_GROUP_SIZE
    shift 2
    setsid "$MPIRUN" --enable-recovery -np "$_np" --bind-to none \
        --output-filename "$TEST_TMPDIR/out" "$@" >"$TEST_TMPDIR/mpirun.out" 2>&1 </dev/null &
    MB_PID=$!
    # mpirun leads its own session: this takes its ranks too
    at_cleanup "pkill -KILL -s $MB_PID"
    register_pid "$MB_PID"
    mb_log "mpirun --enable-recovery -np $_np (pid $MB_PID), FTMPI_GROUP_SIZE=$FTMPI_GROUP_SIZE: $(basename "$1")"
}

# The pid of world rank W (common.sh: mpi_rank_pid).
mb_rank_pid() { mpi_rank_pid "$MB_PID" "$1"; }

# Last committed step world rank W printed ("step N loss ..."), 0 if none.
mb_step() { sgd_step "$(mb_out "$1")"; }

_mb_step_ge() { [ "$(mb_step "$1")" -ge "$2" ]; }

mb_wait_step() {
    wait_until "$3" _mb_step_ge "$1" "$2" ||
        mb_fail "world rank $1 did not reach step $2 in $3 s (at $(mb_step "$1"))"
}

mb_wait_line() {
    wait_until "$3" file_has "$(mb_out "$1")" "$2" ||
        mb_fail "world rank $1 printed no line matching '$2' in $3 s"
}

# mb_kill W: SIGKILL to world rank W, as a node failure would.
mb_kill() {
    _p=$(mb_rank_pid "$1")
    [ -n "$_p" ] || mb_fail "world rank $1 has no process"
    MB_KILL_MS=$(mb_now_ms)
    kill -KILL "$_p"
    mb_log "SIGKILL to world rank $1 (pid $_p) at step $(mb_step "$1")"
}

# mb_wait_end SECS: mpirun ends within SECS; MB_RC is its exit status.
mb_wait_end() {
    wait_pid_timeout "$MB_PID" "$1" || mb_fail "mpirun still running after $1 s"
    wait "$MB_PID"
    MB_RC=$?
    mb_log "mpirun ended with status $MB_RC"
}

# mb_check_states DUMP W...: the --dump files DUMP.<replica id> of the groups
# whose group rank 0 is world rank W (and their .g files) are bitwise equal.
mb_check_states() {
    _dump=$1
    shift
    _ref=
    for _w in "$@"; do
        _id=$(sed -n 's/^initial loss [^ ]* replica \([^ ]*\) .*/\1/p' "$(mb_out "$_w")" | head -n 1)
        [ -n "$_id" ] || mb_fail "world rank $_w printed no replica id"
        for _f in "$_dump.$_id" "$_dump.$_id".[0-9]*; do
            [ -e "$_f" ] || continue
            [ -n "$_ref" ] || _ref=$_f
            cmp -s "$_ref" "$_f" || mb_fail "state $(basename "$_f") differs from $(basename "$_ref")"
        done
        [ -s "$_dump.$_id" ] || mb_fail "no state dump of group $_id"
    done
    mb_log "states bitwise equal across world ranks $* ($(wc -c <"$_ref") bytes)"
}

mb_failures() { sgd_failures "$(mb_out "$1")"; }

# mb_check_final W...: each world rank W printed one "final replica=ID
# rank=G step=S checksum=C" line, no other rank printed one (a lost group's
# ranks leave without), and all have the same S and C: every live rank of
# every group holds the same step and the same registered bytes.
mb_check_final() {
    for _w in "$@"; do
        _n=$(sgd_final_lines "$(mb_out "$_w")" | grep -c '^final replica=')
        [ "$_n" -eq 1 ] || mb_fail "world rank $_w: $_n final lines, want 1"
    done
    _msg=$(sgd_final_check $# "$TEST_TMPDIR"/out/1/rank.*/stdout) ||
        mb_fail "world ranks $*: $_msg"
    mb_log "final lines of world ranks $*: $_msg"
}
