#!/usr/bin/env bash
# scripts/demo.sh BUILDDIR [--mode-b] - a one-minute demonstration of libftmpi.
#
# Mode A (default):
# Starts a lighthouse (with its dashboard) and 3 replica groups of 2 ranks,
# each `mpirun -np 2 examples/ft_sgd` under `ftmpi-run`.  At a random step a
# random group is killed with SIGKILL (its mpirun's process group and its
# ranks, as a node failure would); the two others go on without it, its
# agent restarts it, it heals from a live group and rejoins.  At the end it
# prints a timeline (failure, quorum changes, restart, heal bytes and time,
# rejoin) built from the library's FTMPI_EVENT_LOG and the agents' --events
# files, and a summary: steps committed, failures survived, final loss, and
# whether the registered state is bitwise equal across every group and rank.
#
# --mode-b: one `mpirun --enable-recovery -np 9` with FTMPI_GROUP_SIZE=2: 4
# groups of 2 ranks and the lighthouse on world rank 8.  At a random step
# one random rank is killed with SIGKILL; its partner notices within its
# deadline and leaves (the group is lost: no restart in mode B), the other
# groups' step fails within FTMPI_TIMEOUT_MS and they go on as 3 groups.
# It prints a timeline from the ranks' logs and the same summary.
#
# Everything it starts is killed when it exits (also on Ctrl-C).
# Environment: DEMO_STEPS (default 150), DEMO_SLEEP_MS (per step, default 40),
# DEMO_KEEP=1 keeps the work folder, DEMO_SEED fixes the random choices.
# Exit status: 0 when every group finished and the states are equal.
set -u

die() { echo "demo: $*" >&2; exit 1; }

