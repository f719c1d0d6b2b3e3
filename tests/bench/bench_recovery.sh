# tests/bench/bench_recovery.sh - recovery and healing (doc/PERFORMANCE.md,
# benchmark 4).  Groups of one rank, separate `mpirun -np 1` each, steps of
# bench_step paced by --sleep-ms 10 with a 64 KiB FT_Allreduce.
#
# A. kill and restart: 3 groups, 1 MiB of state, one ftmpi-lighthouse
#    --min-replicas 2 --heartbeat-timeout-ms 1000, then 5000 (BENCH_HB_LIST:
#    both must be independent of it).  Per repetition (7;
#    BENCH_QUICK: 2): SIGKILL the rank of group 2, then
#      kill -> survivors: from the kill to the first step that group 0
#                         commits with 2 participants;
#      restart -> commit: group 2 started again (same replica id) after its
#                         mpirun ended; from just before its FT_Init to its
#                         first committed step (it heals on the way).
#    Baselines in the same run: the heartbeat timeout (the detection floor
#    by design, configured) and the cold start, FT_Init -> first committed
#    step of the groups at the start of the run.
# B. healing: 64 MiB and 1 GiB of state (BENCH_QUICK: 64 MiB), group 0
#    running, group 1 started (7 times; BENCH_QUICK: 2) and killed after
#    its first committed step; its heal's bytes and ms come from the
#    FTMPI_EVENT_LOG "heal" lines.  Baseline: bench_tcpstream, one raw
#    loopback TCP stream of the same bytes between two processes.  Then
#    the heal alone (bench_heal, no MPI), direct and staged, against it.
# C. striped healing on loopback (issue 15 item 4): the same heal from 1
#    and from 3 running groups (every up-to-date group serves stripes);
#    64 MiB and 1 GiB (BENCH_QUICK: 64 MiB), 5 times each (BENCH_QUICK: 2).
# D. striped healing against a real bottleneck: every source group in a
#    network namespace of its own whose veth sends through
#    `tc qdisc ... tbf rate 1gbit`; the lighthouse and the healer on the
#    bridge (unlimited); 256 MiB (BENCH_QUICK: 64 MiB) from 1 and from 3
#    rate-limited sources; target 3 sources >= 2.5x 1 source.  Root only;
#    skipped with the reason when a namespace, veth, bridge or tbf fails.
# E. a rank's death under ftmpi-run, with and without its rank watch
#    (issue 24), see the part below.
# BENCH_RECOVERY_PARTS (default "A B C D E") picks the parts.
. "$(dirname "$0")/bench_common.sh"
bench_selected recovery || exit 0

PROG=$BENCH_BIN/bench_step
STREAM=$BENCH_BIN/bench_tcpstream
HEALB=$BENCH_BIN/bench_heal
for p in "$PROG" "$STREAM" "$HEALB"; do
    [ -x "$p" ] || { note "missing $p"; exit 1; }
done
REPS=7
HEAL_SIZES="64m 1g"
: "${BENCH_HB_LIST:=1000 5000}" # part A once per heartbeat timeout (ms)
if [ -n "$BENCH_QUICK" ]; then
    REPS=2
    HEAL_SIZES=64m
fi
STEP_ARGS="--steps 100000000 --warmup 0 --sleep-ms 10 --grad-bytes 64k"
: "${BENCH_RECOVERY_PARTS:=A B C D E}"
part() { case " $BENCH_RECOVERY_PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
STRIPE_REPS=5
STRIPE_SIZES="64m 1g"
NS_SIZE=256m
if [ -n "$BENCH_QUICK" ]; then
    STRIPE_REPS=2
    STRIPE_SIZES=64m
    NS_SIZE=64m
fi

# start_rank TAG ID STATE: one group (mpirun -np 1 bench_step) in the
# background; output in $BT/TAG; sets BG_PID (its process group).  With
# RANK_NS set, inside that network namespace, binding RANK_HOST.
start_rank() {
    bg_group "$BT/$1" ${RANK_NS:+ip netns exec "$RANK_NS"} env FTMPI_LIGHTHOUSE="$LH_ADDR" \
        FTMPI_REPLICA_ID="$2" FTMPI_BACKEND=tcp FTMPI_BIND_HOST="${RANK_HOST:-127.0.0.1}" \
        FTMPI_EVENT_LOG="$BT/events.log" \
        timeout -s KILL 600 "$MPIRUN" --oversubscribe --bind-to none -np 1 \
        "$PROG" $STEP_ARGS --state-bytes "$3"
}

# wait_match SECS FILE AWK-PROGRAM [VAR=VALUE...]: polls until the awk
# program prints something for FILE; prints that.  False on timeout.
wait_match() {
    _secs=$1
    _file=$2
    _prog=$3
    shift 3
    _end=$(($(date +%s) + _secs))
    while :; do
        _r=$(awk "$@" "$_prog" "$_file" 2>/dev/null)
        [ -n "$_r" ] && { echo "$_r"; return 0; }
        [ "$(date +%s)" -ge "$_end" ] && return 1
        sleep 0.02
    done
}

# ms_between T0 T1 (wall us): milliseconds from T0 to T1; div A B: A / B
ms_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", (b - a) / 1000 }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "nan"; else printf "%.4f\n", a / b }'; }

rank_pid() { awk '$1 == "PID" { print $2; exit }' "$BT/$1"; }

# first committed step with P participants after wall time T (us)
FIRST_COMMIT='$1 == "STEP" && $3 == 1 && $4 >= p && $5 > t { print $5; exit }'

# stats: "median min max n" of stdin, one number a line
stats() {
    sort -g | awk '{a[NR] = $1} END {
        if (NR == 0) { print "nan nan nan 0"; exit }
        m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
        print m, a[1], a[NR], NR }'
}

