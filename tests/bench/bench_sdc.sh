# tests/bench/bench_sdc.sh - the cost of the silent data corruption check
# (FTMPI_SDC_EVERY, issue 26 item 1; doc/PERFORMANCE.md, "SDC check").
#
# 2 groups of one rank (separate `mpirun -np 1` each), bench_step with a
# registered state of STATE bytes (256 MiB) and a gradient as large (a
# data-parallel step: FT_Allreduce of the gradient), FTMPI_SDC_EVERY=E.
# A check step (FT_Step() a multiple of E) fingerprints the whole state
# (XXH3, the heal checksum) before its quorum request, which carries the
# fingerprints to the lighthouse, which compares them: its extra time is
# all in that step's quorum.  Per check: the median quorum time of the
# check steps minus that of the other steps (group 0, after the first 2
# steps).  The check costs per step (check / 100) at K = 100, as a share
# of the median step (quorum + allreduce + commit of the other steps).
# Target: <= 0.01.  E = 10 so that one run holds several checks; the cost
# of one check does not depend on E.  S = 52 steps (BENCH_QUICK: 22).
. "$(dirname "$0")/bench_common.sh"
bench_selected sdc || exit 0

PROG=$BENCH_BIN/bench_step
[ -x "$PROG" ] || { note "missing $PROG"; exit 1; }
STATE=268435456
E=10
K=100
S=52
[ -n "$BENCH_QUICK" ] && S=22

start_lighthouse "$BT/sdc.lh" --min-replicas 2 --join-timeout-ms 30000 \
    --heartbeat-timeout-ms 60000 --quorum-tick-ms 100 || exit 1
note "2 groups, state and gradient $STATE bytes, FTMPI_SDC_EVERY=$E, $S steps"
pids=""
for i in 0 1; do
    bg_group "$BT/sdc.$i" env FTMPI_LIGHTHOUSE="$LH_ADDR" FTMPI_REPLICA_ID="sdc$i" \
        FTMPI_BACKEND=tcp FTMPI_SDC_EVERY=$E FTMPI_TIMEOUT_MS=120000 timeout -s KILL 900 \
        sh -c '{ "$@" 2>&1; echo "EXIT $?"; } | "$0"' "$BENCH_BIN/bench_stamp" \
        "$MPIRUN" --oversubscribe --bind-to none -np 1 "$PROG" --steps "$S" --warmup 2 \
        --state-bytes "$STATE" --grad-bytes "$STATE"
    pids="$pids $BG_PID"
done
for p in $pids; do
    wait "$p"
done
stop_lighthouse
[ "$(cat "$BT"/sdc.[0-9]* | grep -c ' EXIT 0$')" -eq 2 ] || {
    note "bench_step failed:"
    tail -n 5 "$BT"/sdc.[0-9]* >&2
    exit 1
}
# a check that found something would be a bug here (equal states)
if grep -q 'SDC: group' "$BT/sdc.lh"; then
    note "the lighthouse reported a mismatch of equal states:"
    grep 'SDC: group' "$BT/sdc.lh" >&2
    exit 1
fi

# STEP lines of group 0 (after the stamp): $3 step, $4 committed, $7 quorum_us,
# $8 allreduce_us, $9 commit_us
awk -v e=$E '$2 == "STEP" && $4 == 1 && $3 >= 2 {
        if ($3 % e == 0) print "check", $7; else print "other", $7, $7 + $8 + $9 }' \
    "$BT/sdc.0" >"$BT/sdc.steps"
med() { sort -g | awk '{a[NR] = $1} END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
qc=$(awk '$1 == "check" { print $2 }' "$BT/sdc.steps" | med)
qo=$(awk '$1 == "other" { print $2 }' "$BT/sdc.steps" | med)
st=$(awk '$1 == "other" { print $3 }' "$BT/sdc.steps" | med)
nc=$(grep -c '^check' "$BT/sdc.steps")
{
    echo "# bench_sdc $(date -u +%Y-%m-%dT%H:%M:%SZ) $BENCH_MACHINE (at the start); 2 groups, state $STATE bytes, gradient as large, FTMPI_SDC_EVERY=$E, $S steps"
    printf "%7s %15s %15s %13s %12s %14s %12s\n" checks check_quorum_us other_quorum_us per_check_us step_us per_step_K100 share_K100
    awk -v qc="$qc" -v qo="$qo" -v st="$st" -v nc="$nc" -v k=$K 'BEGIN {
        c = qc - qo; if (c < 0) c = 0
        printf "%7d %15.1f %15.1f %13.1f %12.1f %14.1f %12.5f\n", nc, qc, qo, c, st, c / k, c / k / st }'
    echo "(medians of group 0; per_check = check_quorum - other_quorum: fingerprinting $STATE bytes,"
    echo " the larger request, the lighthouse's comparison; share_K100 = per_check / $K / step; target <= 0.01)"
    echo
} | table_out sdc.txt
