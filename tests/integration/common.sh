# tests/integration/common.sh - helpers for the integration tests (POSIX sh;
# `make check` runs the tests with $(SHELL), dash on Debian).  Source it first:
#
#     . "$top_srcdir/tests/integration/common.sh"
#
# It sets top_builddir/top_srcdir when run by hand, makes $TEST_TMPDIR (removed
# at exit), and installs an EXIT trap that kills every pid and process group
# registered with register_pid/register_pgid, and then every process that
# still carries this run's FTI_TEST_TAG in its environment (all the test
# started, mpirun's ranks included, unless a process cleared its
# environment).  A test that needs more cleanup adds a command with
# at_cleanup "CMD" (do not replace the trap).
#
#   die MSG...                 print "FAIL (test): MSG" and exit 1
#   skip MSG...                print "SKIP (test): MSG" and exit 77
#   need_mpirun                skip unless $MPIRUN names an mpirun
#   need_mpi_impl IMPL REASON  skip unless the launcher is IMPL's (openmpi,
#                              mpich); MPIRUN under MPICH: see need_mpi_impl
#   need_cmd NAME...           skip unless each NAME is on the PATH
#   need_test_hooks            skip unless configured with --enable-test-hooks
#   register_pid PID           kill PID (SIGKILL) at exit
#   register_pgid PGID         kill process group PGID (SIGKILL) at exit
#   at_cleanup CMD             run CMD (eval) at exit, before the kills
#   pid_alive PID              true while PID runs (a zombie counts as gone)
#   wait_pid_timeout PID SECS  wait until PID is gone; false if it still runs
#   wait_until SECS CMD...     run CMD every 50 ms until it succeeds; false on timeout
#   file_has FILE PATTERN      true when FILE exists and a line matches (grep -E)
#   count_lines FILE PATTERN   number of lines of FILE matching PATTERN (0 if none)
#
# For the tests that run the library (e2e_lib.sh, modeb_lib.sh):
#   lib_test_env               default small FTMPI_* deadlines (so that every test
#                              takes seconds) and what `make check` sets for
#                              mpirun, all exported; MPIRUN if unset
#   sgd_step FILE              last committed step ft_sgd printed in FILE
#                              ("step N loss ..."), 0 if none
#   sgd_failures FILE          last "failures survived N" in FILE, 0 if none
#   sgd_final_lines FILE       the "final replica=ID rank=G step=S checksum=C"
#                              lines of FILE's last run (after its last
#                              "initial loss" line; ft_sgd and e2e_allreduce
#                              print one per rank at the end)
#   sgd_final_check N FILE...  the final lines of the FILEs are N, one per
#                              (ID, G), all with the same S and C; prints
#                              "N ranks agree: step S, checksum C", or why
#                              not and returns 1

: "${top_builddir:=.}"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
# --enable-sanitizers: LeakSanitizer checks the processes a test starts
# (lighthouse, tools, test programs), except for what Open MPI, PMIx and
# hwloc keep until exit (tests/lsan.supp names their libraries, never
# ours; san_full_stacks below).  MPI ranks are not leak-checked: Open MPI's
# plugins leak from their own threads and are unloaded before
# LeakSanitizer looks, so no suppression can name them (need_mpirun and
# lib_test_env turn leaks off unless the caller set ASAN_OPTIONS).  ASan's
# and UBSan's errors always fail.  A build without the sanitizers ignores
# all three.
# FTI_ASAN_DEFAULT carries "these options are common.sh's own" into a test
# that a test runs (test_e2e_ucx_scenarios runs test_e2e_sigstop): without
# it the inner test took the outer's default for the user's choice and kept
# the leak check on in its MPI ranks, whose plugins' leaks then failed them
_fti_asan_default=
if [ -z "${ASAN_OPTIONS+set}" ] || [ "${FTI_ASAN_DEFAULT:-}" = 1 ]; then
    ASAN_OPTIONS=detect_leaks=1
    _fti_asan_default=1
    FTI_ASAN_DEFAULT=1
    export FTI_ASAN_DEFAULT