: >"$BENCH_OUT/recovery.txt"
status=0

# ---- A. kill and restart ------------------------------------------------
for HB_MS in $BENCH_HB_LIST; do
if part A; then
note "A: 3 groups, kill and restart group 2, $REPS times"
start_lighthouse "$BT/lhA" --min-replicas 2 --heartbeat-timeout-ms $HB_MS \
    --join-timeout-ms 5000 --quorum-tick-ms 50 || exit 1
for i in 0 1 2; do
    start_rank "a$i" "rec$i" 1m
    eval "pg$i=\$BG_PID"
done
: >"$BT/killA"
: >"$BT/restartA"
: >"$BT/coldA"
for i in 0 1 2; do
    t0=$(wait_match 60 "$BT/a$i" '$1 == "INIT" { print $2; exit }') &&
        t1=$(wait_match 60 "$BT/a$i" "$FIRST_COMMIT" -v p=1 -v t=0) &&
        ms_between "$t0" "$t1" >>"$BT/coldA" ||
        { note "group $i did not start"; tail -n 5 "$BT/a$i" >&2; status=1; }
done
tag=a2
r=0
while [ $status -eq 0 ] && [ $r -lt $REPS ]; do
    # all three in the quorum, then kill group 2
    if ! wait_match 60 "$BT/a0" "$FIRST_COMMIT" -v p=3 -v "t=$(now_us)" >/dev/null; then
        note "A: the 3 groups did not commit together"
        status=1
        break
    fi
    pid=$(rank_pid $tag)
    tk=$(now_us)
    kill -KILL "$pid"
    if tc=$(wait_match 60 "$BT/a0" '$1 == "STEP" && $3 == 1 && $4 == 2 && $5 > t { print $5; exit }' -v "t=$tk"); then
        ms_between "$tk" "$tc" >>"$BT/killA"
    else
        note "A: the survivors did not commit without group 2"
        status=1
        break
    fi
    wait_pids 20 "$pg2" || note "A: mpirun of group 2 still there after its rank died"
    kill_group "$pg2"
    r=$((r + 1))
    tag=a2r$r
    start_rank "$tag" rec2 1m
    pg2=$BG_PID
    if t0=$(wait_match 60 "$BT/$tag" '$1 == "INIT" { print $2; exit }') &&
        t1=$(wait_match 60 "$BT/$tag" "$FIRST_COMMIT" -v p=1 -v t=0); then
        ms_between "$t0" "$t1" >>"$BT/restartA"
    else
        note "A: the restarted group 2 did not commit"
        tail -n 5 "$BT/$tag" >&2
        status=1
    fi
done
step_ms=$(awk '$1 == "STEP" && $3 == 1 && $4 == 3 { print ($6 + $7 + $8) / 1000 + 10 }' "$BT/a0" | stats)
for i in 0 1; do eval "kill_group \$pg$i"; done
kill_group "$pg2"
stop_lighthouse

{
    echo "# bench_recovery $(date -u +%Y-%m-%dT%H:%M:%SZ) $BENCH_MACHINE (at the start)"
    echo "A. kill and restart: 3 groups of 1 rank, 1 MiB state, steps of 10 ms sleep + 64 KiB allreduce"
    echo "   lighthouse --min-replicas 2 --heartbeat-timeout-ms $HB_MS --join-timeout-ms 5000; FTMPI_HEARTBEAT_MS default (100)"
    printf "%-28s %10s %10s %10s %4s %-26s %8s\n" measure median_ms min_ms max_ms n baseline ratio
    set -- $(stats <"$BT/killA")
    printf "%-28s %10.1f %10.1f %10.1f %4d %-26s %8.2f\n" "kill -> survivors commit" "$1" "$2" "$3" "$4" \
        "heartbeat timeout $HB_MS ms" "$(div "$1" "$HB_MS")"
    set -- $(stats <"$BT/coldA")
    cold=$1
    printf "%-28s %10.1f %10.1f %10.1f %4d %-26s %8s\n" "cold start -> commit" "$1" "$2" "$3" "$4" "-" "-"
    set -- $(stats <"$BT/restartA")
    printf "%-28s %10.1f %10.1f %10.1f %4d %-26s %8.2f\n" "restart FT_Init -> commit" "$1" "$2" "$3" "$4" \
        "cold start $(printf %.1f "$cold") ms" "$(div "$1" "$cold")"
    set -- $step_ms
    printf "(a step of the 3 groups: median %.1f ms)\n\n" "$1"
} | table_out recovery.txt
fi
done
HB_MS=1000 # parts B-E

