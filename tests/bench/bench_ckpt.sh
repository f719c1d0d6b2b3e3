# tests/bench/bench_ckpt.sh - durable checkpoints (issue 14): write
# throughput against plain write + fsync of the same bytes, the step-time
# cost of an async checkpoint (taken with the writer idle) against one
# memcpy of the registered bytes, and loading with and without resharding;
# medians of alternating repetitions (bench_ckpt.c).  256 MB and 12 step
# samples in a scratch folder of the build dir (BENCH_QUICK: 64 MB, 10
# samples); FTMPI_BENCH_CKPT_DIR to use another disk.  About 15-60 s.
. "$(dirname "$0")/bench_common.sh"
bench_selected ckpt || exit 0
PROG=$BENCH_BIN/bench_ckpt
[ -x "$PROG" ] || { note "missing $PROG"; exit 1; }
MB=256
SAMPLES=12
if [ -n "$BENCH_QUICK" ]; then
    MB=64
    SAMPLES=10
fi
dir=${FTMPI_BENCH_CKPT_DIR:-$top_builddir/bench-ckpt.$$}
mkdir -p "$dir" || exit 1
note "$(machine); folder $dir"
{
    echo "# bench_ckpt $(date -u +%Y-%m-%dT%H:%M:%SZ) $BENCH_MACHINE (at the start); ${MB} MB, $SAMPLES step samples, folder on $(df -P "$dir" | awk 'NR == 2 { print $1 }')"
    "$PROG" "$dir" "$MB" "$SAMPLES"
} | table_out ckpt.txt
rc=$?
rm -rf "$dir"
exit $rc