fi
: "${UBSAN_OPTIONS:=print_stacktrace=1}"
: "${LSAN_OPTIONS:=suppressions=$top_srcdir/tests/lsan.supp:print_suppressions=0}"
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
# UCX's memory hooks (libucm, loaded with the ucx backend and by ftmpi-info,
# which lists UCX's transports) leave a thread whose dynamic TLS crashes
# LeakSanitizer's tracer at exit ("Tracer caught signal 11 ... LeakSanitizer
# has encountered a fatal error"); UCX's own advice for sanitizers is to turn
# them off, which the backend needs nothing of here (no registration cache
# over tcp and shared memory).  Only in a build with the sanitizers.
if [ -z "${UCX_MEM_MALLOC_HOOKS+set}" ] && [ -x "$top_builddir/ftmpi-info" ] &&
    ldd "$top_builddir/ftmpi-info" 2>/dev/null | grep -q 'libasan\.so'; then
    UCX_MEM_MALLOC_HOOKS=no
    UCX_MEM_MMAP_HOOK_MODE=none
    export UCX_MEM_MALLOC_HOOKS UCX_MEM_MMAP_HOOK_MODE
fi
TEST_NAME=$(basename "$0" .sh)

die() {
    echo "FAIL ($TEST_NAME): $*" >&2
    exit 1
}

skip() {
    echo "SKIP ($TEST_NAME): $*" >&2
    exit 77
}

# tests that start MPI ranks: no leak check (see ASAN_OPTIONS above)
_fti_rank_leaks_off() {
    if [ -n "$_fti_asan_default" ]; then
        ASAN_OPTIONS=detect_leaks=0
        export ASAN_OPTIONS
    fi
}

# san_full_stacks: for a test whose programs load hwloc's plugins (hwloc
# unloads them before exit, and they leak): allocation stacks recorded with
# the slow unwinder reach libhwloc.so, which tests/lsan.supp names
san_full_stacks() {
    if [ -n "$_fti_asan_default" ]; then
        ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0
        export ASAN_OPTIONS
    fi
}

need_mpirun() {
    _fti_rank_leaks_off
    [ -n "$MPIRUN" ] || skip "no mpirun (MPIRUN is empty: configure found none)"
    [ -x "$MPIRUN" ] || command -v "$MPIRUN" >/dev/null 2>&1 || skip "mpirun '$MPIRUN' not runnable"
}

# The launcher's MPI (configure's FTI_MPI_IMPL under make check; by hand,
# what "$MPIRUN --version" says): openmpi, mpich or unknown.  The tests
# write their mpirun lines in Open MPI's words (-x, --enable-recovery,
# --mca); under MPICH, MPIRUN becomes mpirun_hydra.sh, which says them in
# hydra's (its header lists them) and execs the real launcher,
# FTI_REAL_MPIRUN.
#   need_mpi_impl IMPL REASON  skip (77) with REASON unless the launcher is IMPL's
#   mpi_rank_pid PID W         pid of world rank W below launcher PID
#   descendants PID            every process below PID
#   mpi_cxx, mpi_fort          the MPI's C++, Fortran wrapper (empty if none)
#   FTI_LAUNCHER               ompi4, prte (Open MPI 5: MPIRUN is
#                              mpirun_prte.sh) or hydra
#   need_kill_recovery WHAT    skip unless survivors of a SIGKILL go on in one job
: "${MPIRUN=$(command -v mpirun 2>/dev/null)}"
if [ -z "${FTI_MPI_IMPL:-}" ] || [ "$FTI_MPI_IMPL" = unknown ]; then
    case $("${FTI_REAL_MPIRUN:-${MPIRUN:-false}}" --version 2>&1 </dev/null | head -n 5) in
    *"Open MPI"* | *OpenRTE* | *PRRTE*) FTI_MPI_IMPL=openmpi ;;
    *HYDRA* | *MPICH* | *"Intel(R) MPI"*) FTI_MPI_IMPL=mpich ;;
    *) FTI_MPI_IMPL=unknown ;;
    esac
fi
if [ "$FTI_MPI_IMPL" = mpich ] && [ -n "$MPIRUN" ] && [ -z "${FTI_REAL_MPIRUN:-}" ]; then
    FTI_REAL_MPIRUN=$MPIRUN
    MPIRUN=$top_srcdir/tests/integration/mpirun_hydra.sh
    export FTI_REAL_MPIRUN
