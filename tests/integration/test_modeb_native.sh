#!/bin/sh
# Mode B, the mpi backend's native path (src/comm/mpi_backend.h): FT_Init
# makes the communicator of each initial slice; a slice over exactly those
# members reduces with one MPI_Iallreduce on it, any other point-to-point.
# Operations of at most 4 KiB x (members - 1) keep the point-to-point
# exchange, so ft_sgd runs with 2048 features (8 KiB gradients).
# Each rank prints at FT_Finalize "mpi backend: N allreduces native (...),
# M point-to-point"; this test reads those counters.
#  1. no failure, 3 groups of 2 ranks (two slices): every allreduce of
#     every rank took the native path (M = 0, N >= steps);
#  2. 3 groups of 2, world rank 2 (g1, group rank 0) dies by SIGKILL in
#     step 15: the survivors g0 and g2 reduced natively before (N >= 15),
#     gave step 15's native operation up, reduced point-to-point after
#     (M >= the steps left), committed every step and hold bitwise equal
#     states;
#  3. the same with 32768 features: each slice's operation (64 KiB) runs the
#     ring of src/comm/mpi_ring.c (counted apart), the kill lands in it;
#  4. case 2 with FTMPI_MODEB_ZERO_COPY=1 and ft_sgd --ftmpi-mem 1: steps 0-14
#     reduce straight into the gradient, step 15's is given up (MPI may
#     still write it), ft_sgd takes a new buffer, the rest as in case 2;
#  5. case 3 with zero-copy: the ring's all-gather lands in the gradient.
. "$top_srcdir/tests/integration/modeb_lib.sh"
mb_init
need_kill_recovery "mode B after a SIGKILL"

# counts W: "N M", world rank W's native and point-to-point counts
counts() {
    sed -n 's/.*mpi backend: \([0-9]*\) allreduces native (.*), \([0-9]*\) point-to-point$/\1 \2/p' \
        "$(mb_err "$1")" | tail -n 1
}

# check_counts W NMIN MMIN MMAX: N >= NMIN and MMIN <= M <= MMAX
check_counts() {
    c=$(counts "$1")
    [ -n "$c" ] || mb_fail "world rank $1 printed no path counters"
    set -- "$1" "$2" "$3" "$4" $c
    mb_log "world rank $1: $5 native, $6 point-to-point"
    [ "$5" -ge "$2" ] || mb_fail "world rank $1: $5 native allreduces, want >= $2"
    [ "$6" -ge "$3" ] && [ "$6" -le "$4" ] ||
        mb_fail "world rank $1: $6 point-to-point allreduces, want $3..$4"
}

# 1. no failure: native only
STEPS=30
FTMPI_MIN_REPLICAS=3 mb_start 7 2 "$MB_SGD" --steps $STEPS --print-every 1 --features 2048
mb_wait_end 90
[ "$MB_RC" -eq 0 ] || mb_fail "failure-free run: mpirun exited with status $MB_RC"
# group rank 0 prints the steps; every rank the counters
for w in 0 2 4; do
    file_has "$(mb_out $w)" "^steps committed $STEPS " || mb_fail "world rank $w did not commit $STEPS steps"
done
for w in 0 1 2 3 4 5; do
    check_counts $w $STEPS 0 0
done
mb_check_final 0 1 2 3 4 5

# 2. a kill: native before, point-to-point after, equal states.  kill_run
# FEATURES RING [ZC]: RING = 1 when each slice's operation (half of FEATURES + 1
# floats) takes the ring of src/comm/mpi_ring.c, 0 for MPI_Iallreduce; ZC = 1:
# zero-copy (FTMPI_MODEB_ZERO_COPY=1, ft_sgd --ftmpi-mem 1).
kill_run() {
    rm -rf "$TEST_TMPDIR/out" "$TEST_TMPDIR/state"
    STEPS=60
    zc=${3:-0}
    # a slow start under load must not leave a group out of the first quorum
    FTMPI_MODEB_ZERO_COPY=$zc FTMPI_MIN_REPLICAS=2 FTMPI_LH_JOIN_TIMEOUT_MS=5000 \
        mb_start 7 2 "$MB_SGD" --steps $STEPS \
        --print-every 1 --features "$1" --sleep-ms 10 --die-at-step 15 --die-rank 2 \
        --dump "$TEST_TMPDIR/state" --ftmpi-mem "$zc"
    wait_until 60 file_has "$(mb_err 2)" 'SIGKILL to myself at step 15' ||
        mb_fail "world rank 2 did not die at step 15"
    mb_wait_end 120
    [ "$MB_RC" -eq 0 ] || mb_fail "mpirun exited with status $MB_RC"
    for w in 0 4; do
        file_has "$(mb_out $w)" "^steps committed $STEPS " ||
            mb_fail "world rank $w did not commit $STEPS steps"
        [ "$(mb_failures $w)" -eq 1 ] ||
            mb_fail "world rank $w reports $(mb_failures $w) failures survived, want 1"
    done
    for w in 0 1 4 5; do
        # step 15's native operation was given up (the request left to MPI)
        grep -Eq 'mpi backend: native allreduce of [0-9]+ bytes over 3 groups (missed its deadline|failed)' \
            "$(mb_err $w)" || mb_fail "world rank $w did not give up a native allreduce"
        # steps 0-14 native; steps 16-59 (44 steps) point-to-point
        check_counts $w 15 44 100000
        r=$(sed -n 's/.*mpi backend: [0-9]* allreduces native (\([0-9]*\) by the ring.*/\1/p' \
            "$(mb_err $w)" | tail -n 1)
        if [ "$2" -eq 1 ]; then
            [ "${r:-0}" -ge 15 ] || mb_fail "world rank $w: ${r:-no} allreduces by the ring, want >= 15"
        else
            [ "${r:-1}" -eq 0 ] || mb_fail "world rank $w: ${r:-no} allreduces by the ring, want 0"
        fi
        if [ "$zc" -eq 1 ]; then
            # steps 0-14 straight into the gradient; step 15's buffer given
            # up, replaced by ft_sgd, never handed to FT_Allreduce again
            z=$(sed -n 's/.*mpi backend: [0-9]* allreduces native ([0-9]* by the ring, \([0-9]*\) zero-copy.*/\1/p' \
                "$(mb_err $w)" | tail -n 1)
            [ "${z:-0}" -ge 15 ] || mb_fail "world rank $w: ${z:-no} zero-copy allreduces, want >= 15"
            grep -q 'a zero-copy allreduce into .* was abandoned' "$(mb_err $w)" ||
                mb_fail "world rank $w did not give its buffer up"
            ! grep -q 'FT_Allreduce: the buffer at' "$(mb_err $w)" ||
                mb_fail "world rank $w handed a given-up buffer to FT_Allreduce"
        fi
    done
    mb_check_states "$TEST_TMPDIR/state" 0 4
    mb_check_final 0 1 4 5
}
kill_run 2048 0
# 3. the same through the ring (64 KiB floats per slice, in place)
kill_run 32768 1
# 4. the same with zero-copy: MPI_Iallreduce writes ft_sgd's gradient itself
kill_run 2048 0 1
# 5. zero-copy through the ring: the all-gather lands in the gradient itself
kill_run 32768 1 1
echo "PASS ($TEST_NAME)"
