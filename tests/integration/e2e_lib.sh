# tests/integration/e2e_lib.sh - helpers of the end-to-end tests of the step
# protocol (mode A: one lighthouse, one `mpirun` per replica group, each under
# ftmpi-run).  POSIX sh.  Source it first; it sources common.sh:
#
#     . "$top_srcdir/tests/integration/e2e_lib.sh"
#     e2e_init                       skip (77) without mpirun; set the paths
#     e2e_lighthouse_start 2         lighthouse on 127.0.0.1, any port
#     e2e_group_start g0 1 --steps 100 --sleep-ms 20
#     e2e_groups_start "g0 g1" 1 ...  the same for each group
#     e2e_wait_step g0 30 20         until g0 printed step >= 30 (20 s at most)
#     e2e_kill_group g0              kill -9 its mpirun's process group and ranks
#     e2e_wait_agents 60 g0 g1       every agent exits 0 within 60 s
#     e2e_check_states g0 g1         --dump files bitwise equal (cmp)
#     e2e_check_loss g0 g1           final loss < initial loss
#     e2e_check_final 2 g0 g1        every rank (2 a group) ends at the same
#                                    step with the same registered bytes
#     e2e_pace 30                    ft_sgd --pace-file "$E2E_PACE" holds every
#                                    rank before step 30's allreduce
#     e2e_gather 60 30 g0 g1         (started under e2e_pace 0) until all are
#                                    in one quorum or waiting, then e2e_pace 30
#     e2e_wait_held 60 30 g0 g1      until each group asked the quorum of step 30
#     e2e_wait_rejoining 60 g1       until the restarted g1 waits at the
#                                    lighthouse for a quorum (or healed)
#
# Files of a group ID in $TEST_TMPDIR: ID.out (ft_sgd's stdout, all runs),
# ID.err (stderr: library log), ID.agent (ftmpi-run --events), ID.events
# (the library's FTMPI_EVENT_LOG), ID.dump (--dump, added by
# e2e_group_start).  Every agent runs in its own session (setsid), so the
# EXIT trap kills everything a group started, ranks included, by session id.
#
# Settings (environment, defaults small so that every test takes seconds):
#   FTMPI_TIMEOUT_MS=2000 FTMPI_QUORUM_TIMEOUT_MS=5000 FTMPI_HEARTBEAT_MS=100
#   E2E_HB_TIMEOUT_MS=1000 E2E_JOIN_TIMEOUT_MS=500 (lighthouse flags)

. "$top_srcdir/tests/integration/common.sh"

lib_test_env
: "${E2E_HB_TIMEOUT_MS:=1000}"
: "${E2E_JOIN_TIMEOUT_MS:=500}"

E2E_T0=$(date +%s)

# Prints the tail of every log of the test, then fails.
e2e_fail() {
    for _f in "$TEST_TMPDIR"/*.out "$TEST_TMPDIR"/*.err "$TEST_TMPDIR"/*.agent \
        "$TEST_TMPDIR"/*.events "$TEST_TMPDIR"/*.log; do
        [ -f "$_f" ] || continue
        echo "---- $(basename "$_f") (last 25 lines)" >&2
        tail -n 25 "$_f" >&2
    done
    die "$*"
}

e2e_log() { echo "[$(($(date +%s) - E2E_T0))s] $*"; }

e2e_init() {
    need_mpirun
    E2E_LH_BIN=$top_builddir/ftmpi-lighthouse
    E2E_RUN_BIN=$top_builddir/ftmpi-run
    E2E_SGD_BIN=$top_builddir/examples/ft_sgd
    for _b in "$E2E_LH_BIN" "$E2E_RUN_BIN" "$E2E_SGD_BIN"; do
        [ -x "$_b" ] || die "$_b is not built"
    done
    E2E_LH_PORT=0
    E2E_LH_PID=
    E2E_PACE=$TEST_TMPDIR/pace
}

# e2e_lighthouse_start MIN_REPLICAS [PORT [extra flags...]]
# Starts the lighthouse on 127.0.0.1:PORT (0 = any; the port is kept in
# E2E_LH_PORT so a restart can reuse it) with the dashboard on any port.
# Sets E2E_LH_PID, E2E_LH_PORT, E2E_LH_HTTP, and exports FTMPI_LIGHTHOUSE.
e2e_lighthouse_start() {
    _min=$1
    _port=${2:-0}
    if [ $# -ge 2 ]; then shift 2; else shift $#; fi
    _log=$TEST_TMPDIR/lighthouse.log
    _before=$(count_lines "$_log" 'listening on')
    setsid "$E2E_LH_BIN" --bind "127.0.0.1:$_port" --min-replicas "$_min" \
        --heartbeat-timeout-ms "$E2E_HB_TIMEOUT_MS" --join-timeout-ms "$E2E_JOIN_TIMEOUT_MS" \
        --quorum-tick-ms 50 --http-bind 127.0.0.1:0 --log-level info "$@" \
        >>"$_log" 2>&1 </dev/null &
    E2E_LH_PID=$!
    register_pid "$E2E_LH_PID"
    _lh_started() { [ "$(count_lines "$_log" 'listening on')" -gt "$_before" ]; }
    wait_until 60 _lh_started || e2e_fail "the lighthouse did not start in 60 s"
    _line=$(grep 'listening on' "$_log" | tail -n 1)
    E2E_LH_PORT=$(echo "$_line" | sed -n 's/.*listening on [^ ]*:\([0-9][0-9]*\) .*/\1/p')
    E2E_LH_HTTP=$(echo "$_line" | sed -n 's/.*(http \([^)]*\)).*/\1/p')
    [ -n "$E2E_LH_PORT" ] || e2e_fail "no port in the lighthouse's line: $_line"
    FTMPI_LIGHTHOUSE=127.0.0.1:$E2E_LH_PORT
    export FTMPI_LIGHTHOUSE
    e2e_log "lighthouse pid $E2E_LH_PID on $FTMPI_LIGHTHOUSE (http $E2E_LH_HTTP), min replicas $_min"
}

