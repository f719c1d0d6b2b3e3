# tests/bench/bench_allreduce.sh - FT_Allreduce vs MPI_Allreduce on the same
# number of ranks (doc/PERFORMANCE.md, benchmark 1).
#
# For np in 2 4 (BENCH_QUICK: 2), groups of one rank:
#   FT tcp (mode A): one ftmpi-lighthouse --min-replicas np and np separate
#       `mpirun -np 1 bench_allreduce ft` jobs, FTMPI_BACKEND=tcp.  The tcp
#       backend does not use Open MPI's BTLs, so one run serves both tables.
#   MPI baseline: `mpirun -np np --mca btl vader,self bench_allreduce mpi`,
#       and the same with --mca btl tcp,self.
#   FT mpi (mode B): `mpirun -np np+1` with FTMPI_GROUP_SIZE=1 and
#       FTMPI_BACKEND=mpi under each BTL, staged and zero-copy
#       (FTMPI_MODEB_ZERO_COPY=1, --mem 1); the baseline of these tables is
#       MPI_Allreduce over the same np ranks in the same job, timed right
#       before FT_Allreduce at each size (bench_allreduce --mpi-too): both
#       see the same processes, placement and minute.  Reported as n/a while
#       mode B does not run.
#   The parts of mode B's time below the ring (bench_modeb_parts, plain
#       MPI) at the largest np.
#   BENCH_MODE_B_ONLY=1: no mode A runs (the mpi backend against native
#       only, doc/PERFORMANCE.md section 4).
# Sizes 8 B .. 64 MiB (x8; BENCH_QUICK: .. 2 MiB), the median of 7
# repetitions (BENCH_QUICK: 3) after one warm-up, each repetition timed on
# the slowest rank.  Columns: time per call (us), algorithm bandwidth
# bytes/time and bus bandwidth 2(n-1)/n * bytes/time (MB/s = 1e6 B/s);
# the last column is FT time / MPI time measured in this run.
. "$(dirname "$0")/bench_common.sh"
bench_selected allreduce || exit 0

NPS="2 4"
MAX=64m
REPS=7
if [ -n "$BENCH_QUICK" ]; then
    NPS=2
    MAX=2m
    REPS=3
fi
PROG=$BENCH_BIN/bench_allreduce
RUN_TIMEOUT=300
[ -x "$PROG" ] || { note "missing $PROG"; exit 1; }

# ft_mode_a NP OUTPREFIX: np groups of one rank; the RESULT lines of replica
# rank 0 go to OUTPREFIX.res.  False when a job failed.
ft_mode_a() {
    _np=$1
    _pre=$2
    start_lighthouse "$_pre.lh" --min-replicas "$_np" --join-timeout-ms 30000 \
        --heartbeat-timeout-ms 30000 --quorum-tick-ms 10 || return 1
    _pids=""
    _i=0
    while [ $_i -lt "$_np" ]; do
        bg_group "$_pre.g$_i" env FTMPI_LIGHTHOUSE="$LH_ADDR" FTMPI_REPLICA_ID="ar$_i" \
            FTMPI_BACKEND=tcp timeout -s KILL $RUN_TIMEOUT \
            "$MPIRUN" --oversubscribe --bind-to none -np 1 \
            -x FTMPI_LIGHTHOUSE -x FTMPI_REPLICA_ID -x FTMPI_BACKEND -x FTMPI_LOG_LEVEL \
            "$PROG" ft --max "$MAX" --reps "$REPS"
        _pids="$_pids $BG_PID"
        _i=$((_i + 1))
    done
    _ok=0
    for _p in $_pids; do
        wait "$_p" || _ok=1
    done
    stop_lighthouse
    cat "$_pre".g* | grep '^RESULT' >"$_pre.res"
    if [ $_ok -ne 0 ] || [ ! -s "$_pre.res" ]; then
        note "FT mode A np=$_np failed; outputs:"
        tail -n 5 "$_pre".g* "$_pre.lh" >&2
        return 1
    fi
    return 0
}

