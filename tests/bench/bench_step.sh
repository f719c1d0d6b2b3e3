# tests/bench/bench_step.sh - the per-step cost of fault tolerance:
# FT_Quorum + FT_Commit without failures (doc/PERFORMANCE.md section 6).
#
# For G in 2 8 groups of one rank (separate `mpirun -np 1` each, one
# ftmpi-lighthouse --min-replicas G):
#   alone:   bench_step --steps S: FT_Quorum + FT_Commit and nothing else;
#            the median over the steps after 20 warm-up steps, per group,
#            then the median over the groups.
#   ft_sgd:  examples/ft_sgd --print-every 1 --features F on the same G
#            groups; its step time is the median gap between consecutive
#            "step N" lines of group 0 (time-stamped by bench_stamp).
# The last column is the share of an ft_sgd step that the step protocol
# alone costs: overhead / ft_sgd step, both measured in this run.
# S = 300 (BENCH_QUICK: 60); F = 262144 features (a 1 MiB gradient).
#
# Then the asynchronous quorum (issue 15), for G in 2 8 32 groups:
# bench_step --sleep-ms 5 (a compute of 5 ms) with FT_Quorum(0) and with
# FT_Quorum(FT_QUORUM_ASYNC); the quorum's cost on the step's critical path
# is the FT_Quorum call plus the wait for it after the compute (bench_step.c),
# median over the steps after 20, then over the groups.  AS steps (100,
# BENCH_QUICK: 40).
. "$(dirname "$0")/bench_common.sh"
bench_selected step || exit 0

PROG=$BENCH_BIN/bench_step
SGD=$top_builddir/examples/ft_sgd
[ -x "$PROG" ] || { note "missing $PROG"; exit 1; }
STEPS=300
SGD_STEPS=60
FEATURES=262144
AS=100
if [ -n "$BENCH_QUICK" ]; then
    STEPS=60
    SGD_STEPS=30
    AS=40
fi

# run_groups G TAG CMD...: G groups running CMD under one lighthouse;
# outputs (stdout and stderr, time-stamped by bench_stamp, then a line
# "EXIT <status>") in $BT/TAG.<i>.  False unless every group exited 0.
run_groups() {
    _g=$1
    _tag=$2
    shift 2
    start_lighthouse "$BT/$_tag.lh" --min-replicas "$_g" --join-timeout-ms 30000 \
        --heartbeat-timeout-ms 30000 --quorum-tick-ms 100 || return 1
    _pids=""
    _i=0
    while [ $_i -lt "$_g" ]; do
        bg_group "$BT/$_tag.$_i" env FTMPI_LIGHTHOUSE="$LH_ADDR" FTMPI_REPLICA_ID="st$_i" \
            FTMPI_BACKEND=tcp timeout -s KILL 300 \
            sh -c '{ "$@" 2>&1; echo "EXIT $?"; } | "$0"' "$BENCH_BIN/bench_stamp" \
            "$MPIRUN" --oversubscribe --bind-to none -np 1 "$@"
        _pids="$_pids $BG_PID"
        _i=$((_i + 1))
    done
    for _p in $_pids; do
        wait "$_p"
    done
    stop_lighthouse
    # every group's command exited 0 (the pipe hides its status: EXIT line)
    [ "$(cat "$BT/$_tag".[0-9]* | grep -c ' EXIT 0$')" -eq "$_g" ]
}

# median of stdin (one number a line)
median() {
    sort -g | awk '{a[NR] = $1} END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

: >"$BENCH_OUT/step.txt"
rows=""
status=0
for g in 2 8; do
    note "groups=$g: FT_Quorum + FT_Commit alone, $STEPS steps"
    if ! run_groups "$g" "alone$g" "$PROG" --steps "$STEPS" --warmup 20; then
        note "bench_step with $g groups failed:"
        tail -n 3 "$BT/alone$g".* >&2
        status=1
        continue
    fi
    q=$(cat "$BT/alone$g".[0-9]* | awk '$2 == "SUMMARY" { print $6 }' | median)
    c=$(cat "$BT/alone$g".[0-9]* | awk '$2 == "SUMMARY" { print $10 }' | median)
    o=$(cat "$BT/alone$g".[0-9]* | awk '$2 == "SUMMARY" { print $14 }' | median)
    sgd=nan
    if [ -x "$SGD" ]; then
        note "groups=$g: examples/ft_sgd, $SGD_STEPS steps, $FEATURES features"
        if run_groups "$g" "sgd$g" "$SGD" --steps "$SGD_STEPS" --print-every 1 \
            --features "$FEATURES"; then
            sgd=$(awk '$2 == "step" && $3 + 0 > 5 { if (p) print $1 - p; p = $1 }' "$BT/sgd$g.0" | median)
        else
            note "ft_sgd with $g groups failed:"
            tail -n 3 "$BT/sgd$g".* >&2
            status=1
        fi
    else
        note "no $SGD: the ft_sgd columns stay empty"
    fi
    rows="$rows$g $q $c $o $sgd
"
done

{
    echo "# bench_step $(date -u +%Y-%m-%dT%H:%M:%SZ) $BENCH_MACHINE (at the start); steps=$STEPS, ft_sgd: $SGD_STEPS steps, $FEATURES features"
    printf "%6s %11s %11s %13s %14s %12s\n" groups quorum_us commit_us overhead_us ft_sgd_step_us \
        share
    printf "%s" "$rows" | awk 'NF == 5 {
        share = ($5 == "nan" || $5 == 0) ? "n/a" : sprintf("%.4f", $4 / $5)
        printf "%6d %11.1f %11.1f %13.1f %14s %12s\n", $1, $2, $3, $4, $5 == "nan" ? "n/a" : sprintf("%.1f", $5), share }'
    echo "(medians; overhead = FT_Quorum + FT_Commit per step with nothing else in the step;"
    echo " share = overhead / one ft_sgd step of the same number of groups)"
    echo
} | table_out step.txt

# the asynchronous quorum: sync vs async with the same 5 ms compute
rows=""
for g in 2 8 32; do
    for a in 0 1; do
        note "groups=$g: FT_Quorum(${a#0}) with a 5 ms compute, async=$a, $AS steps"
        if ! run_groups "$g" "async$a.$g" "$PROG" --steps "$AS" --warmup 20 --sleep-ms 5 \
            --async-quorum "$a"; then
            note "bench_step --async-quorum $a with $g groups failed:"
            tail -n 3 "$BT/async$a.$g".* >&2
            status=1
        fi
    done
    qs=$(cat "$BT/async0.$g".[0-9]* | awk '$2 == "SUMMARY" { print $6 }' | median)
    qa=$(cat "$BT/async1.$g".[0-9]* | awk '$2 == "SUMMARY" { print $6 }' | median)
    rows="$rows$g $qs $qa
"
done
{
    echo "# bench_step async quorum $(date -u +%Y-%m-%dT%H:%M:%SZ) $BENCH_MACHINE (at the start); steps=$AS, compute 5 ms"
    printf "%6s %15s %16s %8s\n" groups sync_quorum_us async_quorum_us target
    printf "%s" "$rows" | awk 'NF == 3 { printf "%6d %15.1f %16.1f %8s\n", $1, $2, $3, $1 == 8 ? "<= 20" : "-" }'
    echo "(medians of the quorum's cost on the step's critical path: the FT_Quorum call plus"
    echo " the wait for it after the compute; async = FT_Quorum(FT_QUORUM_ASYNC))"
    echo
} | table_out step.txt
exit $status
