#!/bin/sh
# Mode B, no failure: FT_Allreduce gives what MPI gives (e2e_allreduce.c,
# every supported datatype and op, exact inputs):
#  - `mpi` backend (the default), 3 groups of 1 rank: also bitwise equal to
#    MPI_Allreduce on a communicator of the same ranks (--mpi-compare);
#  - `mpi` backend, 2 groups of 2 ranks (one slice per group rank), idem;
#  - in both, the counts above 64 KiB take the native path's ring
#    (src/comm/mpi_ring.c: 3 and 2 members, segments of one and of several
#    512 KiB chunks), checked by the backend's counters;
#  - spare groups (fixed_with_spares, 2 participants + 2 spares): the
#    spares' inputs count for nothing, averages divide by 2;
#  - zero-copy (FTMPI_MODEB_ZERO_COPY=1, --mem: buffers of ftmpi_mem_alloc):
#    the same, with the backend's counters showing the zero-copy path used
#    below the ring;
#  - FTMPI_BACKEND=tcp is still selectable in mode B.
# Every group rank must print PASS; mpirun exits 0.
. "$top_srcdir/tests/integration/modeb_lib.sh"
mb_init
PROG=$top_builddir/tests/integration/e2e_allreduce
[ -x "$PROG" ] || die "$PROG is not built"
FTMPI_TIMEOUT_MS=20000
export FTMPI_TIMEOUT_MS

# run NAME NP R ARGS...: every rank but the last prints PASS
run() {
    name=$1
    np=$2
    r=$3
    shift 3
    rm -rf "$TEST_TMPDIR/out"
    mb_start "$np" "$r" "$PROG" "$@"
    mb_wait_end 120
    [ "$MB_RC" -eq 0 ] || mb_fail "$name: mpirun exited with status $MB_RC"
    w=0
    while [ $w -lt $((np - 1)) ]; do
        file_has "$(mb_out $w)" '^PASS' || mb_fail "$name: world rank $w printed no PASS line"
        w=$((w + 1))
    done
    grep -q 'every group is done' "$(mb_err $((np - 1)))" || mb_fail "$name: the lighthouse rank did not end"
    # shellcheck disable=SC2046
    mb_check_final $(seq 0 $((np - 2)))
    mb_log "$name: $(tail -n 1 "$(mb_out 0)")"
}

# ring_used W...: world rank W's counters say some allreduces ran the ring
ring_used() {
    for w in "$@"; do
        grep -Eq 'mpi backend: [0-9]+ allreduces native \([1-9][0-9]* by the ring' "$(mb_err $w)" ||
            mb_fail "world rank $w: no allreduce took the ring"
    done
}

FTMPI_MIN_REPLICAS=3 run "mpi, 3 groups of 1" 4 1 --groups 3 --counts 0,1,7919,100003,500009 \
    --mpi-compare
grep -q 'backend mpi' "$(mb_err 0)" || mb_fail "the default backend of mode B is not mpi"
ring_used 0 1 2
FTMPI_MIN_REPLICAS=2 run "mpi, 2 groups of 2" 5 2 --groups 2 --counts 1,7919,300007 --mpi-compare
ring_used 0 1 2 3
# zero-copy (FTMPI_MODEB_ZERO_COPY=1, buffers of ftmpi_mem_alloc): below the
# ring MPI_Iallreduce writes the output itself; bitwise the same results
FTMPI_MIN_REPLICAS=3 FTMPI_MODEB_ZERO_COPY=1 run "mpi zero-copy, 3 groups of 1" 4 1 --groups 3 \
    --counts 1,2000,7919,100003 --mpi-compare --mem
for w in 0 1 2; do
    grep -Eq 'mpi backend: [0-9]+ allreduces native \([0-9]+ by the ring, [1-9][0-9]* zero-copy' \
        "$(mb_err $w)" || mb_fail "world rank $w: no allreduce took the zero-copy path"
done
ring_used 0 1 2
FTMPI_MIN_REPLICAS=2 FTMPI_WORLD_SIZE_MODE=fixed_with_spares \
    run "mpi, 2 participants + 2 spares" 5 1 --groups 2 --spares 2 --counts 0,1,7919
FTMPI_MIN_REPLICAS=3 FTMPI_BACKEND=tcp run "tcp, 3 groups of 1" 4 1 --groups 3 --counts 1,7919
grep -q 'backend tcp' "$(mb_err 0)" || mb_fail "FTMPI_BACKEND=tcp did not select tcp"
echo "PASS ($TEST_NAME)"
