# tests/bench/bench_ckpt.sh - durable checkpoints (issue 14): write
# throughput against plain write + fsync of the same bytes, the step-time
# cost of an async checkpoint every step against one memcpy, and loading
# with and without resharding.  256 MB in a scratch folder of the build
# dir (BENCH_QUICK: 64 MB); FTMPI_BENCH_CKPT_DIR to use another disk.
. "$(dirname "$0")/bench_common.sh"
bench_selected ckpt || exit 0
PROG=$BENCH_BIN/bench_ckpt
[ -x "$PROG" ] || { note "missing $PROG"; exit 1; }
MB=256
STEPS=50
if [ -n "$BENCH_QUICK" ]; then
    MB=64
    STEPS=20
fi
dir=${FTMPI_BENCH_CKPT_DIR:-$top_builddir/bench-ckpt.$$}
mkdir -p "$dir" || exit 1
note "$(machine); folder $dir"
"$PROG" "$dir" "$MB" "$STEPS" | table_out ckpt.txt
rc=$?
rm -rf "$dir"
exit $rc