# mpi_run NP BTL OUTPREFIX: the MPI_Allreduce baseline.
mpi_run() {
    timeout -s KILL $RUN_TIMEOUT "$MPIRUN" --oversubscribe --bind-to none -np "$1" \
        --mca btl "$2" "$PROG" mpi --max "$MAX" --reps "$REPS" >"$3.out" 2>&1
    _rc=$?
    grep '^RESULT' "$3.out" >"$3.res"
    if [ $_rc -ne 0 ] || [ ! -s "$3.res" ]; then
        note "MPI_Allreduce np=$1 btl=$2 failed:"
        tail -n 5 "$3.out" >&2
        return 1
    fi
}

# ft_mode_b NP BTL OUTPREFIX [ZC]: np groups of one rank plus the lighthouse
# rank in one mpirun, the mpi backend (ZC = 1: FTMPI_MODEB_ZERO_COPY=1 with
# buffers of ftmpi_mem_alloc).  False (quietly) when mode B fails.
ft_mode_b() {
    FTMPI_GROUP_SIZE=1 FTMPI_BACKEND=mpi FTMPI_MIN_REPLICAS=$1 FTMPI_MODEB_ZERO_COPY=${4:-0} \
        timeout -s KILL 120 "$MPIRUN" --oversubscribe --bind-to none -np $(($1 + 1)) \
        --mca btl "$2" -x FTMPI_GROUP_SIZE -x FTMPI_BACKEND -x FTMPI_MIN_REPLICAS \
        -x FTMPI_MODEB_ZERO_COPY -x FTMPI_LOG_LEVEL "$PROG" ft --max "$MAX" --reps "$REPS" \
        --mem "${4:-0}" --mpi-too 1 >"$3.out" 2>&1
    _rc=$?
    grep '^RESULT' "$3.out" >"$3.res"
    # the same-job baseline: MPI_Allreduce over the same ranks, right before
    sed -n 's/^MPIRESULT/RESULT/p' "$3.out" >"$3.mres"
    [ $_rc -eq 0 ] && [ -s "$3.res" ] && [ -s "$3.mres" ]
}

# table NP TITLE FT.res MPI.res: joins the rows by size.
table() {
    awk -v np="$1" -v title="$2" '
        FILENAME == ARGV[1] { ft[$2] = $4; next }
        { mpi[$2] = $4; order[++n] = $2 }
        END {
            printf "%s\n", title
            printf "%10s %12s %12s %10s %10s %10s %8s\n", "bytes", "MPI_us", "FT_us",
                "MPI_busbw", "FT_algbw", "FT_busbw", "FT/MPI"
            for (i = 1; i <= n; i++) {
                b = order[i]; m = mpi[b]; t = ft[b]
                if (t == "") { printf "%10d %12.2f %12s\n", b, m, "n/a"; continue }
                alg = b / t; bus = 2 * (np - 1) / np * alg
                printf "%10d %12.2f %12.2f %10.1f %10.1f %10.1f %8.2f\n", b, m, t,
                    2 * (np - 1) / np * b / m, alg, bus, t / m
            }
            printf "(MB/s = 1e6 bytes/s; busbw = 2(n-1)/n * bytes/time; median of the runs\x27 repetitions)\n\n"
        }' "$3" "$4"
}