fi
# Open MPI 5's launcher (PRRTE's mpirun): mpirun_prte.sh says 4.1's words in
# its (its header lists them); FTI_LAUNCHER: ompi4, prte (Open MPI 5), hydra
if [ -z "${FTI_LAUNCHER:-}" ]; then
    FTI_LAUNCHER=ompi4
    [ "$FTI_MPI_IMPL" = mpich ] && FTI_LAUNCHER=hydra
    if [ "$FTI_MPI_IMPL" = openmpi ] && [ -n "$MPIRUN" ]; then
        case $("${FTI_REAL_MPIRUN:-$MPIRUN}" --version 2>&1 </dev/null | head -n 2) in
        *"(Open MPI) "[5-9]* | *PRRTE*) FTI_LAUNCHER=prte ;;
        esac
    fi
fi
if [ "$FTI_LAUNCHER" = prte ] && [ -n "$MPIRUN" ] && [ -z "${FTI_REAL_MPIRUN:-}" ]; then
    FTI_REAL_MPIRUN=$MPIRUN
    MPIRUN=$top_srcdir/tests/integration/mpirun_prte.sh
    export FTI_REAL_MPIRUN
fi
export FTI_MPI_IMPL MPIRUN FTI_LAUNCHER
# Mode B where the MPI cannot keep the survivors of a dead rank (MPICH 4.0.2:
# doc/USER_GUIDE.md, "Mode B and MPICH") makes FT_Init refuse unless FTMPI_MODEB_ALLOW_NO_RECOVERY=1:
# the tests of healthy mode-B runs say so there (a test that kills a rank
# checks need_kill_recovery; test_modeb_hydra_kill.sh sets it to 0)
if [ "$FTI_MPI_IMPL" != openmpi ]; then
    : "${FTMPI_MODEB_ALLOW_NO_RECOVERY:=1}"
    export FTMPI_MODEB_ALLOW_NO_RECOVERY
fi

# mpi_rank_pid PID W: the pid of world rank W among the processes below
# PID (a launcher; Open MPI's ranks are its children, hydra's its proxy's,
# each in a session of its own), found by the rank its environment names
# (OMPI_COMM_WORLD_RANK, PMI_RANK); empty if none
mpi_rank_pid() {
    for _p in $(descendants "$1"); do
        if tr '\0' '\n' <"/proc/$_p/environ" 2>/dev/null | grep -Eqx "(OMPI_COMM_WORLD_RANK|PMI_RANK)=$2"; then
            echo "$_p"
            return 0
        fi
    done
    return 0
}

# descendants PID: every process below PID (children first), one a line
descendants() {
    for _c in $(pgrep -P "$1"); do
        echo "$_c"
        descendants "$_c"
    done
}

# mpi_cxx: the C++ compiler wrapper of the launcher's MPI (Debian names
# them mpic++.openmpi and mpicxx.mpich; mpic++ is the default MPI's),
# empty if none
mpi_cxx() {
    case $FTI_LAUNCHER in
    hydra) command -v mpicxx.mpich || command -v mpicxx || true ;;
    prte) _fti_wrapper mpic++ ;;
    *) command -v mpic++.openmpi || command -v mpic++ || true ;;
    esac
}

# mpi_fort: the same for Fortran (mpifort.openmpi, mpifort.mpich)
mpi_fort() {
    case $FTI_LAUNCHER in
    hydra) command -v mpifort.mpich || command -v mpif90.mpich || true ;;
    prte) _fti_wrapper mpifort ;;
    *) command -v mpifort.openmpi || command -v mpifort || true ;;
    esac
}

# _fti_wrapper NAME: NAME beside the launcher (Open MPI 5 in a folder of its
# own: Debian's mpic++ would compile against 4.1), empty if none
_fti_wrapper() {
    _w=$(dirname "$(command -v "${FTI_REAL_MPIRUN:-$MPIRUN}")")/$1
    [ -x "$_w" ] && echo "$_w"
    true
}

