#!/bin/sh
# The default mode's hot path (issue 36 item 4; DESIGN section 10.3) keeps
# the failure mode auto of MPI_COMM_WORLD until the program sets an error
# handler: a handler set from Fortran (MPI_COMM_SET_ERRHANDLER, which
# Open MPI's Fortran layer sends to PMPI_ directly) after 20 calls under
# MPI_ERRORS_ARE_FATAL must turn the later calls to return
# (tests/shim/shim_late_f.f90, built here with mpifort; 4 ranks, world
# rank 2 SIGKILLed before call 100): each of the 3 survivors sees the error
# once; a drop-in that missed the change ends the job as abort does.  The
# same from C: test_shim_kill's "return set late".
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
"$FC" -Wall -o "$FPROG" "$top_srcdir/tests/shim/shim_late_f.f90" > "$TEST_TMPDIR/fc.log" 2>&1 ||
    { cat "$TEST_TMPDIR/fc.log"; die "$FC failed on shim_late_f.f90"; }
LOG=$TEST_TMPDIR/late.log
setsid "$MPIRUN" --enable-recovery -np $NP -x LD_PRELOAD="$PRELOAD" -x FTMPI_TIMEOUT_MS=3000 \
    "$FPROG" > "$LOG" 2>&1 &
job=$!
register_pgid $job
wait_pid_timeout $job 120 || { cat "$LOG"; die "the job did not end in 120 s"; }
n=$(grep -c '^late_f rank=[0-9]* errors=1$' "$LOG")
[ "$n" -eq $((NP - 1)) ] ||
    { cat "$LOG"; die "$n of $((NP - 1)) survivors saw the error once (MPI_ERRORS_RETURN set from Fortran after 20 calls)"; }
echo "Fortran, MPI_ERRORS_RETURN set after 20 calls: $n survivors saw the error once"
echo "PASS ($TEST_NAME)"