e2e_lighthouse_kill() {
    kill -KILL "$E2E_LH_PID" 2>/dev/null
    wait "$E2E_LH_PID" 2>/dev/null
    e2e_log "lighthouse killed (pid $E2E_LH_PID)"
}

# e2e_group_start ID NP [ft_sgd flags...]
# Starts `ftmpi-run --replica-id ID -- mpirun -np NP ft_sgd --dump ID.dump
# FLAGS` in its own session.  E2E_RUN_FLAGS adds agent flags,
# E2E_MPIRUN_FLAGS mpirun flags, E2E_PROG another program than ft_sgd.
e2e_group_start() {
    _id=$1
    _np=$2
    shift 2
    _prog=${E2E_PROG:-$E2E_SGD_BIN}
    _dump=
    [ -z "$E2E_PROG" ] && _dump="--dump $TEST_TMPDIR/$_id.dump"
    # shellcheck disable=SC2086
    FTMPI_EVENT_LOG=$TEST_TMPDIR/$_id.events setsid "$E2E_RUN_BIN" --replica-id "$_id" \
        --max-restarts 5 --backoff-ms 200 --grace-ms 2000 --events "$TEST_TMPDIR/$_id.agent" \
        $E2E_RUN_FLAGS -- "$MPIRUN" -np "$_np" --bind-to none $E2E_MPIRUN_FLAGS \
        "$_prog" $_dump "$@" >>"$TEST_TMPDIR/$_id.out" 2>>"$TEST_TMPDIR/$_id.err" </dev/null &
    _pid=$!
    eval "E2E_AGENT_$_id=$_pid"
    # the agent leads a session: everything it starts stays in it
    at_cleanup "pkill -KILL -s $_pid"
    e2e_log "group $_id: agent pid $_pid, mpirun -np $_np"
}

# e2e_groups_start "ID..." NP [ft_sgd flags...]: e2e_group_start for each ID.
e2e_groups_start() {
    _ids=$1
    shift
    for _gid in $_ids; do
        e2e_group_start "$_gid" "$@"
    done
}

e2e_agent_pid() { eval "echo \${E2E_AGENT_$1}"; }

# The pid of the group's current command (its mpirun; also its process
# group id), from the agent's last "start" event; empty if none.
e2e_mpirun_pid() {
    [ -f "$TEST_TMPDIR/$1.agent" ] || return 0
    sed -n 's/.*"event":"start".*"pid":\([0-9][0-9]*\).*/\1/p' "$TEST_TMPDIR/$1.agent" | tail -n 1
}

# Number of "start" events of the group's agent (1 + restarts so far).
e2e_starts() { count_lines "$TEST_TMPDIR/$1.agent" '"event":"start"'; }

