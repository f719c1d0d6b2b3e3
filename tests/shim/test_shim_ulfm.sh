#!/bin/sh
# The drop-in under Open MPI 5's ULFM launch line (mpirun --with-ft ulfm
# --mca pml ob1; issue 38 item 3), 4 ranks, world rank 2 lost mid-run:
#  - FTMPI_SHIM_ON_FAILURE=continue, a program whose calls are all protected
#    (tests/shim/shim_patterns.c barrier: an allreduce and a barrier per
#    iteration), rank 2 SIGKILLed: the 3 survivors finish with the same
#    values and the job ends non-zero (USER_GUIDE section 8's table);
#  - the same with rank 2 SIGSTOPped: the watchdog finds it silent, world
#    rank 0 has it ended through mpirun (PMIx job control) and reported
#    failed to ULFM, so no survivor's MPI_Finalize (under ULFM its shrink of
#    the world waits for every rank not known dead) waits for it.  Before:
#    the survivors waited there until the watchdog ended the job (14 s at
#    FTMPI_TIMEOUT_MS=3000, "blocked for ... in MPI_Finalize");
#  - return, the halo exchange (MPI_Waitall, a call the drop-in only
#    watches), rank 2 SIGKILLed, FTMPI_TIMEOUT_MS=60000: the call involving
#    the dead rank returns through ULFM (MPI_ERR_PROC_FAILED from MPI
#    itself; the program keeps MPI_ERRORS_ARE_FATAL, so MPI ends the job)
#    instead of the watchdog ending it after FTMPI_TIMEOUT_MS.
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
[ "${FTI_LAUNCHER:-}" = prte ] ||
    skip "the drop-in under ULFM needs Open MPI 5's mpirun --with-ft ulfm; this launcher is ${FTI_LAUNCHER:-unknown}'s"
FTMPI_TIMEOUT_MS=3000
lib_test_env
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
PRELOAD=$(san_preload "$SHIM")
PAT="$top_builddir/tests/shim/shim_patterns"
NP=4

# LOG [mpirun flags and program]: the job under ULFM in its own process
# group; sets RC
job() {
    _log=$1
    shift
    setsid "$MPIRUN" --with-ft ulfm --mca pml ob1 -np $NP -x LD_PRELOAD="$PRELOAD" "$@" > "$_log" 2>&1 &
    _job=$!
    register_pgid $_job
    wait_pid_timeout $_job 120 || { cat "$_log"; die "$_log: the job did not end in 120 s"; }
    wait $_job
    RC=$?
    wait_until 30 sh -c "! pgrep -f '^$PAT( |\$)' > /dev/null" ||
        { pgrep -af "^$PAT( |\$)"; die "$_log: ranks left 30 s after mpirun ended"; }
}

for fault in DIE STOP; do
    log="$TEST_TMPDIR/barrier_${fault}_continue.log"
    job "$log" -x SHIM_P_$fault=2:40 -x FTMPI_SHIM_ON_FAILURE=continue "$PAT" barrier
    [ $RC -ne 0 ] || { cat "$log"; die "$fault: exit status 0 after a lost rank"; }
    for r in 0 1 3; do
        file_has "$log" "^patterns barrier rank=$r iters=200 " || { cat "$log"; die "$fault: survivor $r did not finish"; }
    done
    [ "$(sed -n 's/^patterns barrier rank=[013] iters=200 //p' "$log" | sort -u | wc -l)" -eq 1 ] ||
        { grep '^patterns' "$log"; die "$fault: the survivors' values differ"; }
    ! file_has "$log" 'blocked for [0-9]+ ms in MPI_Finalize' ||
        { cat "$log"; die "$fault: a survivor's MPI_Finalize waited for the lost rank"; }
    if [ "$fault" = STOP ]; then
        file_has "$log" 'ULFM: world rank 2 ended through PMIx job control' ||
            { cat "$log"; die "STOP: the stopped rank was not ended through mpirun"; }
    fi
    echo "barrier_${fault}_continue: 3 survivors finished alike, status $RC"
done

log="$TEST_TMPDIR/halo_DIE_return.log"
job "$log" -x SHIM_P_DIE=2:40 -x FTMPI_SHIM_ON_FAILURE=return -x FTMPI_TIMEOUT_MS=60000 "$PAT" halo
[ $RC -ne 0 ] || { cat "$log"; die "halo: exit status 0 after a lost rank"; }
file_has "$log" 'MPI_ERR_PROC_FAILED' || { cat "$log"; die "halo: no MPI_ERR_PROC_FAILED from MPI"; }
! file_has "$log" 'aborting the job' || { cat "$log"; die "halo: the watchdog ended the job, not ULFM"; }
echo "halo_DIE_return: ended by MPI's own MPI_ERR_PROC_FAILED, status $RC"
echo "PASS ($TEST_NAME)"