: >"$BENCH_OUT/allreduce.txt"
{
    echo "# bench_allreduce $(date -u +%Y-%m-%dT%H:%M:%SZ) $BENCH_MACHINE (at the start); reps=$REPS max=$MAX"
    echo
} | table_out allreduce.txt
status=0
for np in $NPS; do
    if [ -z "$BENCH_MODE_B_ONLY" ]; then
        note "np=$np: FT_Allreduce, tcp backend, mode A ($np x mpirun -np 1 + lighthouse)"
        ft_mode_a "$np" "$BT/ft$np" || status=1
    fi
    for btl in vader,self tcp,self; do
        tag=$(echo "$btl" | cut -d, -f1)
        note "np=$np: MPI_Allreduce, btl $btl"
        mpi_run "$np" "$btl" "$BT/mpi$np$tag" || { status=1; continue; }
        [ -n "$BENCH_MODE_B_ONLY" ] ||
            table "$np" "np=$np, btl $btl: FT_Allreduce (tcp backend, mode A) vs MPI_Allreduce" \
                "$BT/ft$np.res" "$BT/mpi$np$tag.res" | table_out allreduce.txt
        note "np=$np: FT_Allreduce, mpi backend, mode B, btl $btl"
        if ft_mode_b "$np" "$btl" "$BT/ftb$np$tag"; then
            table "$np" "np=$np, btl $btl: FT_Allreduce (mpi backend, mode B) vs MPI_Allreduce (same job)" \
                "$BT/ftb$np$tag.res" "$BT/ftb$np$tag.mres" | table_out allreduce.txt
        else
            {
                echo "np=$np, btl $btl: FT_Allreduce (mpi backend, mode B): n/a (mode B did not run:"
                grep -v '^RESULT' "$BT/ftb$np$tag.out" | grep -i -m 2 -E 'error|ftmpi|abort' |
                    sed 's/^/    /'
                echo ")"
                echo
            } | table_out allreduce.txt
        fi
        note "np=$np: FT_Allreduce, mpi backend, mode B zero-copy, btl $btl"
        if ft_mode_b "$np" "$btl" "$BT/ftz$np$tag" 1; then
            table "$np" "np=$np, btl $btl: FT_Allreduce (mode B, FTMPI_MODEB_ZERO_COPY=1, ftmpi_mem_alloc buffers) vs MPI_Allreduce (same job)" \
                "$BT/ftz$np$tag.res" "$BT/ftz$np$tag.mres" | table_out allreduce.txt
        else
            note "mode B zero-copy np=$np btl $btl did not run"
            status=1
        fi
    done
done

# Where mode B's time goes below the ring, at the largest np (§12.3): plain
# MPI, each way adding one part of allreduce_native (bench_modeb_parts.c).
np=$(echo $NPS | tr ' ' '\n' | sort -n | tail -n 1)
PARTS="$top_builddir/tests/bench/bench_modeb_parts"
for btl in vader,self tcp,self; do
    tag=$(echo "$btl" | cut -d, -f1)
    note "np=$np: the parts of mode B's time, btl $btl"
    if timeout -s KILL $RUN_TIMEOUT "$MPIRUN" --oversubscribe --bind-to none -np "$np" \
        --mca btl "$btl" "$PARTS" --bytes 256k --bytes 2m --rounds 3 >"$BT/parts$tag.out" 2>&1; then
        awk -v np="$np" -v btl="$btl" '
            /^PARTS/ { us[$2, $3] = $4; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } }
            END {
                printf "np=%d, btl %s: where mode B\x27s time goes below the ring (plain MPI; us per call)\n", np, btl
                printf "%10s %10s %10s %10s %10s %9s %9s\n", "bytes", "native", "nbc", "poll",
                    "stage", "poll/nat", "stage/nat"
                for (i = 1; i <= n; i++) {
                    b = order[i]
                    printf "%10d %10.1f %10.1f %10.1f %10.1f %9.2f %9.2f\n", b, us[b, "native"],
                        us[b, "nbc"], us[b, "poll"], us[b, "stage"],
                        us[b, "poll"] / us[b, "native"], us[b, "stage"] / us[b, "native"]
                }
                printf "(native MPI_Allreduce; nbc MPI_Iallreduce + MPI_Wait; poll: + MPI_Testall/sched_yield;\n"
                printf " stage: into a stage, then memcpy into recvbuf: what allreduce_native does; medians of 3 rounds)\n\n"
            }' "$BT/parts$tag.out" | table_out allreduce.txt
    else
        note "bench_modeb_parts np=$np btl $btl failed:"
        tail -n 5 "$BT/parts$tag.out" >&2
        status=1
    fi
done
exit $status