# The group's ranks: the descendants of its current mpirun whose
# environment names a rank (Open MPI puts each rank in a process group of
# its own, so the mpirun's group alone is not enough to take the whole
# replica group down at once; hydra's ranks are its proxy's children).
e2e_ranks() {
    _m=$(e2e_mpirun_pid "$1")
    [ -n "$_m" ] || return 0
    for _d in $(descendants "$_m"); do
        tr '\0' '\n' <"/proc/$_d/environ" 2>/dev/null |
            grep -Eq '^(OMPI_COMM_WORLD_RANK|PMI_RANK)=' && echo "$_d"
    done
    return 0
}

# e2e_signal_group ID SIG: sends SIG to the mpirun's process group and to
# every rank.
e2e_signal_group() {
    _m=$(e2e_mpirun_pid "$1")
    [ -n "$_m" ] || e2e_fail "group $1 has no running mpirun"
    _r=$(e2e_ranks "$1")
    # and whatever else runs below the mpirun (hydra's proxy, which
    # forwards the ranks' output)
    _o=$(descendants "$_m")
    # dash's kill takes no "--": "-SIG -PGID" works in every shell
    kill "-$2" "-$_m" 2>/dev/null
    for _p in $_o; do
        kill "-$2" "$_p" 2>/dev/null
    done
    e2e_log "group $1: SIG$2 to mpirun $_m and ranks" $_r
}

# e2e_hold_groups "ID..." SECS COND [ARGS...]: freezes the groups (SIGSTOP)
# until COND ARGS holds (at most SECS), then continues them: a scenario that
# needs something (a late group's start) to happen before the others go on
# waits on it instead of racing them.  The lighthouse's heartbeat timeout
# must outlast the hold (E2E_HB_TIMEOUT_MS), or the frozen groups drop out.
e2e_hold_groups() {
    _hold_ids=$1
    _hold_s=$2
    shift 2
    for _hid in $_hold_ids; do
        e2e_signal_group "$_hid" STOP
    done
    wait_until "$_hold_s" "$@"
    _hold_rc=$?
    for _hid in $_hold_ids; do
        e2e_signal_group "$_hid" CONT
    done
    [ "$_hold_rc" -eq 0 ] || e2e_fail "held $_hold_ids for $_hold_s s: '$*' never held"
}

# e2e_inited ID: the group's (latest) process said FT_Init is done, so its
# manager heartbeats: the lighthouse counts it from now on.
e2e_inited() { file_has "$TEST_TMPDIR/$1.err" "FT_Init: replica $1,"; }

# e2e_kill_group ID: SIGKILL to the group (as a node failure would).
e2e_kill_group() { e2e_signal_group "$1" KILL; }

# Last committed step a group printed ("step N loss ..."), 0 if none.
e2e_step() { sgd_step "$TEST_TMPDIR/$1.out"; }

_e2e_step_ge() { [ "$(e2e_step "$1")" -ge "$2" ]; }

# e2e_wait_step ID N SECS: until the group printed step >= N.
e2e_wait_step() {
    wait_until "$3" _e2e_step_ge "$1" "$2" ||
        e2e_fail "group $1 did not reach step $2 in $3 s (at $(e2e_step "$1"))"
}

_e2e_starts_ge() { [ "$(e2e_starts "$1")" -ge "$2" ]; }

# e2e_wait_restart ID N SECS: until the agent started the command N times.
e2e_wait_restart() {
    wait_until "$3" _e2e_starts_ge "$1" "$2" ||
        e2e_fail "group $1 was not started $2 times in $3 s"
}

# e2e_wait_agents SECS ID...: every agent ends with status 0 within SECS.
e2e_wait_agents() {
    _secs=$1
    shift
    _end=$(($(date +%s) + _secs))
    for _id in "$@"; do
        _pid=$(e2e_agent_pid "$_id")
        _left=$((_end - $(date +%s)))
        [ "$_left" -lt 1 ] && _left=1
        wait_pid_timeout "$_pid" "$_left" ||
            e2e_fail "group $_id (agent $_pid) still running after ${_secs}s (step $(e2e_step "$_id"))"
        wait "$_pid"
        _st=$?
        [ "$_st" -eq 0 ] || e2e_fail "group $_id: agent exited with status $_st"
        if file_has "$TEST_TMPDIR/$_id.out" '^steps committed'; then
            e2e_log "group $_id finished: $(grep '^steps committed' "$TEST_TMPDIR/$_id.out" | tail -n 1)," \
                "$(grep '^failures survived' "$TEST_TMPDIR/$_id.out" | tail -n 1)"
        else
            e2e_log "group $_id finished"
        fi
    done
}

