# tests/bench/bench_baby.sh - baby-tcp vs tcp allreduce bus bandwidth per
# size, 2 ranks on 127.0.0.1, ftmpi_mem_alloc buffers, one run (the ratio
# must be >= 0.9 at >= 1 MiB: issue 12; the "ratio" column, of the medians,
# is checked, "best" is that of the fastest repetitions), the child respawn
# time and the channel's own cost per call, call_us (doc/PERFORMANCE.md,
# "The baby runner").  nccl vs baby-nccl vs plain
# NCCL needs a GPU: skipped where none is present.
. "$(dirname "$0")/bench_common.sh"
bench_selected baby || exit 0

MAX=67108864
REPS=7
RESPAWNS=50
if [ -n "$BENCH_QUICK" ]; then
    MAX=4194304
    REPS=3
    RESPAWNS=10
fi
FTMPI_BABY_PATH=$top_builddir/ftmpi-baby
export FTMPI_BABY_PATH
RUN=$BENCH_OUT/baby.run
timeout 600 "$BENCH_BIN/bench_baby" --max $MAX --reps $REPS --respawns $RESPAWNS >"$RUN" || exit 1
table_out baby.txt <"$RUN"
# the must-hold: baby-tcp >= 0.9 x tcp at >= 1 MiB, in this run
awk '$1 ~ /^[0-9]+$/ && $1 >= 1048576 && $4 < 0.9 { bad = 1; print "ratio " $4 " at " $1 " bytes < 0.9" }
     END { exit bad }' "$RUN" >&2 || note "baby-tcp below 0.9x tcp at >= 1 MiB (see above)"
if ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
    note "a GPU is present: nccl vs baby-nccl vs plain NCCL is not written yet"
else
    note "no GPU: nccl vs baby-nccl vs plain NCCL skipped"
fi
