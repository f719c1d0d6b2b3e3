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

# BENCH_SHIM_ROUNDS rounds (5; BENCH_QUICK: 1) of every run, native and shim
# alternating, and the median per size over the rounds: one run of each
# moved single sizes by 1.3x on a quiet machine (8 MiB 1.03 then 1.30)
ROUNDS=${BENCH_SHIM_ROUNDS:-5}
[ -n "$BENCH_QUICK" ] && ROUNDS=${BENCH_SHIM_ROUNDS:-1}
note "$(machine); $NP ranks, up to $MAX bytes, $ROUNDS round(s)"
k=1
while [ $k -le "$ROUNDS" ]; do
    for btl in vader tcp; do
        note "round $k, btl $btl: native"
        run native.$btl.$k "self,$btl"
        note "round $k, btl $btl: shim (abort: no saved copy)"
        run shim.$btl.$k "self,$btl" -x LD_PRELOAD="$SHIM"
    done
    note "round $k, btl vader: shim, continue (a saved copy of each result)"
    run cont.vader.$k "self,vader" -x LD_PRELOAD="$SHIM" -x FTMPI_SHIM_ON_FAILURE=continue
    k=$((k + 1))
done
# KIND: "bytes median_us" per size over the rounds, in the runs' size order
for kind in native.vader shim.vader cont.vader native.tcp shim.tcp; do
    cat "$BT/$kind".* | awk '
        $1 !~ /^[0-9]+$/ { next }
        !($1 in n) { order[++sizes] = $1 }
        { n[$1]++; v[$1, n[$1]] = $2 }
        END {
            for (i = 1; i <= sizes; i++) {
                b = order[i]; m = n[b]
                for (x = 1; x <= m; x++) a[x] = v[b, x]
                for (x = 2; x <= m; x++) { t = a[x]; y = x - 1
                    while (y >= 1 && a[y] > t) { a[y + 1] = a[y]; y-- } a[y + 1] = t }
                med = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
                printf "%s %s\n", b, med
            }
        }' > "$BT/$kind"
done

{
    echo "# MPI_Allreduce (MPI_DOUBLE, MPI_SUM, separate buffers), $NP ranks: us per call, median of $ROUNDS round(s)"
    echo "# $BENCH_MACHINE"
    printf '%10s %11s %11s %6s %11s %6s %11s %11s %6s\n' bytes vader-mpi vader-shim ratio \
        vader-cont ratio tcp-mpi tcp-shim ratio
    # the same sizes in the same order in every file: columns side by side
    paste -d ' ' "$BT/native.vader" "$BT/shim.vader" "$BT/cont.vader" "$BT/native.tcp" \
        "$BT/shim.tcp" |
        awk '{ printf "%10d %11.1f %11.1f %6.2f %11.1f %6.2f %11.1f %11.1f %6.2f\n",
               $1, $2, $4, $4 / $2, $6, $6 / $2, $8, $10, $10 / $8 }'
} | table_out shim.txt
