#!/bin/sh
# FTMPI_BACKEND=auto in mode A (issue 37 item 3, DESIGN section 5): a slice
# takes ucx when every member offers it, tcp otherwise.  e2e_allreduce
# (test_e2e_allreduce.sh's program: every datatype and op equals
# MPI_Reduce_local's fold over every group's input, bitwise), 2 replica
# groups of 1 rank (each its own mpirun), counts 7919 (every member's
# buffer to every other) and 1 Mi elements (the ring), FTMPI_BACKEND unset
# and FTMPI_UCX=1 (its default is 0: auto takes tcp):
#   set a: both groups offer ucx: both log that auto took ucx, with UCX's
#          version and transports, once, and run on ucx;
#   set t: group t1 runs with FTMPI_UCX=0: both groups log that auto took
#          tcp, naming t1's replica rank and FTMPI_UCX=0, and neither makes
#          a ucx slice.
# Both sets PASS, and the two sets' final checksums are equal.
# Skips (77) in a build without UCX.
. "$top_srcdir/tests/integration/e2e_lib.sh"
grep -q '^#define FTMPI_HAVE_UCX 1' "$top_builddir/ftmpi_config.h" 2>/dev/null ||
    skip "built without UCX (configure found no pkg-config ucx, or --without-ucx)"
e2e_init
E2E_PROG=$top_builddir/tests/integration/e2e_allreduce
[ -x "$E2E_PROG" ] || die "$E2E_PROG is not built"
E2E_RUN_FLAGS="--max-restarts 0"
unset FTMPI_BACKEND
FTMPI_UCX=1
export FTMPI_UCX
FTMPI_TIMEOUT_MS=20000
export FTMPI_TIMEOUT_MS

# run_set PREFIX OFF_ID: 2 groups PREFIX0 PREFIX1, OFF_ID (or none) with FTMPI_UCX=0
run_set() {
    e2e_lighthouse_start 2 0
    for id in "${1}0" "${1}1"; do
        if [ "$id" = "$2" ]; then
            FTMPI_UCX=0
            export FTMPI_UCX
        fi
        e2e_group_start "$id" 1 --groups 2 --counts 7919,1048576
        FTMPI_UCX=1
    done
    e2e_wait_agents 120 "${1}0" "${1}1"
    for id in "${1}0" "${1}1"; do
        grep -q '^PASS' "$TEST_TMPDIR/$id.out" || e2e_fail "group $id: no PASS line"
        e2e_log "$id: $(grep -h 'FTMPI_BACKEND=auto' "$TEST_TMPDIR/$id.err" | sed 's/.*\] //')"
    done
    e2e_check_final 1 "${1}0" "${1}1"
    kill -KILL "$E2E_LH_PID" 2>/dev/null
}

run_set a none
for id in a0 a1; do
    n=$(grep -c 'FTMPI_BACKEND=auto: ucx from quorum [0-9]* on (every member offers it; UCX [0-9.]*, transports [a-z]' "$TEST_TMPDIR/$id.err")
    [ "$n" -eq 1 ] || e2e_fail "group $id: $n lines saying auto took ucx with its transports, want 1"
    ! grep -q 'FTMPI_BACKEND=auto: tcp' "$TEST_TMPDIR/$id.err" || e2e_fail "group $id took tcp"
    n=$(grep -c 'ucx: UCX [0-9.]*, transports ' "$TEST_TMPDIR/$id.err")
    [ "$n" -eq 1 ] || e2e_fail "group $id: the ucx backend logged what it found $n times, want 1 (no ucx slice?)"
done

run_set t t1
for id in t0 t1; do
    n=$(grep -c 'FTMPI_BACKEND=auto: tcp from quorum [0-9]* on (transport: TCP sockets .*ucx not taken: replica rank [01] (.*: FTMPI_UCX=0))' "$TEST_TMPDIR/$id.err")
    [ "$n" -eq 1 ] || e2e_fail "group $id: $n lines saying auto took tcp because of t1's FTMPI_UCX=0, want 1"
    ! grep -q 'FTMPI_BACKEND=auto: ucx' "$TEST_TMPDIR/$id.err" || e2e_fail "group $id took ucx"
    ! grep -q 'ucx: UCX [0-9.]*, transports ' "$TEST_TMPDIR/$id.err" || e2e_fail "group $id made a ucx slice"
done

# the same inputs give the same results on either backend
for id in 0 1; do
    ca=$(sgd_final_lines "$TEST_TMPDIR/a$id.out" | sed 's/.* checksum=//')
    ct=$(sgd_final_lines "$TEST_TMPDIR/t$id.out" | sed 's/.* checksum=//')
    [ -n "$ca" ] && [ "$ca" = "$ct" ] || e2e_fail "group $id: checksum $ca on ucx, $ct on tcp"
done
echo "PASS ($TEST_NAME)"