MODE_B=0
if [ $# -eq 2 ] && [ "$2" = --mode-b ]; then
    MODE_B=1
elif [ $# -ne 1 ]; then
    die "usage: $0 BUILDDIR [--mode-b]"
fi
B=$(cd "$1" 2>/dev/null && pwd) || die "no build folder '$1'"
LH=$B/ftmpi-lighthouse
RUN=$B/ftmpi-run
SGD=$B/examples/ft_sgd
for f in "$LH" "$RUN" "$SGD"; do
    [ -x "$f" ] || die "$f is not built (run make in $B first)"
done
MPIRUN=${MPIRUN:-$(command -v mpirun)} || true
[ -n "$MPIRUN" ] || die "mpirun not found: install Open MPI (openmpi-bin)"

STEPS=${DEMO_STEPS:-150}
SLEEP_MS=${DEMO_SLEEP_MS:-40}
[ "$STEPS" -ge 30 ] 2>/dev/null || die "DEMO_STEPS must be a number >= 30"
[ "$SLEEP_MS" -ge 0 ] 2>/dev/null || die "DEMO_SLEEP_MS must be a number >= 0"
GROUPS_=(g0 g1 g2)
NP=2
[ -n "${DEMO_SEED:-}" ] && RANDOM=$DEMO_SEED

# Open MPI as root, on the loopback only, more ranks than cores
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_rmaps_base_oversubscribe=1
# small deadlines so that a failure is noticed within seconds
export FTMPI_TIMEOUT_MS=${FTMPI_TIMEOUT_MS:-2000}
export FTMPI_QUORUM_TIMEOUT_MS=${FTMPI_QUORUM_TIMEOUT_MS:-10000}
export FTMPI_HEARTBEAT_MS=${FTMPI_HEARTBEAT_MS:-100}
export FTMPI_LOG_LEVEL=${FTMPI_LOG_LEVEL:-warn}

W=$(mktemp -d "${TMPDIR:-/tmp}/ftmpi-demo.XXXXXX") || die "mktemp failed"
export FTMPI_EVENT_LOG=$W/events.jsonl
LH_PID=
declare -A AGENT

cleanup() {
    trap - EXIT INT TERM
    exec 2>/dev/null # no "Killed" notices for the jobs killed here
    for g in "${!AGENT[@]}"; do
        # each agent leads its own session: this takes its mpirun and ranks too
        pkill -KILL -s "${AGENT[$g]}" 2>/dev/null
    done
    [ -n "$LH_PID" ] && kill -KILL "$LH_PID" 2>/dev/null
    wait 2>/dev/null
    if [ "${DEMO_KEEP:-0}" = 1 ]; then
        echo "demo: logs kept in $W"
    else
        rm -rf "$W"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now_ms() { date +%s%3N; }

# final_agree N FILE...: the "final replica=ID rank=G step=S checksum=C" lines
# ft_sgd's ranks print at the end (of each file's last run) are N and all say
# the same S and C; prints "N ranks at step S, checksum C" or what is wrong.
final_agree() {
    local want=$1 f
    shift
    for f in "$@"; do
        awk '/^initial loss/ { n = 0 } /^final replica=/ { l[n++] = $0 }
            END { for (i = 0; i < n; i++) print l[i] }' "$f" 2>/dev/null
    done | awk -v want="$want" '
        { n++; k = $4 " " $5; if (!(k in seen)) { seen[k] = 1; m++; pair = k } }
        END {
            gsub(/step=|checksum=/, "", pair)
            split(pair, a, " ")
            if (n != want) { printf "%d final lines, want %d\n", n, want; exit 1 }
            if (m != 1) { printf "ranks disagree (%d different step/checksum pairs)\n", m; exit 1 }
            printf "%d ranks at step %s, checksum %s\n", n, a[1], a[2]
        }'
}
T0=$(now_ms)
say() { printf '[%5.1fs] %s\n' "$(awk -v a="$(now_ms)" -v b="$T0" 'BEGIN { print (a - b) / 1000 }')" "$*"; }

# ---- mode B: one mpirun ----------------------------------------------------------
if [ "$MODE_B" = 1 ]; then
    MB_PID=
    cleanup_b() {
        trap - EXIT INT TERM
        exec 2>/dev/null
        [ -n "$MB_PID" ] && pkill -KILL -s "$MB_PID" 2>/dev/null
        wait 2>/dev/null
        if [ "${DEMO_KEEP:-0}" = 1 ]; then echo "demo: logs kept in $W"; else rm -rf "$W"; fi
    }
    trap cleanup_b EXIT
    NPB=9
    RB=2
    NG=$(((NPB - 1) / RB))
    export FTMPI_GROUP_SIZE=$RB FTMPI_LOG_LEVEL=info
    export FTMPI_LH_HEARTBEAT_TIMEOUT_MS=${FTMPI_LH_HEARTBEAT_TIMEOUT_MS:-1000}
    export FTMPI_LH_JOIN_TIMEOUT_MS=${FTMPI_LH_JOIN_TIMEOUT_MS:-1000}
    unset FTMPI_LIGHTHOUSE FTMPI_EVENT_LOG
    T0_TOD=$(date +%H:%M:%S.%3N)
    echo "libftmpi demo, mode B: mpirun --enable-recovery -np $NPB -x FTMPI_GROUP_SIZE=$RB ft_sgd"
    echo "  $NG replica groups x $RB ranks (g0 = world ranks 0-1, ...), lighthouse on world rank $((NPB - 1)), $STEPS steps"
    echo "  logs        $W/out/1/rank.N/{stdout,stderr}"
    setsid "$MPIRUN" --enable-recovery -np $NPB --bind-to none --output-filename "$W/out" \
        "$SGD" --steps "$STEPS" --sleep-ms "$SLEEP_MS" --print-every 10 \
        --group-timeout-ms "$FTMPI_TIMEOUT_MS" --dump "$W/state" >"$W/mpirun.out" 2>&1 </dev/null &
    MB_PID=$!
    say "started mpirun (pid $MB_PID)"
    out_of() { echo "$W/out/1/rank.$1/stdout"; }
    step_of_rank() {
        local s
        s=$(sed -n 's/^step \([0-9][0-9]*\) loss.*/\1/p' "$(out_of "$1")" 2>/dev/null | tail -n 1)
        echo "${s:-0}"
    }
    victim=$((RANDOM % (NPB - 1)))
    vgroup=$((victim / RB))
    kill_step=$((STEPS / 5 + RANDOM % (STEPS / 3)))
    say "chaos: world rank $victim (group g$vgroup, group rank $((victim % RB))) will be killed with SIGKILL once its group reaches step $kill_step"
    deadline=$(($(date +%s) + 55))
    while [ "$(step_of_rank $((vgroup * RB)))" -lt "$kill_step" ]; do
        [ "$(date +%s)" -lt "$deadline" ] || die "g$vgroup never reached step $kill_step"
        if ! kill -0 "$MB_PID" 2>/dev/null; then
            # FT_Init refuses mode B where a dead rank cannot be survived
            # (MPICH 4.0.2; doc/USER_GUIDE.md, "Mode B and MPICH")
            why=$(grep -h -m 1 'mode B cannot keep' "$W/out/1/rank.0/stderr" 2>/dev/null | sed 's/^\[[^]]*\] //')
            [ -n "$why" ] && die "mode B is refused on this MPI: $why"
            die "mpirun ended early: $(tail -n 5 "$W/mpirun.out")"
        fi
        sleep 0.05
    done
    vpid=
    # Open MPI's ranks are mpirun's children; hydra's are its proxy's
    below() { local c; for c in $(pgrep -P "$1"); do echo "$c"; below "$c"; done; }
    for p in $(below "$MB_PID"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -Eqx "(OMPI_COMM_WORLD_RANK|PMI_RANK)=$victim" && vpid=$p
    done
    [ -n "$vpid" ] || die "world rank $victim has no process"
    KILL_TOD=$(date +%H:%M:%S.%3N)
    kill -KILL "$vpid"
    say "KILLED world rank $victim (pid $vpid) of g$vgroup at step $(step_of_rank $((vgroup * RB))) (its group's last step when the signal went; asked for $kill_step or later)"
    last_tick=0
    while kill -0 "$MB_PID" 2>/dev/null; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            say "time is up: stopping mpirun"
            break
        fi
        if [ $(($(date +%s) - last_tick)) -ge 1 ]; then
            last_tick=$(date +%s)
            msg=
            for ((k = 0; k < NG; k++)); do msg="$msg g$k@$(step_of_rank $((k * RB)))"; done
            say "steps:$msg"
        fi
        sleep 0.2
    done
    status=0
    if kill -0 "$MB_PID" 2>/dev/null; then status=1; else wait "$MB_PID" || status=1; fi
    echo
    echo "Timeline (seconds since start; from the ranks' logs):"
    {
        echo "[$KILL_TOD demo] KILL world rank $victim (g$vgroup): SIGKILL"
        for ((w = 0; w < NPB - 1; w++)); do
            grep -h -m 1 'missed its deadline' "$W/out/1/rank.$w/stderr" 2>/dev/null |
                sed "s/^\[\([^ ]*\) .* r=\([^ ]*\) gr=\([0-9]*\).*/[\1 \2] rank $w (group rank \3): its FT_Allreduce missed the deadline: the step fails/"
            grep -h -m 1 'this group lost a rank' "$W/out/1/rank.$w/stderr" 2>/dev/null |
                sed "s/^\[\([^ ]*\) .* r=\([^ ]*\) gr=\([0-9]*\).*/[\1 \2] rank $w: FT_ERR_GROUP_LOST: the group leaves/"
            # a rank of the lost group that noticed in its own in-group sum
            if grep -q '^group lost' "$(out_of $w)" 2>/dev/null; then
                why=$(grep -m 1 '^group lost' "$(out_of $w)" | sed 's/^group lost at step [0-9]*: //; s/[\/&]/ /g')
                grep -h -m 1 'FT_Finalize: .* leaves at step' "$W/out/1/rank.$w/stderr" 2>/dev/null |
                    sed "s/^\[\([^ ]*\) .* r=\([^ ]*\) .*leaves at step \([0-9]*\).*/[\1 \2] rank $w: group lost at step \3, $why: it leaves/"
            fi
        done
        grep -h 'quorum [0-9]*: [0-9]* members, ' "$W/out/1/rank.$((NPB - 1))/stderr" 2>/dev/null |
            sed 's/^\[\([^ ]*\) .*\] \(quorum [0-9]*: [0-9]* members\), \([^;]*\);.*/[\1 lighthouse] \2: \3/'
        grep -h 'mode B: group\|every group is done' "$W/out/1/rank.$((NPB - 1))/stderr" 2>/dev/null |
            sed 's/^\[\([^ ]*\) .*\] mode B: /[\1 lighthouse] /'
    } | awk -v t0="$T0_TOD" '
    function ms(t,    a) { split(t, a, ":"); return (a[1] * 3600 + a[2] * 60 + a[3]) * 1000 }
    /^\[[0-9]/ { t = substr($1, 2); who = $2; sub(/\]$/, "", who); $1 = ""; $2 = "";
                 sub(/^  */, ""); printf "%012.0f  %7.2fs %-10s %s\n", ms(t), (ms(t) - ms(t0)) / 1000, who, $0 }' |
        sort -s -n -k1,1 | cut -c15- | sed 's/^/  /'
    echo
    echo "Summary:"
    printf '  %-4s %-16s %-18s %-12s %s\n' group "steps committed" "failures survived" "final loss" "state checksum"
    equal=yes
    ref=
    for ((k = 0; k < NG; k++)); do
        o=$(out_of $((k * RB)))
        if grep -q '^group lost' "$o" "$(out_of $((k * RB + 1)))" 2>/dev/null || [ $k = "$vgroup" ]; then
            lost=$(grep -h -m 1 '^group lost at step' "$o" "$(out_of $((k * RB + 1)))" 2>/dev/null |
                head -n 1 | sed 's/^group lost at \(step [0-9]*\).*/\1/')
            printf '  %-4s %s\n' "g$k" "lost a rank: left at ${lost:-step ?}"
            continue
        fi
        printf '  %-4s %-16s %-18s %-12s %s\n' "g$k" \
            "$(sed -n 's/^steps committed \([0-9]*\).*/\1/p' "$o" | tail -n 1)" \
            "$(sed -n 's/^failures survived \([0-9]*\).*/\1/p' "$o" | tail -n 1)" \
            "$(sed -n 's/^final loss \(.*\)/\1/p' "$o" | tail -n 1)" \
            "$(sed -n 's/^state checksum \(.*\)/\1/p' "$o" | tail -n 1)"
        for f in "$W/state.g$k" "$W/state.g$k".[0-9]*; do
            [ -e "$f" ] || { equal=no; continue; }
            [ -n "$ref" ] || ref=$f
            cmp -s "$ref" "$f" || equal=no
        done
    done
    first=$(sed -n 's/^initial loss \([^ ]*\).*/\1/p' "$(out_of 0)" | head -n 1)
    echo "  initial loss ${first:-?}"
    live=()
    for ((k = 0; k < NG; k++)); do
        [ $k = "$vgroup" ] && continue
        for ((r = 0; r < RB; r++)); do live+=("$(out_of $((k * RB + r)))"); done
    done
    agree=$(final_agree ${#live[@]} "${live[@]}") || equal=no
    echo "  every rank of the surviving groups at the end: $agree"
    echo "  mpirun exit status: $([ $status = 0 ] && echo 0 || echo 'non-zero or still running')" \
        "(with --enable-recovery it is 0 whatever the ranks did)"
    echo "  registered state bitwise equal across the surviving groups (and ranks): $equal"
    [ "$equal" = yes ] && [ $status -eq 0 ]
    exit $?
fi

# ---- lighthouse --------------------------------------------------------------
setsid "$LH" --bind 127.0.0.1:0 --http-bind 127.0.0.1:0 --min-replicas 2 \
    --heartbeat-timeout-ms 1000 --join-timeout-ms 500 --quorum-tick-ms 50 \
    --log-level warn >"$W/lighthouse.log" 2>&1 </dev/null &
LH_PID=$!
for _ in $(seq 100); do
    grep -q 'listening on' "$W/lighthouse.log" && break
    sleep 0.1
done
line=$(grep 'listening on' "$W/lighthouse.log") || die "the lighthouse did not start: $(cat "$W/lighthouse.log")"
LH_ADDR=$(sed -n 's/.*listening on \([^ ]*\) .*/\1/p' <<<"$line")
HTTP=$(sed -n 's/.*(http \([^)]*\)).*/\1/p' <<<"$line")
export FTMPI_LIGHTHOUSE=$LH_ADDR
echo "libftmpi demo: 1 lighthouse, ${#GROUPS_[@]} replica groups x $NP ranks, $STEPS steps"
echo "  lighthouse  $LH_ADDR"
echo "  dashboard   http://$HTTP/   (also /status.json and /metrics)"
echo "  logs        $W"

# ---- replica groups ----------------------------------------------------------
for g in "${GROUPS_[@]}"; do
    setsid "$RUN" --replica-id "$g" --max-restarts 3 --backoff-ms 300 --grace-ms 2000 \
        --events "$W/agent.jsonl" -- \
        "$MPIRUN" -np $NP --bind-to none "$SGD" --steps "$STEPS" --sleep-ms "$SLEEP_MS" \
        --print-every 10 --dump "$W/$g.dump" >"$W/$g.out" 2>"$W/$g.err" </dev/null &
    AGENT[$g]=$!
done
say "started ${GROUPS_[*]} (ftmpi-run -- mpirun -np $NP ft_sgd)"

step_of() {
    local s
    s=$(sed -n 's/^step \([0-9][0-9]*\) loss.*/\1/p' "$W/$1.out" 2>/dev/null | tail -n 1)
    echo "${s:-0}"
}
mpirun_of() {
    sed -n "s/.*\"event\":\"start\",\"replica_id\":\"$1\".*\"pid\":\([0-9][0-9]*\).*/\1/p" \
        "$W/agent.jsonl" 2>/dev/null | tail -n 1
}

victim=${GROUPS_[$((RANDOM % ${#GROUPS_[@]}))]}
kill_step=$((STEPS / 5 + RANDOM % (STEPS / 3)))
say "chaos: $victim will be killed with SIGKILL once it reaches step $kill_step"

deadline=$(($(date +%s) + 55))
last_tick=0
while [ "$(step_of "$victim")" -lt "$kill_step" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || die "$victim never reached step $kill_step"
    sleep 0.05
done
pid=$(mpirun_of "$victim")
ranks=$(pgrep -P "$pid" | tr '\n' ' ')
KILL_MS=$(now_ms)
kill -KILL -- "-$pid" 2>/dev/null
for r in $ranks; do kill -KILL "$r" 2>/dev/null; done
say "KILLED $victim at step $(step_of "$victim") (its last step when the signal went; asked for $kill_step or later): SIGKILL to mpirun $pid and ranks $ranks"

# ---- wait, with a progress line a second ----------------------------------------
running() {
    local g
    for g in "${GROUPS_[@]}"; do
        kill -0 "${AGENT[$g]}" 2>/dev/null && return 0
    done
    return 1
}
while running; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
        say "time is up: stopping the groups"
        break
    fi
    if [ $(($(date +%s) - last_tick)) -ge 1 ]; then
        last_tick=$(date +%s)
        msg=
        for g in "${GROUPS_[@]}"; do msg="$msg $g@$(step_of "$g")"; done
        say "steps:$msg"
    fi
    sleep 0.2
done
status=0
for g in "${GROUPS_[@]}"; do
    if kill -0 "${AGENT[$g]}" 2>/dev/null; then
        status=1
        continue
    fi
    wait "${AGENT[$g]}" || status=1
done

# ---- timeline -------------------------------------------------------------------
echo
echo "Timeline (seconds since start; from FTMPI_EVENT_LOG and ftmpi-run --events):"
{
    echo "$KILL_MS kill $victim"
    cat "$W/agent.jsonl" 2>/dev/null
    cat "$W/events.jsonl" 2>/dev/null
} | awk '
function get(line, key,    re, v) {
    re = "\"" key "\":"
    if (!match(line, re)) return ""
    v = substr(line, RSTART + RLENGTH)
    if (substr(v, 1, 1) == "\"") { v = substr(v, 2); sub(/".*/, "", v); return v }
    if (substr(v, 1, 1) == "[") { sub(/\].*/, "", v); v = substr(v, 2); gsub(/"/, "", v); return v }
    sub(/[,}].*/, "", v)
    return v
}
# one output line: time (ms, zero-padded for sort), then the text
function emit(ms, g, text) { printf "%015.0f %-3s  %s\n", ms, g, text }
# the name of the error (FT_ERR_...), its number where the line has none
function errname(  n) { n = get($0, "error_name"); return n != "" ? n : "error " get($0, "error") }
/^[0-9]+ kill / { emit($1, $3, "FAILURE: SIGKILL to its mpirun and ranks"); next }
/"event":"(start|exit|restart|giveup|stop)"/ {
    ev = get($0, "event"); g = get($0, "replica_id"); ms = get($0, "time_ms")
    if (ev == "start" && get($0, "restart") == "0") next
    if (ev == "exit" && get($0, "status") == "0") next
    if (ev == "start") text = "agent: started again (restart " get($0, "restart") ", mpirun pid " get($0, "pid") ")"
    else if (ev == "exit") text = "agent: mpirun ended with status " get($0, "status")
    else if (ev == "restart") text = "agent: restarting in " get($0, "backoff_ms") " ms"
    else text = "agent: " ev
    emit(ms, g, text); next
}
/"event":"quorum"/ {
    g = get($0, "replica_id")
    if (get($0, "group_rank") != "0") next
    if (get($0, "error") != "0") {
        emit(get($0, "ts_ms"), g, "quorum failed at step " get($0, "step") " (" errname() ")")
        next
    }
    m = get($0, "members")   # empty with compact quorum replies (mode A)
    q = get($0, "quorum_id")
    # the first quorum of each run and every change of quorum id
    if (get($0, "changed") != "true" || (lastq[g] == q && get($0, "heal") != "true")) next
    lastq[g] = q
    emit(get($0, "ts_ms"), g, sprintf("quorum %s: %s group(s)%s at step %s, formed in %s ms%s",
        q, get($0, "size"), m == "" ? "" : " [" m "]", get($0, "step"), get($0, "quorum_ms"),
        get($0, "heal") == "true" ? ", must heal" : ""))
    next
}
/"event":"heal"/ {
    g = get($0, "replica_id"); err = get($0, "error")
    what = get($0, "max_step") == "0" ? "initial sync" : "heal"
    emit(get($0, "ts_ms"), g, sprintf("%s of rank %s: %s bytes in %s ms from %s (step %s -> %s)%s",
        what, get($0, "group_rank"), get($0, "bytes"), get($0, "heal_ms"), get($0, "source"),
        get($0, "step"), get($0, "max_step"), err != "0" ? " FAILED (" errname() ")" : ""))
    if (what == "heal" && err == "0") healed[g] = 1
    next
}
/"event":"commit"/ {
    g = get($0, "replica_id")
    if (get($0, "group_rank") != "0") next
    if (get($0, "committed") == "true" && !healed[g]) once[g] = 1
    if (get($0, "committed") != "true") {
        if (!failing[g]) emit(get($0, "ts_ms"), g, "step " get($0, "step") " did not commit (" errname() ")")
        failing[g] = 1
    } else if (failing[g] || healed[g]) {
        what = !healed[g] ? "commits again" : once[g] ? "rejoined: commits again" : "joined late: commits"
        emit(get($0, "ts_ms"), g, what ": step " get($0, "step") " with " get($0, "participants") " group(s)")
        failing[g] = 0
        healed[g] = 0
        once[g] = 1
    }
}
' | sort -s -n -k1,1 | awk -v t0="$T0" '{ ms = $1; $1 = ""; printf "  %7.2fs%s\n", (ms - t0) / 1000, $0 }'

# ---- rejoin: the first step the restarted group committed ------------------------
if grep -q "\"event\":\"start\",\"replica_id\":\"$victim\",\"restart\":1" "$W/agent.jsonl" 2>/dev/null; then
    rejoin=$(awk '/^initial loss/ { run++ } run == 2 && /^step [0-9]+ loss/ { print $2; exit }' "$W/$victim.out")
    echo "  $victim was restarted, healed and rejoined: its first printed step after the restart is ${rejoin:-?}"
fi

# ---- summary --------------------------------------------------------------------------
echo
echo "Summary:"
printf '  %-4s %-16s %-18s %-12s %s\n' group "steps committed" "failures survived" "final loss" "state checksum"
for g in "${GROUPS_[@]}"; do
    o=$W/$g.out
    printf '  %-4s %-16s %-18s %-12s %s\n' "$g" \
        "$(sed -n 's/^steps committed \([0-9]*\).*/\1/p' "$o" | tail -n 1)" \
        "$(sed -n 's/^failures survived \([0-9]*\).*/\1/p' "$o" | tail -n 1)" \
        "$(sed -n 's/^final loss \(.*\)/\1/p' "$o" | tail -n 1)" \
        "$(sed -n 's/^state checksum \(.*\)/\1/p' "$o" | tail -n 1)"
done
first=$(sed -n 's/^initial loss \([^ ]*\).*/\1/p' "$W/${GROUPS_[0]}.out" | head -n 1)
echo "  initial loss ${first:-?}"
restarts=$(grep -c '"event":"restart"' "$W/agent.jsonl" 2>/dev/null)
echo "  restarts by ftmpi-run: ${restarts:-0}"

equal=yes
ref=$W/${GROUPS_[0]}.dump
for g in "${GROUPS_[@]}"; do
    for f in "$W/$g.dump" "$W/$g.dump".[0-9]*; do
        [ -e "$f" ] || continue
        cmp -s "$ref" "$f" || equal=no
    done
    [ -s "$W/$g.dump" ] || equal=no
done
files=()
for g in "${GROUPS_[@]}"; do files+=("$W/$g.out"); done
agree=$(final_agree $((${#GROUPS_[@]} * NP)) "${files[@]}") || equal=no
echo "  every rank of every group at the end: $agree"
echo "  registered state bitwise equal across groups (and ranks): $equal"
[ $status -eq 0 ] || echo "  some group did not finish cleanly (see $W; DEMO_KEEP=1 keeps it)"
[ "$equal" = yes ] && [ $status -eq 0 ]