# ---- E. a rank's death under ftmpi-run (issue 24) -----------------------
# 2 groups of 1 rank, each under ftmpi-run (--backoff-ms 0), lighthouse
# --min-replicas 2 (= the number of groups: the survivor cannot commit
# alone).  Per repetition (REPS): SIGKILL the rank of group 1, then
#   kill -> its group commits again: to the first step the restarted group
#            1 commits;
#   kill -> survivors commit: to group 0's first commit with the restarted
#            group 1.
# Once with ftmpi-run --no-rank-watch (the agent waits for mpirun to end,
# as before issue 24), once with the rank watch (the agent ends the group
# as soon as the rank is gone).
RUNAGENT=$top_builddir/ftmpi-run
last_pid() { awk '$1 == "PID" { p = $2 } END { print p }' "$BT/$1"; }
if part E && [ -x "$RUNAGENT" ]; then
for WATCH in off on; do
    note "E: 2 groups under ftmpi-run (rank watch $WATCH), kill the rank of group 1, $REPS times"
    start_lighthouse "$BT/lhE$WATCH" --min-replicas 2 --heartbeat-timeout-ms $HB_MS \
        --join-timeout-ms 5000 --quorum-tick-ms 50 || { status=1; break; }
    flag=
    [ "$WATCH" = off ] && flag=--no-rank-watch
    for i in 0 1; do
        bg_group "$BT/e$WATCH$i" env FTMPI_LIGHTHOUSE="$LH_ADDR" FTMPI_BACKEND=tcp \
            FTMPI_BIND_HOST=127.0.0.1 timeout -s KILL 600 "$RUNAGENT" --replica-id "run$i" \
            --max-restarts 100 --backoff-ms 0 $flag -- "$MPIRUN" --oversubscribe --bind-to none \
            -np 1 "$PROG" $STEP_ARGS --state-bytes 1m
        eval "pe$i=\$BG_PID"
    done
    : >"$BT/groupE$WATCH"
    : >"$BT/survE$WATCH"
    r=0
    while [ $r -lt $REPS ]; do
        if ! wait_match 60 "$BT/e${WATCH}0" "$FIRST_COMMIT" -v p=2 -v "t=$(now_us)" >/dev/null; then
            note "E: the 2 groups did not commit together"
            status=1
            break
        fi
        pid=$(last_pid "e${WATCH}1")
        tk=$(now_us)
        kill -KILL "$pid"
        # commits of the restarted group (a step in flight at the kill may
        # still commit before the rank is gone: not counted)
        if ti=$(wait_match 60 "$BT/e${WATCH}1" '$1 == "INIT" && $2 > t { print $2; exit }' -v "t=$tk") &&
            tg=$(wait_match 60 "$BT/e${WATCH}1" "$FIRST_COMMIT" -v p=1 -v "t=$ti") &&
            ts=$(wait_match 60 "$BT/e${WATCH}0" "$FIRST_COMMIT" -v p=2 -v "t=$ti"); then
            ms_between "$tk" "$tg" >>"$BT/groupE$WATCH"
            ms_between "$tk" "$ts" >>"$BT/survE$WATCH"
        else
            note "E: no commit after the kill"
            tail -n 5 "$BT/e${WATCH}1" >&2
            status=1
            break
        fi
        r=$((r + 1))
    done
    kill_group "$pe0"
    kill_group "$pe1"
    stop_lighthouse
done
{
    echo "# bench_recovery $(date -u +%Y-%m-%dT%H:%M:%SZ) $BENCH_MACHINE (at the start)"
    echo "E. a rank's death under ftmpi-run: 2 groups of 1 rank, lighthouse --min-replicas 2, ftmpi-run --backoff-ms 0"
    printf "%-44s %10s %10s %10s %4s\n" measure median_ms min_ms max_ms n
    for WATCH in off on; do
        set -- $(stats <"$BT/groupE$WATCH")
        printf "%-44s %10.1f %10.1f %10.1f %4d\n" "SIGKILL of a rank -> its group commits (watch $WATCH)" "$1" "$2" "$3" "$4"
        set -- $(stats <"$BT/survE$WATCH")
        printf "%-44s %10.1f %10.1f %10.1f %4d\n" "  -> the survivors commit (watch $WATCH)" "$1" "$2" "$3" "$4"
    done
    echo
} | table_out recovery.txt
fi

