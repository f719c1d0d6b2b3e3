#!/bin/sh
# The ucx backend (issue 37, DESIGN section 5) gives what the tcp backend
# gives: e2e_allreduce (test_e2e_allreduce.sh's program, the check the tcp
# backend passes) with FTMPI_BACKEND=ucx, 3 replica groups of 1 rank (each
# its own mpirun) for counts 0, 1 and 7919 (every member's buffer to every
# other), then 2 groups for 1 Mi elements (the ring): every supported
# datatype and op equals MPI_Reduce_local's fold over every group's input
# in replica-rank order, bitwise, and each group logs once what UCX found.
# The first set runs with FTMPI_CHUNK_BYTES=4096: 7919 elements of 8 bytes
# go around the ring of 3 in 1 or 2 chunks per step, 100003 in up to 17,
# the window of receives and sends in flight full and segments of unequal
# length; the second with the default chunk (16 per step for doubles).
# The second set runs with a job secret (FTMPI_TOKEN_FILE): the store that
# carries the worker addresses authenticates, and the tags' salt comes from
# the key.
# Lanes: where UCX found cross-memory attach (cma), the second set's
# endpoints take it as their rendezvous lane (the library sets UCX's
# UCX_CMA_MEMORY_INVALIDATE=y, src/comm/ucx_lib.c), while the first set,
# run with the user's UCX_CMA_MEMORY_INVALIDATE=n, keeps UCX's own choice
# (no cma lane): each group logs the lanes to its next rank once.
# Skips (77) in a build without UCX.
. "$top_srcdir/tests/integration/e2e_lib.sh"
grep -q '^#define FTMPI_HAVE_UCX 1' "$top_builddir/ftmpi_config.h" 2>/dev/null ||
    skip "built without UCX (configure found no pkg-config ucx, or --without-ucx)"
e2e_init
E2E_PROG=$top_builddir/tests/integration/e2e_allreduce
[ -x "$E2E_PROG" ] || die "$E2E_PROG is not built"
E2E_RUN_FLAGS="--max-restarts 0"
FTMPI_BACKEND=ucx FTMPI_TIMEOUT_MS=20000
export FTMPI_BACKEND FTMPI_TIMEOUT_MS

run_set() {
    n=$1
    counts=$2
    prefix=$3
    shift 3
    e2e_lighthouse_start "$n" 0 "$@"
    ids=
    i=0
    while [ $i -lt "$n" ]; do
        e2e_group_start "$prefix$i" 1 --groups "$n" --counts "$counts"
        ids="$ids $prefix$i"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    e2e_wait_agents 120 $ids
    for id in $ids; do
        grep -q '^PASS' "$TEST_TMPDIR/$id.out" || e2e_fail "group $id: no PASS line"
        e2e_log "$id: $(tail -n 1 "$TEST_TMPDIR/$id.out")"
        n_ucx=$(grep -c 'ucx: UCX [0-9.]*, transports ' "$TEST_TMPDIR/$id.err")
        [ "$n_ucx" -eq 1 ] || e2e_fail "group $id: $n_ucx lines saying what UCX found, want 1"
        grep -q 'backend ucx' "$TEST_TMPDIR/$id.err" || e2e_fail "group $id did not run on ucx"
    done
    # shellcheck disable=SC2086
    e2e_check_final 1 $ids
    kill -KILL "$E2E_LH_PID" 2>/dev/null
}

FTMPI_CHUNK_BYTES=4096 UCX_CMA_MEMORY_INVALIDATE=n
export FTMPI_CHUNK_BYTES UCX_CMA_MEMORY_INVALIDATE
run_set 3 0,1,7919,100003 s
unset FTMPI_CHUNK_BYTES UCX_CMA_MEMORY_INVALIDATE
(umask 077 && printf 'ucx-e2e-secret-3b9d0c7a51e2f4869a1d\n' >"$TEST_TMPDIR/token")
FTMPI_TOKEN_FILE=$TEST_TMPDIR/token
export FTMPI_TOKEN_FILE
run_set 2 1048576 b --token-file "$TEST_TMPDIR/token"
! grep -q 'unauthenticated' "$TEST_TMPDIR"/b0.err "$TEST_TMPDIR"/b1.err ||
    e2e_fail "a group with the secret says it is unauthenticated"
e2e_log "$(grep -h 'ucx: UCX' "$TEST_TMPDIR/s0.err" | sed 's/.*\] //')"
e2e_log "$(grep -h 'ucx: UCX' "$TEST_TMPDIR/b0.err" | sed 's/.*choose); //')"
for id in s0 s1 s2 b0 b1; do
    grep -q 'to replica rank [0-9]*: [a-z]' "$TEST_TMPDIR/$id.err" ||
        e2e_fail "group $id: no lanes logged: $(grep -h 'ucx: UCX' "$TEST_TMPDIR/$id.err")"
done
if grep -q 'transports .*cma/memory' "$TEST_TMPDIR/b0.err"; then
    for id in b0 b1; do
        grep -q 'to replica rank [0-9]*: .*cma/memory[^(]*(rma_bw' "$TEST_TMPDIR/$id.err" ||
            e2e_fail "group $id: no cma rendezvous lane: $(grep -h 'to replica rank' "$TEST_TMPDIR/$id.err")"
    done
    for id in s0 s1 s2; do
        ! grep -q 'to replica rank [0-9]*: .*cma/memory' "$TEST_TMPDIR/$id.err" ||
            e2e_fail "group $id took cma despite UCX_CMA_MEMORY_INVALIDATE=n"
    done
else
    e2e_log "UCX found no cma here: the lanes are not checked"
fi
echo "PASS ($TEST_NAME)"
