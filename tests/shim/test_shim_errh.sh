#!/bin/sh
# The program's error handlers under FTMPI_SHIM_ON_FAILURE=return (issue
# 36 item 2; DESIGN section 10.5): a protected call that fails because a
# rank was lost calls the handler the program set on its communicator,
# with that communicator and a code of the drop-in's class for a lost rank
# (MPIX_ERR_PROC_FAILED where the MPI has it, else a class of its own whose
# string begins "MPI_ERR_PROC_FAILED").  4 ranks, world rank 2 SIGKILLs
# itself before call 100 of 300; each of the 3 survivors must have its
# handler called once, given the call's communicator, and see the error
# once; its line, printed after MPI_Finalize and not flushed, is there
# (the drop-in's exit after a loss flushes C stdio and libgfortran's units)
# and the job's status is non-zero (item 1):
#  - C, a handler on MPI_COMM_WORLD (tests/shim/shim_errh.c);
#  - C, a handler on a split of the world (one color);
#  - Fortran (`use mpi`, tests/shim/shim_errh_f.f90, built with mpifort):
#    MPI_COMM_CREATE_ERRHANDLER / MPI_COMM_SET_ERRHANDLER on the world.
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
need_kill_recovery "the program's error handlers after a lost rank"
lib_test_env
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
PRELOAD=$(san_preload "$SHIM")
PROG="$top_builddir/tests/shim/shim_errh"
NP=4

# LOG PROGRAM [mpirun flags]: the job in its own process group, ended
# within 120 s
job() {
    _log=$1 _prog=$2
    shift 2
    setsid "$MPIRUN" --enable-recovery -np $NP -x LD_PRELOAD="$PRELOAD" \
        -x FTMPI_SHIM_ON_FAILURE=return "$@" "$_prog" > "$_log" 2>&1 &
    _job=$!
    register_pgid $_job
    wait_pid_timeout $_job 120 || { cat "$_log"; die "$_log: the job did not end in 120 s"; }
    wait $_job && { cat "$_log"; die "$_log: exit status 0 after a lost rank"; }
    return 0
}

# LOG PREFIX WHAT: NP - 1 survivors, each with its handler called once with
# the call's communicator, one error, the drop-in's class
checks() {
    n=$(grep -c "^$2 rank=[0-9]* handler=1 comm=ok errors=1 class=MPI_ERR_PROC_FAILED" "$1")
    [ "$n" -eq $((NP - 1)) ] ||
        { cat "$1"; die "$3: $n of $((NP - 1)) survivors had their handler called once with the communicator and the class"; }
    echo "$3: $(grep "^$2 rank=" "$1" | head -n 1)"
}

job "$TEST_TMPDIR/world.log" "$PROG" -x SHIM_ERRH_DIE=2:100 -x SHIM_ERRH_COMM=world
checks "$TEST_TMPDIR/world.log" shim_errh "C, MPI_COMM_WORLD"
job "$TEST_TMPDIR/split.log" "$PROG" -x SHIM_ERRH_DIE=2:100 -x SHIM_ERRH_COMM=split
checks "$TEST_TMPDIR/split.log" shim_errh "C, a split of the world"

FC=$(mpi_fort)
if [ -z "$FC" ]; then
    echo "no mpifort: the Fortran handler is not tested"
    exit 0
fi
FPROG="$TEST_TMPDIR/shim_errh_f"
"$FC" -Wall -o "$FPROG" "$top_srcdir/tests/shim/shim_errh_f.f90" > "$TEST_TMPDIR/fc.log" 2>&1 ||
    { cat "$TEST_TMPDIR/fc.log"; die "$FC failed on shim_errh_f.f90"; }
job "$TEST_TMPDIR/fortran.log" "$FPROG"
checks "$TEST_TMPDIR/fortran.log" errh_f "Fortran, MPI_COMM_WORLD"