# need_kill_recovery WHAT: skip unless the launcher lets the survivors of a
# SIGKILLed rank go on within one job (Open MPI 4.1's --enable-recovery);
# MPICH's hydra -disable-auto-cleanup keeps the job, but MPICH 4.0.2's ranks
# end with the dead one (doc/INSTALL.md)
need_kill_recovery() {
    [ "$FTI_MPI_IMPL" = openmpi ] ||
        skip "$1 needs the survivors of a SIGKILLed rank to go on in one job: Open MPI's mpirun --enable-recovery; this build's launcher is $FTI_MPI_IMPL's (doc/INSTALL.md)"
}

need_mpi_impl() {
    [ "$FTI_MPI_IMPL" = "$1" ] || skip "needs $1's launcher, this build's is $FTI_MPI_IMPL's: $2"
}

# san_runtime LIB: the path of the ASan runtime LIB is linked with
# (configure --enable-sanitizers), empty without; san_preload LIB: what
# LD_PRELOAD needs to load LIB into a program built without the sanitizers
# (hpcc, mpifort's, an installed user's program): LIB, or "RUNTIME:LIB",
# since ASan's runtime must come first in the initial library list
san_runtime() {
    ldd "$1" 2>/dev/null | sed -n 's/^[[:space:]]*libasan\.so[.0-9]* => \([^ ]*\) .*/\1/p' | head -n 1
}
san_preload() {
    _rt=$(san_runtime "$1")
    echo "${_rt:+$_rt:}$1"
}

# have_test_hooks: whether the library was configured with
# --enable-test-hooks (the FTMPI_TEST_* fault hooks; configure.ac)
have_test_hooks() {
    grep -q '^#define FTMPI_TEST_HOOKS 1' "$top_builddir/ftmpi_config.h" 2>/dev/null
}

# need_test_hooks: skip unless have_test_hooks
need_test_hooks() {
    have_test_hooks ||
        skip "built without configure --enable-test-hooks (the FTMPI_TEST_* hooks this test uses)"
}

need_cmd() {
    for _c in "$@"; do
        command -v "$_c" >/dev/null 2>&1 || skip "'$_c' not found"
    done
}

_fti_pids=""
_fti_pgids=""
_fti_cleanups=""

register_pid() { _fti_pids="$_fti_pids $1"; }
register_pgid() { _fti_pgids="$_fti_pgids $1"; }
at_cleanup() {
    _fti_cleanups="$_fti_cleanups
$1"
}