# e2e_check_states ID...: the --dump files of every group (and of every rank
# of a group) are bitwise equal.
e2e_check_states() {
    _ref=$TEST_TMPDIR/$1.dump
    [ -s "$_ref" ] || e2e_fail "no state dump of group $1"
    for _id in "$@"; do
        for _f in "$TEST_TMPDIR/$_id.dump" "$TEST_TMPDIR/$_id.dump".[0-9]*; do
            [ -e "$_f" ] || continue
            cmp -s "$_ref" "$_f" ||
                e2e_fail "state of $(basename "$_f") differs from $1's: $(cmp "$_ref" "$_f" 2>&1)"
        done
        _sum=$(grep '^state checksum' "$TEST_TMPDIR/$_id.out" | tail -n 1)
        _sum0=$(grep '^state checksum' "$TEST_TMPDIR/$1.out" | tail -n 1)
        [ "$_sum" = "$_sum0" ] || e2e_fail "checksums differ: $1 '$_sum0', $_id '$_sum'"
    done
    e2e_log "states bitwise equal across $* ($(wc -c <"$_ref") bytes, $(grep '^state checksum' "$TEST_TMPDIR/$1.out" | tail -n 1))"
}

# e2e_check_final NP ID...: the last run of each group printed one "final
# replica=ID rank=G step=S checksum=C" line per rank (G = 0..NP-1), and
# every rank of every group has the same S and C: the same step and the
# same registered bytes (ft_sgd, e2e_allreduce).
e2e_check_final() {
    _np=$1
    shift
    _files=
    for _id in "$@"; do
        _f=$TEST_TMPDIR/$_id.out
        _files="$_files $_f"
        _g=0
        while [ $_g -lt "$_np" ]; do
            _n=$(sgd_final_lines "$_f" | grep -c "^final replica=$_id rank=$_g ")
            [ "$_n" -eq 1 ] || e2e_fail "group $_id, rank $_g: $_n final lines in its last run, want 1"
            _g=$((_g + 1))
        done
    done
    # shellcheck disable=SC2086
    _msg=$(sgd_final_check $(($# * _np)) $_files) || e2e_fail "groups $*: $_msg"
    e2e_log "final lines of $* ($_np rank(s) each): $_msg"
}

# e2e_check_loss ID...: the final loss of each group's last run is below the
# initial loss of its first run.
e2e_check_loss() {
    for _id in "$@"; do
        _i=$(sed -n 's/^initial loss \([-0-9.e+]*\).*/\1/p' "$TEST_TMPDIR/$_id.out" | head -n 1)
        _f=$(sed -n 's/^final loss \([-0-9.e+]*\).*/\1/p' "$TEST_TMPDIR/$_id.out" | tail -n 1)
        [ -n "$_i" ] && [ -n "$_f" ] || e2e_fail "group $_id printed no initial/final loss"
        awk -v i="$_i" -v f="$_f" 'BEGIN { exit !(f < i) }' ||
            e2e_fail "group $_id: loss did not go down ($_i -> $_f)"
        e2e_log "group $_id: loss $_i -> $_f"
    done
}

# e2e_failures ID: the last "failures survived" count the group printed.
e2e_failures() { sgd_failures "$TEST_TMPDIR/$1.out"; }

# First committed step printed by the group's run number N (1-based, counted
# by "initial loss" lines), empty if none.
e2e_first_step_of_run() {
    awk -v n="$2" '/^initial loss/ { run++ } run == n && /^step [0-9]+ loss/ { print $2; exit }' \
        "$TEST_TMPDIR/$1.out"
}

# ---- holding the run while a restarted group rejoins --------------------
#
# A kill test races the survivors against the restart: under load the
# survivors may reach --steps and leave before the restarted group asks for
# its first quorum, and it then trains alone from step 0.  The way out:
#  - every group runs ft_sgd --pace-file "$E2E_PACE", held with e2e_pace P
#    before step P's allreduce (after its quorum of step P: the survivors
#    are in the step, healthy, and serve it); the groups start under
#    e2e_pace 0 and e2e_gather sets P once all of them are in, so that no
#    group is held while another has yet to join;
#  - the lighthouse's join timeout (E2E_JOIN_TIMEOUT_MS) outlasts the test,
#    its heartbeat timeout (E2E_HB_TIMEOUT_MS) a few seconds of load, and
#    FT_Quorum's (FTMPI_QUORUM_TIMEOUT_MS) the hold: a restarted group's
#    request stays pending at the lighthouse, which issues no quorum
#    without the held survivors (split-brain guard when the survivors are
#    the majority of the healthy groups, the join timeout's wait for a
#    healthy group that has not asked otherwise);
#  - e2e_wait_rejoining: each restarted group waits at the lighthouse (or
#    already healed from a survivor), then e2e_pace releases the survivors,
#    whose next request meets the pending one: the restarted group is in
#    that quorum, behind, and heals from a survivor.

# e2e_pace N: ranks of ft_sgd --pace-file "$E2E_PACE" start step s's
# allreduce only while N > s (written at once: a reader never sees half).
e2e_pace() {
    echo "$1" >"$E2E_PACE.tmp" && mv -f "$E2E_PACE.tmp" "$E2E_PACE" ||
        e2e_fail "cannot write $E2E_PACE"
    e2e_log "pace: steps below $1"
}

# e2e_lh_member ID: the group's entry in the lighthouse's /status.json
# (one line: replica_id, step of its last request, waiting, healthy...),
# empty if none.
e2e_lh_member() {
    timeout 10 "$top_builddir/tests/integration/lh_probe" http "$E2E_LH_HTTP" GET /status.json \
        2>/dev/null | grep "\"replica_id\":\"$1\"" | head -n 1 | sed 's/}.*/}/'
    return 0
}

# e2e_lh_step ID: the step of the group's last quorum request (-1 if none).
e2e_lh_step() {
    _s=$(e2e_lh_member "$1" | sed -n 's/.*"step":\(-*[0-9][0-9]*\).*/\1/p')
    echo "${_s:--1}"
}

_e2e_held() {
    _hs=$1
    shift
    for _hid in "$@"; do
        [ "$(e2e_lh_step "$_hid")" -ge "$_hs" ] || return 1
    done
}

# e2e_wait_held SECS P ID...: every group asked for the quorum of step P
# (held there by e2e_pace P, they go no further).
e2e_wait_held() {
    _whs=$1
    _whp=$2
    shift 2
    wait_until "$_whs" _e2e_held "$_whp" "$@" ||
        e2e_fail "not every group of $* reached step $_whp in $_whs s"
    e2e_log "groups $* held at step $_whp"
}

_e2e_gathered() {
    for _gid in "$@"; do
        [ "$(count_lines "$TEST_TMPDIR/$_gid.err" "FT_Init: replica $_gid, group rank 0 ")" -ge 1 ] ||
            return 1
        e2e_lh_member "$_gid" | grep -Eq '"(waiting|in_quorum)":true' || return 1
    done
}

# e2e_gather SECS P ID...: the groups started under e2e_pace 0, so each is
# held before step 0's allreduce in the lighthouse's last quorum, or waits
# for a quorum (one group that started late asks alone, and the lighthouse
# issues none without the held ones); until every group is either, then
# e2e_pace P.  The held ones' next request meets the waiting ones': from
# step 1 on every group is in one quorum (a late one healed in it), and
# they reach a later hold together.  Holding the groups as they come, at a
# step above 0, could hold the first before a late one asked, which then
# waited for it for good.
e2e_gather() {
    _gas=$1
    _gap=$2
    shift 2
    wait_until "$_gas" _e2e_gathered "$@" ||
        e2e_fail "groups $* were not all held at step 0 or waiting in $_gas s"
    e2e_log "groups $* gathered at step 0"
    e2e_pace "$_gap"
}

# e2e_healed ID: a restarted run of the group healed (its first heal after
# a restart is logged at the default level).
e2e_healed() { file_has "$TEST_TMPDIR/$1.err" "restart [0-9]+ of this group: healed step"; }

_e2e_rejoining() {
    for _rid in "$@"; do
        e2e_healed "$_rid" && continue
        # the latest run is up (FT_Init said so: not the killed one's
        # request) and its quorum request waits at the lighthouse
        [ "$(count_lines "$TEST_TMPDIR/$_rid.err" "FT_Init: replica $_rid, group rank 0 ")" -ge "$(e2e_starts "$_rid")" ] ||
            return 1
        e2e_lh_member "$_rid" | grep -q '"waiting":true' || return 1
    done
}

# e2e_wait_rejoining SECS ID...: every restarted group waits at the
# lighthouse for a quorum, or healed already.
e2e_wait_rejoining() {
    _wrs=$1
    shift
    wait_until "$_wrs" _e2e_rejoining "$@" ||
        e2e_fail "restarted groups $* did not ask the lighthouse for a quorum in $_wrs s"
    for _rid in "$@"; do
        if e2e_healed "$_rid"; then
            e2e_log "group $_rid healed already"
        else
            e2e_log "group $_rid waits for a quorum: $(e2e_lh_member "$_rid")"
        fi
    done
}
