# tests/bench/bench_shim.sh - the drop-in (libftmpi_pmpi) against native
# MPI_Allreduce on the same 4 ranks (issue 13 item 6, issue 28 item 5):
# bench_shim (plain MPI), vader (OMPI_MCA_btl=self,vader) unless said.
#  1. Paired (BENCH_SHIM_PAIRED, see bench_shim.c): in each run native
#     (PMPI_) and drop-in (MPI_) blocks alternate, so that the load of a
#     shared machine hits both alike, for the default failure mode (abort)
#     and continue, with and without an MPI_Barrier per iteration
#     (BENCH_SHIM_BARRIER).  Each run with the shim alternates with a run
#     without it (both columns native there): the shim's time is given over
#     the native of its own run (ratio) and over that of the plain runs
#     (ratio-plain), which the shim's threads and state cannot touch.
#     BENCH_SHIM_PAIR_RUNS (3; BENCH_QUICK: 1) runs of each, the median of
#     their per-size medians (BENCH_SHIM_PAIR_ROUNDS rounds a run, 21), up
#     to BENCH_SHIM_PAIR_MAX bytes (4 MiB).  BENCH_SHIM_PARTS="osu 1 2": which;
#     BENCH_SHIM_NP: ranks (4); BENCH_SHIM_LIB: another build of the shim
#     (to compare with main's).
#  osu. The OSU shape (issue 36 item 4; BENCH_SHIM_OSU, see bench_shim.c):
#     `osu_allreduce -T mpi_float` at 4 B - 1 KiB, native and drop-in
#     blocks alternating in each run, on BENCH_SHIM_OSU_NP ranks (2), the
#     default failure mode; BENCH_SHIM_OSU_RUNS runs (5; BENCH_QUICK: 1) of
#     the drop-in, each after a run without it (its two columns native:
#     the method's noise) and, with BENCH_SHIM_LIB_BASE (another build of
#     the drop-in, e.g. main's: before and after a change in one sitting),
#     beside a run of that build (which of the two comes first alternates).  Per run and size the ratio drop-in /
#     native of that run; the table gives the median over the runs.
#  2. Separate runs (native, then shim): with and without LD_PRELOAD, over
#     vader and TCP (self,tcp), 8 B to 64 MiB (BENCH_QUICK: 4 MiB); then
#     the cost of FTMPI_SHIM_ON_FAILURE=continue (small calls keep a copy
#     of the result, larger ones are the held allreduce) on vader.  Per
#     size: microseconds per call and the ratio shim / native (time: 1.00
#     = no overhead; at >= 1 MiB its inverse is the bandwidth ratio).
. "$(dirname "$0")/bench_common.sh"
bench_selected shim || exit 0
PROG=$BENCH_BIN/bench_shim
SHIM=${BENCH_SHIM_LIB:-$top_builddir/.libs/libftmpi_pmpi.so}
for f in "$PROG" "$SHIM" ${BENCH_SHIM_LIB_BASE:+"$BENCH_SHIM_LIB_BASE"}; do
    [ -e "$f" ] || { note "missing $f"; exit 1; }
done
NP=${BENCH_SHIM_NP:-4}
MAX=$((64 << 20))
[ -n "$BENCH_QUICK" ] && MAX=$((4 << 20))
export FTMPI_TIMEOUT_MS=60000 FTMPI_LOG_LEVEL=warn

run() { # OUT BTL [mpirun flags]: bench_shim on NP ranks
    _out=$1 _btl=$2
    shift 2
    OMPI_MCA_btl=$_btl mpirun1 --enable-recovery -np $NP "$@" "$PROG" ${RUN_MAX:-$MAX} \
        > "$BT/$_out" 2> "$BT/$_out.err" || { note "run $_out failed:"; cat "$BT/$_out.err" >&2; exit 1; }
}