_fti_cleanup() {
    _rc=$?
    trap - EXIT
    [ -n "$_fti_cleanups" ] && eval "$_fti_cleanups" >/dev/null 2>&1
    for _g in $_fti_pgids; do
        kill -KILL "-$_g" 2>/dev/null # no "--": dash refuses it
    done
    for _p in $_fti_pids; do
        kill -KILL "$_p" 2>/dev/null
    done
    _fti_kill_tagged
    [ -n "$TEST_TMPDIR" ] && [ -z "$KEEP_TMPDIR" ] && rm -rf "$TEST_TMPDIR"
    exit $_rc
}
# every process started from here on inherits the tag
_fti_kill_tagged() {
    for _i in 1 2 3; do
        _left=0
        for _e in $(grep -lzx "FTI_TEST_TAG=$FTI_TEST_TAG" /proc/[0-9]*/environ 2>/dev/null); do
            _p=${_e#/proc/}
            _p=${_p%/environ}
            [ "$_p" = "$$" ] && continue
            kill -KILL "$_p" 2>/dev/null && _left=1
        done
        [ $_left = 0 ] && break
        sleep 0.05
    done
}
trap _fti_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

TEST_TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/ftmpi-$TEST_NAME.XXXXXX") || die "mktemp failed"
FTI_TEST_TAG=$TEST_TMPDIR
export FTI_TEST_TAG
# Open MPI 5's launcher (prterun) keeps its session under <base>/ompi.<its pid> and
# refuses to start when a file of that folder exists ("The PMIx server's listener
# thread failed to start", nothing else): a prterun killed by a test leaves its
# folder in /tmp, and with pid_max 32768 a later prterun of a long run gets the same
# pid. Each test's launchers keep their sessions in its own folder (removed at its
# end); Open MPI 4.1 and MPICH do not read this setting.
PRTE_MCA_prte_tmpdir_base=$TEST_TMPDIR
export PRTE_MCA_prte_tmpdir_base

pid_alive() {
    kill -0 "$1" 2>/dev/null || return 1
    # a zombie (exited, not yet waited for by its parent) is gone for us
    if [ -r "/proc/$1/stat" ]; then
        _st=$(sed -n 's/^.*) \(.\) .*$/\1/p' "/proc/$1/stat" 2>/dev/null)
        [ "$_st" = Z ] && return 1
    fi
    return 0
}

wait_pid_timeout() {
    _end=$(($(date +%s) + $2))
    while pid_alive "$1"; do
        [ "$(date +%s)" -ge "$_end" ] && return 1
        sleep 0.05
    done
    return 0
}

wait_until() {
    _secs=$1
    shift
    _end=$(($(date +%s) + _secs))
    until "$@"; do
        [ "$(date +%s)" -ge "$_end" ] && return 1
        sleep 0.05
    done
    return 0
}

file_has() { [ -f "$1" ] && grep -Eq -- "$2" "$1"; }

count_lines() {
    if [ -f "$1" ]; then
        grep -Ec -- "$2" "$1"
    else
        echo 0
    fi
}

lib_test_env() {
    : "${FTMPI_TIMEOUT_MS:=2000}"
    : "${FTMPI_QUORUM_TIMEOUT_MS:=5000}"
    : "${FTMPI_HEARTBEAT_MS:=100}"
    : "${FTMPI_CONNECT_TIMEOUT_MS:=1000}"
    : "${FTMPI_HEAL_TIMEOUT_MS:=10000}"
    : "${FTMPI_LOG_LEVEL:=info}"
    export FTMPI_TIMEOUT_MS FTMPI_QUORUM_TIMEOUT_MS FTMPI_HEARTBEAT_MS FTMPI_CONNECT_TIMEOUT_MS \
        FTMPI_HEAL_TIMEOUT_MS FTMPI_LOG_LEVEL
    : "${OMPI_ALLOW_RUN_AS_ROOT:=1}" "${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:=1}"
    : "${OMPI_MCA_btl_tcp_if_include:=lo}" "${OMPI_MCA_oob_tcp_if_include:=lo}"
    : "${OMPI_MCA_rmaps_base_oversubscribe:=1}"
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_btl_tcp_if_include \
        OMPI_MCA_oob_tcp_if_include OMPI_MCA_rmaps_base_oversubscribe
    : "${MPIRUN:=$(command -v mpirun 2>/dev/null)}"
    _fti_rank_leaks_off
}

sgd_step() {
    _s=$(sed -n 's/^step \([0-9][0-9]*\) loss.*/\1/p' "$1" 2>/dev/null | tail -n 1)
    echo "${_s:-0}"
}

sgd_failures() {
    _n=$(sed -n 's/^failures survived \([0-9][0-9]*\).*/\1/p' "$1" | tail -n 1)
    echo "${_n:-0}"
}

sgd_final_lines() {
    [ -f "$1" ] || return 0
    awk '/^initial loss/ { n = 0 } /^final replica=/ { l[n++] = $0 }
        END { for (i = 0; i < n; i++) print l[i] }' "$1"
}

sgd_final_check() {
    _want=$1
    shift
    for _f in "$@"; do
        sgd_final_lines "$_f"
    done | awk -v want="$_want" '
        {
            split("", v)
            for (i = 2; i <= NF; i++) {
                split($i, kv, "=")
                v[kv[1]] = kv[2]
            }
            k = v["replica"] " rank " v["rank"]
            if (v["step"] == "" || v["checksum"] == "") {
                printf "malformed final line: %s\n", $0
                bad = 1
                exit
            }
            if (seen[k]++) {
                printf "replica %s printed two final lines\n", k
                bad = 1
                exit
            }
            if (n == 0) {
                step = v["step"]
                sum = v["checksum"]
                first = $0
            } else if (v["step"] != step || v["checksum"] != sum) {
                printf "ranks disagree: \"%s\" and \"%s\"\n", first, $0
                bad = 1
                exit
            }
            n++
        }
        END {
            if (bad)
                exit 1
            if (n != want) {
                printf "%d final lines, want %d (one per live rank)\n", n, want
                exit 1
            }
            printf "%d ranks agree: step %s, checksum %s\n", n, step, sum
        }'
}
