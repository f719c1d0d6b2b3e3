# tests/bench/bench_overlap.sh - compute overlapping the allreduce
# (doc/PERFORMANCE.md, "Overlap and asynchronous quorum"; issue 15 item 6).
#
# 2 groups of one rank (separate `mpirun -np 1` each, tcp backend, one
# ftmpi-lighthouse --min-replicas 2) run bench_overlap --bytes 64m: A = the
# median 64 MiB FT_Allreduce, T = A (the largest A of the groups); a step of
# compute T (a sleep) and that allreduce, blocking (sleep, FT_Allreduce) vs
# overlapped (FT_Iallreduce, sleep, FT_Wait).  The ratios are the step's
# time / max(T, A): 2 for a blocking step, 1 for a perfect overlap (target
# <= 1.2).  Medians over 10 steps after 3 (BENCH_QUICK: 4 after 1), then the
# worse of the two groups.
. "$(dirname "$0")/bench_common.sh"
bench_selected overlap || exit 0

PROG=$BENCH_BIN/bench_overlap
[ -x "$PROG" ] || { note "missing $PROG"; exit 1; }
STEPS=10
WARMUP=3
if [ -n "$BENCH_QUICK" ]; then
    STEPS=4
    WARMUP=1
fi
G=2

start_lighthouse "$BT/overlap.lh" --min-replicas "$G" --join-timeout-ms 30000 \
    --heartbeat-timeout-ms 30000 --quorum-tick-ms 100 || exit 1
pids=""
i=0
while [ $i -lt "$G" ]; do
    bg_group "$BT/overlap.$i" env FTMPI_LIGHTHOUSE="$LH_ADDR" FTMPI_REPLICA_ID="ov$i" \
        FTMPI_BACKEND=tcp FTMPI_TIMEOUT_MS=60000 timeout -s KILL 300 \
        "$MPIRUN" --oversubscribe --bind-to none -np 1 "$PROG" --bytes 64m --steps "$STEPS" \
        --warmup "$WARMUP"
    pids="$pids $BG_PID"
    i=$((i + 1))
done
for p in $pids; do
    wait "$p"
done
stop_lighthouse
status=0
[ "$(cat "$BT"/overlap.[0-9]* | grep -c '^SUMMARY')" -eq "$G" ] || {
    note "bench_overlap failed:"
    tail -n 5 "$BT"/overlap.[0-9]* >&2
    status=1
}
{
    echo "# bench_overlap $(date -u +%Y-%m-%dT%H:%M:%SZ) $BENCH_MACHINE (at the start); $G groups, 64 MiB, steps=$STEPS"
    printf "%6s %8s %8s %12s %11s %15s %14s %8s\n" group A_ms T_ms blocking_ms overlap_ms \
        blocking_ratio overlap_ratio target
    i=0
    while [ $i -lt "$G" ]; do
        awk -v g="$i" '$1 == "SUMMARY" { printf "%6d %8.1f %8.1f %12.1f %11.1f %15.3f %14.3f %8s\n", g, $5, $7, $9, $11, $13, $15, "<= 1.2" }' \
            "$BT/overlap.$i"
        i=$((i + 1))
    done
    echo "(ratio = median step time / max(T, A); a step = FT_Quorum, compute T, 64 MiB allreduce, FT_Commit)"
    echo
} | table_out overlap.txt
exit $status