# ---- 1. paired: VARIANT "MODE BARRIER" -> $BT/pair.MODE.BARRIER (bytes
# native shim ratio plain ratio-plain), medians over the runs
PAIR_RUNS=${BENCH_SHIM_PAIR_RUNS:-3}
PAIR_MAX=${BENCH_SHIM_PAIR_MAX:-$((4 << 20))}
PARTS=${BENCH_SHIM_PARTS:-osu 1 2}
[ -n "$BENCH_QUICK" ] && PAIR_RUNS=${BENCH_SHIM_PAIR_RUNS:-1}
median_cols() { # FILES...: "bytes a b" lines -> per size the medians of a and of b
    cat "$@" | awk '
        $1 !~ /^[0-9]+$/ { next }
        !($1 in n) { order[++sizes] = $1 }
        { n[$1]++; a[$1, n[$1]] = $2; b[$1, n[$1]] = $3 }
        function med(arr, key, m,    x, y, t, v) {
            for (x = 1; x <= m; x++) v[x] = arr[key, x]
            for (x = 2; x <= m; x++) { t = v[x]; y = x - 1
                while (y >= 1 && v[y] > t) { v[y + 1] = v[y]; y-- } v[y + 1] = t }
            return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
        }
        END { for (i = 1; i <= sizes; i++) { k = order[i]
                  printf "%s %s %s\n", k, med(a, k, n[k]), med(b, k, n[k]) } }'
}
# ---- osu: KIND (plain, shim, base) runs -> $BT/osu.KIND.N ("bytes native
# drop-in" per size); per size the median over the runs of each column and
# of the ratio of each run
OSU_RUNS=${BENCH_SHIM_OSU_RUNS:-5}
[ -n "$BENCH_QUICK" ] && OSU_RUNS=${BENCH_SHIM_OSU_RUNS:-1}
case " $PARTS " in *" osu "*) ;; *) OSU_RUNS=0 ;; esac
osu_kinds="plain shim"
[ -n "$BENCH_SHIM_LIB_BASE" ] && osu_kinds="plain shim base"
median_ratio() { # FILES...: "bytes plain-native native dropin" -> "bytes native dropin
    # ratio ratio-plain", medians over the files (the runs)
    cat "$@" | awk '
        $1 !~ /^[0-9]+$/ { next }
        !($1 in n) { order[++sizes] = $1 }
        { m = ++n[$1]; a[$1, m] = $3; b[$1, m] = $4; c[$1, m] = $4 / $3; d[$1, m] = $4 / $2 }
        function med(arr, key, m,    x, y, t, v) {
            for (x = 1; x <= m; x++) v[x] = arr[key, x]
            for (x = 2; x <= m; x++) { t = v[x]; y = x - 1
                while (y >= 1 && v[y] > t) { v[y + 1] = v[y]; y-- } v[y + 1] = t }
            return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
        }
        END { for (i = 1; i <= sizes; i++) { k = order[i]
                  printf "%s %.3f %.3f %.3f %.3f\n", k, med(a, k, n[k]), med(b, k, n[k]),
                      med(c, k, n[k]), med(d, k, n[k]) } }'
}
k=1
while [ $k -le "$OSU_RUNS" ]; do
    kinds=$osu_kinds # every other turn the base before the shim: neither always runs last
    [ -n "$BENCH_SHIM_LIB_BASE" ] && [ $((k % 2)) -eq 0 ] && kinds="plain base shim"
    for kind in $kinds; do
        case $kind in
            plain) pre= ;;
            shim) pre=$SHIM ;;
            base) pre=$BENCH_SHIM_LIB_BASE ;;
        esac
        note "osu run $k: $kind"
        NP_SAVE=$NP NP=${BENCH_SHIM_OSU_NP:-2}
        run osu.$kind.$k "self,vader" -x BENCH_SHIM_OSU=1 ${pre:+-x LD_PRELOAD="$pre"}
        NP=$NP_SAVE
        # beside the native time of the plain run just before (ratio-plain)
        paste -d ' ' "$BT/osu.plain.$k" "$BT/osu.$kind.$k" | awk '{ print $1, $2, $5, $6 }' \
            > "$BT/osu.$kind.$k.p"
    done
    k=$((k + 1))
