# tests/bench/bench_shim.sh - the drop-in (libftmpi_pmpi) against native
# MPI_Allreduce on the same 4 ranks (issue 13 item 6): bench_shim (plain
# MPI) with and without LD_PRELOAD, over Open MPI's shared-memory (vader)
# and TCP transports (OMPI_MCA_btl=self,vader / self,tcp), 8 B to 64 MiB
# (BENCH_QUICK: 4 MiB); then the cost of FTMPI_SHIM_ON_FAILURE=continue
# (a saved copy of every result) on vader.  Per size: microseconds per
# call and the ratio shim / native (time: 1.00 = no overhead; at >= 1 MiB
# its inverse is the bandwidth ratio).
. "$(dirname "$0")/bench_common.sh"
bench_selected shim || exit 0
PROG=$BENCH_BIN/bench_shim
SHIM=$top_builddir/.libs/libftmpi_pmpi.so
for f in "$PROG" "$SHIM"; do
    [ -e "$f" ] || { note "missing $f"; exit 1; }
done
NP=4
MAX=$((64 << 20))
[ -n "$BENCH_QUICK" ] && MAX=$((4 << 20))
export FTMPI_TIMEOUT_MS=60000 FTMPI_LOG_LEVEL=warn

run() { # OUT BTL [mpirun flags]: bench_shim on NP ranks
    _out=$1 _btl=$2
    shift 2
    OMPI_MCA_btl=$_btl mpirun1 --enable-recovery -np $NP "$@" "$PROG" $MAX \
        > "$BT/$_out" 2> "$BT/$_out.err" || { note "run $_out failed:"; cat "$BT/$_out.err" >&2; exit 1; }
}

note "$(machine); $NP ranks, up to $MAX bytes"
for btl in vader tcp; do
    note "btl $btl: native"
    run native.$btl "self,$btl"
    note "btl $btl: shim (abort: no saved copy)"
    run shim.$btl "self,$btl" -x LD_PRELOAD="$SHIM"
done
note "btl vader: shim, continue (a saved copy of each result)"
run cont.vader "self,vader" -x LD_PRELOAD="$SHIM" -x FTMPI_SHIM_ON_FAILURE=continue

{
    echo "# MPI_Allreduce (MPI_DOUBLE, MPI_SUM, separate buffers), $NP ranks: us per call"
    echo "# $BENCH_MACHINE"
    printf '%10s %11s %11s %6s %11s %6s %11s %11s %6s\n' bytes vader-mpi vader-shim ratio \
        vader-cont ratio tcp-mpi tcp-shim ratio
    # the same sizes in the same order in every file: columns side by side
    paste -d ' ' "$BT/native.vader" "$BT/shim.vader" "$BT/cont.vader" "$BT/native.tcp" \
        "$BT/shim.tcp" |
        awk '{ printf "%10d %11.1f %11.1f %6.2f %11.1f %6.2f %11.1f %11.1f %6.2f\n",
               $1, $2, $4, $4 / $2, $6, $6 / $2, $8, $10, $10 / $8 }'
} | table_out shim.txt
