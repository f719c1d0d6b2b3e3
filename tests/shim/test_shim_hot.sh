#!/bin/sh
# The default mode's hot path (issue 36 item 4; DESIGN section 10.3) keeps
# the failure mode auto of MPI_COMM_WORLD until the program sets an error
# handler: a handler set from Fortran (MPI_COMM_SET_ERRHANDLER, which
# Open MPI's Fortran layer sends to PMPI_ directly) after 20 calls under
# MPI_ERRORS_ARE_FATAL must turn the later calls to return
# (tests/shim/shim_late_f.f90, built here with mpifort; 4 ranks, world
# rank 2 SIGKILLed before call 100): each of the 3 survivors sees the error
# once; a drop-in that missed the change ends the job as abort does.  Also
# with MPI-1's MPI_ERRHANDLER_SET and, from C, MPI_Errhandler_set (removed
# in MPI-3.0, still in Open MPI 4.1; tests/shim/shim_return.c built here),
# where the MPI has them.  MPI_Comm_set_errhandler from C: test_shim_kill's
# "return set late".
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
need_kill_recovery "the failure mode after a handler set late"
lib_test_env
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
PRELOAD=$(san_preload "$SHIM")
FC=$(mpi_fort)
[ -n "$FC" ] || skip "no mpifort"
NP=4
FPROG="$TEST_TMPDIR/shim_late_f"
"$FC" -Wall -cpp -o "$FPROG" "$top_srcdir/tests/shim/shim_late_f.f90" > "$TEST_TMPDIR/fc.log" 2>&1 ||
    { cat "$TEST_TMPDIR/fc.log"; die "$FC failed on shim_late_f.f90"; }
# LOG PROGRAM: the job; its survivors saw the error once
late() {
    _log=$1
    setsid "$MPIRUN" --enable-recovery -np $NP -x LD_PRELOAD="$PRELOAD" -x FTMPI_TIMEOUT_MS=3000 \
        "$2" > "$_log" 2>&1 &
    _job=$!
    register_pgid $_job
    wait_pid_timeout $_job 120 || { cat "$_log"; die "$_log: the job did not end in 120 s"; }
    n=$(grep -c '^late_f rank=[0-9]* errors=1$' "$_log")
    [ "$n" -eq $((NP - 1)) ] ||
        { cat "$_log"; die "$_log: $n of $((NP - 1)) survivors saw the error once (MPI_ERRORS_RETURN set from Fortran after 20 calls)"; }
}
late "$TEST_TMPDIR/late.log" "$FPROG"
echo "Fortran, MPI_COMM_SET_ERRHANDLER after 20 calls: 3 survivors saw the error once"
# MPI-1's call, where the MPI still has it (Open MPI 5 has not)
if "$FC" -Wall -cpp -DSHIM_LATE_MPI1 -o "$FPROG.mpi1" "$top_srcdir/tests/shim/shim_late_f.f90" \
    > "$TEST_TMPDIR/fc1.log" 2>&1; then
    late "$TEST_TMPDIR/late1.log" "$FPROG.mpi1"
    echo "Fortran, MPI_ERRHANDLER_SET after 20 calls: 3 survivors saw the error once"
else
    echo "no MPI_ERRHANDLER_SET in this MPI: that case is not tested"
fi
# and MPI-1's MPI_Errhandler_set from C (tests/shim/shim_return.c built here)
# (the C wrapper of the same MPI as mpi_fort's: mpifort.mpich -> mpicc.mpich)
CC_MPI=$(printf '%s\n' "$FC" | sed 's/mpifort\([^/]*\)$/mpicc\1/; s/mpif90\([^/]*\)$/mpicc\1/')
CC_MPI=$(command -v "$CC_MPI" || true)
if [ -n "$CC_MPI" ] && "$CC_MPI" -DSHIM_RETURN_MPI1 -o "$TEST_TMPDIR/shim_return1" \
    "$top_srcdir/tests/shim/shim_return.c" > "$TEST_TMPDIR/cc1.log" 2>&1; then
    LOG=$TEST_TMPDIR/ret1.log
    setsid "$MPIRUN" --enable-recovery -np $NP -x LD_PRELOAD="$PRELOAD" -x FTMPI_TIMEOUT_MS=3000 \
        -x SHIM_RETURN_LATE=20 -x SHIM_RETURN_DIE=2:100 "$TEST_TMPDIR/shim_return1" > "$LOG" 2>&1 &
    job=$!
    register_pgid $job
    wait_pid_timeout $job 120 || { cat "$LOG"; die "$LOG: the job did not end in 120 s"; }
    n=$(grep -c '^shim_return rank=[0-9]* errors=1 after=ok' "$LOG")
    [ "$n" -eq $((NP - 1)) ] ||
        { cat "$LOG"; die "$LOG: $n of $((NP - 1)) survivors saw the error once (MPI_Errhandler_set after 20 calls)"; }
    echo "C, MPI_Errhandler_set after 20 calls: 3 survivors saw the error once"
else
    echo "no mpicc or no MPI_Errhandler_set in this MPI: the C MPI-1 case is not tested"
fi
echo "PASS ($TEST_NAME)"