done
[ "$OSU_RUNS" -gt 0 ] && {
    echo "# osu_allreduce -T mpi_float shape: MPI_FLOAT MPI_SUM on MPI_COMM_WORLD, ${BENCH_SHIM_OSU_NP:-2} ranks,"
    echo "# vader, each call timed alone, a barrier after it; us per call (OSU's avg latency),"
    echo "# medians of ${BENCH_SHIM_PAIR_ROUNDS:-21} alternating rounds of ${BENCH_SHIM_OSU_ITERS:-100} calls, then over $OSU_RUNS run(s);"
    echo "# ratio: drop-in / native of the same run; ratio-plain: drop-in / native of the plain run"
    echo "# just before (no drop-in in the process: its threads and state cannot touch it);"
    echo "# medians of the runs' ratios; default mode (abort); plain: both columns native"
    echo "# shim: $SHIM"
    [ -n "$BENCH_SHIM_LIB_BASE" ] && echo "# base: $BENCH_SHIM_LIB_BASE"
    echo "# $BENCH_MACHINE; at the end: $(machine)"
    printf '%-6s %6s %9s %9s %6s %11s\n' kind bytes native drop-in ratio ratio-plain
    for kind in $osu_kinds; do
        median_ratio "$BT"/osu.$kind.*.p |
            awk -v k=$kind '{ printf "%-6s %6d %9.3f %9.3f %6.2f %11.2f\n", k, $1, $2, $3, $4, $5 }'
    done
} | table_out shim_osu.txt

case " $PARTS " in *" 1 "*) ;; *) PAIR_RUNS=0 ;; esac
for mode in auto continue; do
    [ "$PAIR_RUNS" -gt 0 ] || break
    for bar in 0 1; do
        k=1
        while [ $k -le "$PAIR_RUNS" ]; do
            note "paired run $k: FTMPI_SHIM_ON_FAILURE=$mode, barrier $bar: plain, then shim"
            RUN_MAX=$PAIR_MAX run pplain.$mode.$bar.$k "self,vader" -x BENCH_SHIM_PAIRED=1 -x BENCH_SHIM_BARRIER=$bar
            RUN_MAX=$PAIR_MAX run pshim.$mode.$bar.$k "self,vader" -x BENCH_SHIM_PAIRED=1 -x BENCH_SHIM_BARRIER=$bar \
                -x LD_PRELOAD="$SHIM" -x FTMPI_SHIM_ON_FAILURE=$mode
            k=$((k + 1))
        done
        median_cols "$BT"/pplain.$mode.$bar.* > "$BT/pplain.$mode.$bar"
        median_cols "$BT"/pshim.$mode.$bar.* > "$BT/pshim.$mode.$bar"
    done
done
[ "$PAIR_RUNS" -gt 0 ] && {
    echo "# paired: us per call (MPI_Allreduce; + MPI_Barrier with barrier 1), $NP ranks, vader, up to"
    echo "# $PAIR_MAX bytes; medians of ${BENCH_SHIM_PAIR_ROUNDS:-21} rounds per run, then of $PAIR_RUNS run(s); ratio: shim /"
    echo "# native of its run; plain: native of the runs without the shim; auto is abort here"
    echo "# $BENCH_MACHINE"
    for mode in auto continue; do
        for bar in 0 1; do
            echo "## FTMPI_SHIM_ON_FAILURE=$mode, barrier per iteration: $bar"
            printf '%10s %9s %9s %6s %9s %6s\n' bytes native shim ratio plain ratio
            paste -d ' ' "$BT/pshim.$mode.$bar" "$BT/pplain.$mode.$bar" |
                awk '{ printf "%10d %9.2f %9.2f %6.2f %9.2f %6.2f\n", $1, $2, $3, $3 / $2, $5, $3 / $5 }'
        done
    done
} | table_out shim_paired.txt

# ---- 2. separate runs
case " $PARTS " in *" 2 "*) ;; *) exit 0 ;; esac
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
    note "round $k, btl vader: shim, continue (held allreduce above 2 KiB)"
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