# ---- B. healing ---------------------------------------------------------
rows=""
alone=""
part B || HEAL_SIZES=""
for size in $HEAL_SIZES; do
    note "B: healing $size, $REPS times"
    : >"$BT/events.log"
    start_lighthouse "$BT/lhB$size" --min-replicas 1 --heartbeat-timeout-ms $HB_MS \
        --join-timeout-ms 5000 --quorum-tick-ms 50 || { status=1; break; }
    start_rank "b0$size" heal0 "$size"
    pgb0=$BG_PID
    if ! wait_match 120 "$BT/b0$size" "$FIRST_COMMIT" -v p=1 -v t=0 >/dev/null; then
        note "B: group 0 did not start"
        tail -n 5 "$BT/b0$size" >&2
        status=1
    fi
    r=0
    while [ $status -eq 0 ] && [ $r -lt $REPS ]; do
        start_rank "b1$size.$r" heal1 "$size"
        pg=$BG_PID
        if ! wait_match 120 "$BT/b1$size.$r" "$FIRST_COMMIT" -v p=1 -v t=0 >/dev/null; then
            note "B: the joining group did not commit"
            tail -n 5 "$BT/b1$size.$r" >&2
            status=1
        fi
        kill -KILL "$(rank_pid "b1$size.$r")" 2>/dev/null
        wait_pids 20 "$pg"
        kill_group "$pg"
        r=$((r + 1))
    done
    kill_group "$pgb0"
    stop_lighthouse
    grep '"event":"heal"' "$BT/events.log" | grep '"replica_id":"heal1"' | grep '"error":0' |
        sed 's/.*"bytes":\([0-9]*\).*"heal_ms":\([0-9]*\).*/\1 \2/' >"$BT/heal$size"
    note "B: raw loopback TCP stream of $size"
    "$STREAM" --bytes "$size" --reps "$REPS" >"$BT/raw$size" 2>&1 || status=1
    hb=$(awk 'NR == 1 { print $1 }' "$BT/heal$size")
    set -- $(awk '{ print $2 }' "$BT/heal$size" | stats)
    raw_ms=$(awk '$1 == "RESULT" { print $3 / 1000 }' "$BT/raw$size")
    rows="$rows$size ${hb:-0} $1 $2 $3 $4 ${raw_ms:-nan}
"
    # the heal alone (bench_heal: no MPI, no lighthouse), direct and staged
    for how in direct staged; do
        "$HEALB" --bytes "$size" --reps "$REPS" $([ $how = staged ] && echo --staged) \
            >"$BT/alone$how$size" 2>&1 || status=1
    done
    alone="$alone$size $(awk '$1 == "RESULT" { print $3 / 1000 }' "$BT/alonedirect$size") \
$(awk '$1 == "RESULT" { print $3 / 1000 }' "$BT/alonestaged$size") ${raw_ms:-nan}
"
done
[ -z "$HEAL_SIZES" ] || {
    echo "B. healing: 1 running group, 1 joining group heals its whole state from it"
    printf "%6s %12s %10s %9s %9s %4s %11s %10s %9s %8s\n" state bytes heal_ms min_ms max_ms n \
        heal_MiB/s raw_tcp_ms raw_MiB/s heal/raw
    printf "%s" "$rows" | awk 'NF == 7 {
        hm = $3 > 0 ? $2 / 1048576 / ($3 / 1000) : 0
        rm = ($7 != "nan" && $7 > 0) ? $2 / 1048576 / ($7 / 1000) : 0
        printf "%6s %12d %10.1f %9.1f %9.1f %4d %11.1f %10.2f %9.1f %8.2f\n", $1, $2, $3, $4, $5, $6,
            hm, $7, rm, ($7 > 0 ? $3 / $7 : 0) }'
    echo "(heal_ms: the library's FTMPI_EVENT_LOG heal lines, ms resolution; raw: bench_tcpstream,"
    echo " connect + write + 1-byte ack between two processes on 127.0.0.1, median of $REPS after 1 warm-up)"
    echo "the heal alone (bench_heal: source and healer in one process, no MPI), median of $REPS"
    printf "%6s %10s %10s %10s %12s\n" state direct_ms staged_ms raw_tcp_ms raw/direct
    printf "%s" "$alone" | awk 'NF == 4 {
        printf "%6s %10.1f %10.1f %10.2f %12.2f\n", $1, $2, $3, $4, ($2 > 0 ? $4 / $2 : 0) }'
    echo
} | table_out recovery.txt

. "$(dirname "$0")/bench_recovery_stripe.sh"
exit $status
