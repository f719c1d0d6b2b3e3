#!/bin/sh
# tests/bench/bench_modeb_kill.sh - mode B after a SIGKILL (issue 38): what
# a dead rank costs the survivors on Open MPI 4.1 (mpirun --enable-recovery,
# the library's own detector) and on Open MPI 5 with ULFM (mpirun --with-ft
# ulfm: the MPI's own failure reports, revoke, MPIX_Comm_agree), in one run.
#
# One mpirun -np 9: 4 groups of 2 ranks and the lighthouse rank, ft_sgd
# --sleep-ms 10, world rank 3 (g1) SIGKILLs itself in step 20's commit.
# From g0's commit events (FTMPI_EVENT_LOG): the survivors' cost is the
# time from g0's last commit with 4 groups to its first with 3, less g0's
# median step (its commits of steps 5-19): what the failure added to the
# step it happened in.  Repetitions alternate the two MPIs (BENCH_REPS, 5;
# BENCH_QUICK: 2), so both see the same load; the median of each.
#
# Open MPI 5: BENCH_OMPI5_BUILD, a build folder of this tree configured
# with Open MPI 5's wrappers (default: ../_build_ompi5 beside this build,
# what ./quickstart.sh check-ompi5 makes), and its MPI tree
# (BENCH_OMPI5, default: the one that build's config.log names).  Without
# either the 5.0 column is skipped with the reason.  The deadlines are the
# mode B tests' (modeb_lib.sh): FTMPI_TIMEOUT_MS=2000, heartbeats 100 ms,
# the lighthouse's heartbeat timeout 1000 ms.
. "$(dirname "$0")/bench_common.sh"
bench_selected modeb_kill || exit 0

REPS=5
[ -n "$BENCH_QUICK" ] && REPS=2
REPS=${BENCH_REPS:-$REPS}
SGD41=$top_builddir/examples/ft_sgd
[ -x "$SGD41" ] || { note "missing $SGD41"; exit 1; }
B5=${BENCH_OMPI5_BUILD:-$(cd "$top_builddir/.." && pwd)/_build_ompi5}
SGD5=$B5/examples/ft_sgd
O5=${BENCH_OMPI5:-}
if [ -z "$O5" ] && [ -f "$B5/config.log" ]; then
    O5=$(sed -n "s|^MPICC='\(.*\)/bin/mpicc'\$|\1|p" "$B5/config.log" | head -n 1)
fi
why5=
[ -x "$SGD5" ] || why5="no $SGD5 (./quickstart.sh check-ompi5 builds it; BENCH_OMPI5_BUILD)"
[ -z "$why5" ] && { [ -n "$O5" ] && [ -x "$O5/bin/mpirun" ]; } ||
    why5=${why5:-"no Open MPI 5 tree (BENCH_OMPI5=DIR with bin/mpirun)"}

FTMPI_GROUP_SIZE=2 FTMPI_TIMEOUT_MS=2000 FTMPI_HEARTBEAT_MS=100
FTMPI_LH_HEARTBEAT_TIMEOUT_MS=1000 FTMPI_LH_JOIN_TIMEOUT_MS=1000 FTMPI_LH_QUORUM_TICK_MS=50
export FTMPI_GROUP_SIZE FTMPI_TIMEOUT_MS FTMPI_HEARTBEAT_MS FTMPI_LH_HEARTBEAT_TIMEOUT_MS \
    FTMPI_LH_JOIN_TIMEOUT_MS FTMPI_LH_QUORUM_TICK_MS
XS="-x FTMPI_GROUP_SIZE -x FTMPI_TIMEOUT_MS -x FTMPI_HEARTBEAT_MS -x FTMPI_LH_HEARTBEAT_TIMEOUT_MS
    -x FTMPI_LH_JOIN_TIMEOUT_MS -x FTMPI_LH_QUORUM_TICK_MS -x FTMPI_EVENT_LOG -x FTMPI_LOG_LEVEL"
ARGS="--steps 40 --sleep-ms 10 --die-at-step 20 --die-rank 3 --die-where commit"

# cost EVENTS: g0's added ms at the failure (see above), or nothing
cost() {
    grep '"event":"commit"' "$1" | grep '"replica_id":"g0","group_rank":0,' |
        sed -n 's/^{"ts_ms":\([0-9]*\),.*"step":\([0-9]*\),"committed":true,"participants":\([0-9]*\),.*/\1 \2 \3/p' |
        awk '$2 >= 5 && $2 <= 19 && $3 == 4 { gap[n++] = $1 - prev }
             { if ($3 == 4) last4 = $1; else if ($3 == 3 && !t3) t3 = $1; prev = $1 }
             END {
                 if (!n || !t3 || !last4) exit 1
                 for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (gap[j] < gap[i]) { t = gap[i]; gap[i] = gap[j]; gap[j] = t }
                 print t3 - last4 - gap[int(n / 2)]
             }'
}
# one_run WHICH N: one job; prints its cost
one_run() {
    _d=$BT/$1.$2
    mkdir -p "$_d"
    if [ "$1" = 41 ]; then
        # shellcheck disable=SC2086
        FTMPI_EVENT_LOG=$_d/ev.jsonl timeout -k 5 120 "$MPIRUN" --enable-recovery -np 9 $XS \
            "$SGD41" $ARGS >"$_d/out" 2>&1
    else
        # shellcheck disable=SC2086
        FTMPI_EVENT_LOG=$_d/ev.jsonl OPAL_PREFIX=$O5 PATH=$O5/bin:$PATH \
            LD_LIBRARY_PATH=$O5/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
            timeout -k 5 120 "$O5/bin/mpirun" --with-ft ulfm --mca pml ob1 --map-by :OVERSUBSCRIBE \
            --runtime-options error-nonzero-status=false -np 9 $XS "$SGD5" $ARGS >"$_d/out" 2>&1
    fi
    _rc=$?
    _c=$(cost "$_d/ev.jsonl") || { note "$1 run $2: no cost found (mpirun $_rc): $(tail -n 3 "$_d/out" | tr '\n' ' ')"; return 1; }
    echo "$_c"
}
median() { sort -n | awk '{ v[n++] = $1 } END { if (n) print v[int((n - 1) / 2)]; else print "-" }'; }

note "$(machine); $REPS repetitions, alternating"
: >"$BT/41" && : >"$BT/5"
i=1
while [ $i -le "$REPS" ]; do
    one_run 41 $i >>"$BT/41" || true
    [ -z "$why5" ] && { one_run 5 $i >>"$BT/5" || true; }
    i=$((i + 1))
done
m41=$(median <"$BT/41")
{
    echo "# mode B: a rank SIGKILLed in its commit, what it adds to the survivors' step (ms, median of $REPS)"
    echo "# $(machine)"
    printf '%-34s %8s %s\n' "MPI" "added_ms" "runs"
    printf '%-34s %8s %s\n' "Open MPI 4.1 --enable-recovery" "$m41" "$(tr '\n' ' ' <"$BT/41")"
    if [ -n "$why5" ]; then
        printf '%-34s %8s %s\n' "Open MPI 5 ULFM" "-" "skipped: $why5"
    else
        m5=$(median <"$BT/5")
        printf '%-34s %8s %s\n' "Open MPI 5 ULFM" "$m5" "$(tr '\n' ' ' <"$BT/5")"
        [ "$m41" != - ] && [ "$m5" != - ] && [ "$m41" -gt 0 ] &&
            echo "# ULFM / 4.1: $(awk -v a="$m5" -v b="$m41" 'BEGIN { printf "%.2f", a / b }')"
    fi
} | table_out modeb_kill.txt
