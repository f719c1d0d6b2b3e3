#!/bin/sh
# FT_Allreduce equals MPI_Allreduce: e2e_allreduce.c, run as 3 replica
# groups of 1 rank (each its own mpirun) for counts 0, 1 and 7919, then as 2
# groups for 16 Mi elements, checks every supported datatype and op against
# MPI_Reduce_local over every group's (deterministic) input.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
E2E_PROG=$top_builddir/tests/integration/e2e_allreduce
[ -x "$E2E_PROG" ] || die "$E2E_PROG is not built"
E2E_RUN_FLAGS="--max-restarts 0"
FTMPI_TIMEOUT_MS=20000
export FTMPI_TIMEOUT_MS

run_set() {
    n=$1
    counts=$2
    prefix=$3
    e2e_lighthouse_start "$n"
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
    done
    # shellcheck disable=SC2086
    e2e_check_final 1 $ids
    kill -KILL "$E2E_LH_PID" 2>/dev/null
}

run_set 3 0,1,7919 s
run_set 2 16777216 b
echo "PASS ($TEST_NAME)"
