# tests/chaos/chaos_lib.sh - helpers of the chaos soak (tests/chaos/chaos.sh).
# POSIX sh; sources tests/integration/e2e_lib.sh (lighthouse, groups under
# ftmpi-run, final-line checks) and adds:
#
#   chaos_rand N            R = a seeded draw in [0, N) (CHAOS_RNG: the state)
#   chaos_step ID           last step group ID printed, from the end of its log
#   chaos_leader            L = the largest step any chaos group printed
#   chaos_up ID             the group committed after its last fault
#   chaos_lh_sample         "fds fds-established rss_kB" of the lighthouse
#   chaos_lh_check WHEN     sample at the start/end of a lighthouse incarnation
#   chaos_fault KIND        apply one fault (kill_group kill_rank stop_group kill_lh)
#   chaos_check_no_leak     no process this run started is left
#
# The fault driver keeps per group the leader's step at its last fault
# (CHAOS_REC_<id>): the group is "up" again once it printed a later step.
# A group fault is applied only while at least two groups are up, so one
# always stays alive to heal the others from (no restart from scratch).

# shellcheck disable=SC2086,SC2046 # lists of groups, pids split on purpose
. "$top_srcdir/tests/integration/e2e_lib.sh"

CHAOS_GROUPS="g0 g1 g2"
CHAOS_KINDS="kill_group kill_rank stop_group kill_lh"

# A 31-bit linear congruential generator in shell arithmetic (64-bit in
# dash), so a seed replays the same draws on any machine and shell.
chaos_rand() {
    CHAOS_RNG=$(((CHAOS_RNG * 1103515245 + 12345) % 2147483648))
    R=$(((CHAOS_RNG / 65536) % $1))
}

# chaos_rand_range LO HI: R in [LO, HI]
chaos_rand_range() {
    chaos_rand $(($2 - $1 + 1))
    R=$((R + $1))
}

chaos_ms_sleep() { sleep "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))"; }

chaos_now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Last "step N loss" of a group, from its last 60 lines (the file grows to
# thousands of lines; the driver asks often); the whole file if none there.
chaos_step() {
    _f=$TEST_TMPDIR/$1.out
    _s=$(tail -n 60 "$_f" 2>/dev/null | sed -n 's/^step \([0-9][0-9]*\) loss.*/\1/p' | tail -n 1)
    [ -n "$_s" ] || _s=$(sgd_step "$_f")
    echo "${_s:-0}"
}

chaos_leader() {
    L=0
    for _lg in $CHAOS_GROUPS; do
        _ls=$(chaos_step "$_lg")
        [ "$_ls" -gt "$L" ] && L=$_ls
    done
    return 0
}

chaos_up() { [ "$(chaos_step "$1")" -gt "$(eval "echo \$CHAOS_REC_$1")" ]; }

chaos_n_up() {
    N_UP=0
    UP_LIST=
    for _ng in $CHAOS_GROUPS; do
        if chaos_up "$_ng"; then
            N_UP=$((N_UP + 1))
            UP_LIST="$UP_LIST $_ng"
        fi
    done
}

# chaos_mark_down ID...: the groups are "down" until they commit beyond the
# leader's step of now.
chaos_mark_down() {
    chaos_leader
    for _mg in "$@"; do
        eval "CHAOS_REC_$_mg=$L"
    done
}

_chaos_all_up() {
    chaos_n_up
    [ "$N_UP" -eq 3 ]
}

# ---- the lighthouse's fds and memory ----------------------------------

# Established TCP sockets among the process's fds: their number follows the
# groups that are connected, so it is taken out of the fd count; what stays
# (listeners, event loop, log, and any socket left open after its peer went)
# must not grow.
_chaos_established() {
    _inodes=$(ls -l "/proc/$1/fd" 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\].*/\1/p' | tr '\n' ' ')
    cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v list="$_inodes" '
        BEGIN { n = split(list, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
        $4 == "01" && ($10 in want) { c++ }
        END { print c + 0 }'
}

# "FDS BASE RSS": fd count, fd count less established sockets, VmRSS in kB.
# The smallest BASE of three samples 300 ms apart, so that a socket whose
# peer died a moment ago (not yet seen by the event loop) is not counted.
chaos_lh_sample() {
    _best=
    for _i in 1 2 3; do
        _fds=$(ls "/proc/$1/fd" 2>/dev/null | wc -l)
        _base=$((_fds - $(_chaos_established "$1")))
        _rss=$(sed -n 's/^VmRSS:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$1/status" 2>/dev/null)
        if [ -z "$_best" ] || [ "$_base" -lt "${_best#* }" ]; then
            _best="$_fds $_base"
            _brss=${_rss:-0}
        fi
        [ $_i -lt 3 ] && sleep 0.3
    done
    echo "$_best $_brss"
}

# chaos_lh_check start|end: records the start sample of this incarnation,
# or compares the end with it.  Bounds (CHAOS_FD_SLACK, CHAOS_RSS_SLACK_KB):
# the fds less the established sockets may grow by 2 (an accept or an HTTP
# request in flight at one sample; a socket left open per dead peer, a
# group's 2 a fault, passes it after one fault); VmRSS may grow by 1 MiB
# (malloc's arenas and libevent's buffers settle, about 4 MiB in all
# here; runs measured 0 to 20 kB of growth; a leak of 64 bytes a quorum at
# 35 quorums a second passes it in under 8 minutes of one incarnation).
chaos_lh_check() {
    set -- "$1" $(chaos_lh_sample "$E2E_LH_PID")
    if [ "$1" = start ]; then
        CHAOS_LH_START="$2 $3 $4"
        e2e_log "lighthouse $E2E_LH_PID start: $2 fds ($3 less established sockets), VmRSS $4 kB"
        return 0
    fi
    set -- "$2" "$3" "$4" $CHAOS_LH_START
    CHAOS_LH_INCARNATIONS=$((CHAOS_LH_INCARNATIONS + 1))
    e2e_log "lighthouse $E2E_LH_PID end: $1 fds ($2 less established; start $5), VmRSS $3 kB (start $6)"
    [ "$2" -le $(($5 + CHAOS_FD_SLACK)) ] ||
        e2e_fail "lighthouse $E2E_LH_PID: fds less established sockets grew from $5 to $2"
    [ "$3" -le $(($6 + CHAOS_RSS_SLACK_KB)) ] ||
        e2e_fail "lighthouse $E2E_LH_PID: VmRSS grew from $6 kB to $3 kB"
    _d=$(($3 - $6))
    [ "$_d" -gt "$CHAOS_RSS_MAX_GROWTH" ] && CHAOS_RSS_MAX_GROWTH=$_d
    _d=$(($2 - $5))
    [ "$_d" -gt "$CHAOS_FD_MAX_GROWTH" ] && CHAOS_FD_MAX_GROWTH=$_d
    return 0
}

# ---- the faults --------------------------------------------------------

_chaos_count() { eval "CHAOS_N_$1=\$((CHAOS_N_$1 + 1))"; }

# chaos_fault KIND: applies one fault of KIND to a random group that is up
# (while at least two are), or to the lighthouse; false if it cannot now.
chaos_fault() {
    chaos_leader
    if [ "$1" = kill_lh ]; then
        chaos_lh_check end
        e2e_lighthouse_kill
        chaos_mark_down $CHAOS_GROUPS
        chaos_rand_range "$CHAOS_LH_DOWN_MIN_MS" "$CHAOS_LH_DOWN_MAX_MS"
        e2e_log "fault kill_lh at step $L: down ${R} ms"
        chaos_ms_sleep "$R"
        e2e_lighthouse_start 1 "$E2E_LH_PORT"
        ALL_PIDS="$ALL_PIDS $E2E_LH_PID" # chaos.sh checks them all at the end
        # warm-up of the new incarnation: the groups are back (30 s at most)
        wait_until 30 _chaos_all_up || e2e_log "not every group is back 30 s after the lighthouse"
        chaos_lh_check start
        _chaos_count kill_lh
        return 0
    fi
    CF_KIND=$1
    chaos_n_up
    [ "$N_UP" -ge 2 ] || return 1
    # shellcheck disable=SC2086
    set -- "$1" $UP_LIST
    chaos_rand $(($# - 1))
    shift $((R + 1))
    CF_GROUP=$1
    CF_MPIRUN=$(e2e_mpirun_pid "$CF_GROUP")
    [ -n "$CF_MPIRUN" ] && pid_alive "$CF_MPIRUN" || return 1
    case $CF_KIND in
    kill_group)
        e2e_log "fault kill_group $CF_GROUP at step $L"
        chaos_mark_down "$CF_GROUP"
        e2e_kill_group "$CF_GROUP"
        ;;
    kill_rank)
        set -- $(e2e_ranks "$CF_GROUP")
        [ $# -ge 1 ] || return 1
        chaos_rand $#
        shift "$R"
        e2e_log "fault kill_rank $CF_GROUP at step $L: rank pid $1"
        chaos_mark_down "$CF_GROUP"
        kill -KILL "$1" 2>/dev/null
        ;;
    stop_group)
        chaos_rand_range "$CHAOS_STOP_MIN_MS" "$CHAOS_STOP_MAX_MS"
        e2e_log "fault stop_group $CF_GROUP at step $L: ${R} ms"
        chaos_mark_down "$CF_GROUP"
        e2e_signal_group "$CF_GROUP" STOP
        chaos_ms_sleep "$R"
        e2e_signal_group "$CF_GROUP" CONT
        ;;
    esac
    _chaos_count "$CF_KIND"
    return 0
}

# ---- leaks -------------------------------------------------------------

# Processes of this run (they carry FTI_TEST_TAG in their environment) that
# are one of the programs the soak starts.
_chaos_tagged() {
    for _e in $(grep -lzx "FTI_TEST_TAG=$FTI_TEST_TAG" /proc/[0-9]*/environ 2>/dev/null); do
        _p=${_e#/proc/}
        _p=${_p%/environ}
        _c=$(cat "/proc/$_p/comm" 2>/dev/null) || continue
        case $_c in
        ft_sgd | mpirun | orterun | orted | prte* | ftmpi-run | ftmpi-lighthou* | ftmpi-baby)
            pid_alive "$_p" && echo "$_p($_c)"
            ;;
        esac
    done
}

_chaos_no_tagged() { [ -z "$(_chaos_tagged)" ]; }

# chaos_check_no_leak PID...: the PIDs are gone, and within 15 s nothing of
# this run is left (no ft_sgd, mpirun, orted, agent, lighthouse, baby).
# A pid is ours while it carries this run's FTI_TEST_TAG: on a busy machine
# (pid_max 32768) a pid of an mpirun that ended long ago may be another
# program's by now (seen: "process 29805 (bash) is still there").
_chaos_ours_alive() {
    pid_alive "$1" && grep -qzx "FTI_TEST_TAG=$FTI_TEST_TAG" "/proc/$1/environ" 2>/dev/null
}

_chaos_ours_gone() { ! _chaos_ours_alive "$1"; }

chaos_check_no_leak() {
    for _p in "$@"; do
        wait_until 15 _chaos_ours_gone "$_p" ||
            e2e_fail "process $_p ($(cat /proc/"$_p"/comm 2>/dev/null)) is still there"
    done
    wait_until 15 _chaos_no_tagged || e2e_fail "processes left behind: $(_chaos_tagged)"
    e2e_log "no process left: $# started pids gone, none of this run's programs remain"
}
