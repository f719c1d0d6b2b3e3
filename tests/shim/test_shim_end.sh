#!/bin/sh
# How a job with a lost rank ends under the drop-in (issue 36 items 3 and
# 1; DESIGN section 10.4, USER_GUIDE section 8), 4 ranks, mpirun
# --enable-recovery, FTMPI_TIMEOUT_MS=3000:
#  - a rank lost while the survivors wait in an unprotected call
#    (tests/shim/shim_patterns.c halo: MPI_Waitall; FTMPI_SHIM_ON_FAILURE=
#    return, so the allreduce is no call that ends the job at once), world
#    rank 2 SIGKILLed and separately SIGSTOPped: the rank that ends the job
#    says how long after entering the call it did (the watchdog's own
#    measure: judge's deadline, then mpirun reading the line), which must
#    be within FTMPI_TIMEOUT_MS + 0.5 s (it was 0.5 s more: a fixed wait
#    for mpirun to forward the line).  The figure from the fault to
#    mpirun's end is printed, not checked (a loaded machine's scheduling).
#  - the exit status (item 1; the table of USER_GUIDE section 8), with
#    tests/shim/shim_errh.c (its line printed after MPI_Finalize, not
#    flushed: it must be there), world rank 2 lost at call 100 of 300:
#      abort, SIGKILL: non-zero; return, continue, SIGKILL: non-zero, the 3
#      survivors' lines there; the same with FTMPI_SHIM_SUCCESS_AFTER_LOSS=1:
#      0; return, SIGSTOP, with that setting too: non-zero (mpirun would
#      wait for the stopped rank); return, SIGKILL under plain mpirun:
#      non-zero (Open MPI ends the job).
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
need_kill_recovery "the end of a job with a lost rank under the drop-in"
FTMPI_TIMEOUT_MS=3000
lib_test_env
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
PRELOAD=$(san_preload "$SHIM")
PAT="$top_builddir/tests/shim/shim_patterns"
ERRH="$top_builddir/tests/shim/shim_errh"
NP=4

now_ms() { date +%s%3N; }

# LOG [mpirun flags and program]: the job in its own process group; sets
# RC, END_MS
job() {
    _log=$1
    shift
    _rec=--enable-recovery
    [ "$1" = plain ] && { _rec=; shift; }
    setsid "$MPIRUN" $_rec -np $NP -x LD_PRELOAD="$PRELOAD" "$@" > "$_log" 2>&1 &
    _job=$!
    register_pgid $_job
    wait_pid_timeout $_job 120 || { cat "$_log"; die "$_log: the job did not end in 120 s"; }
    END_MS=$(now_ms)
    wait $_job
    RC=$?
    for _p in "$PAT" "$ERRH"; do
        wait_until 30 sh -c "! pgrep -f '^$_p( |\$)' > /dev/null" ||
            { pgrep -af "^$_p( |\$)"; die "$_log: ranks left 30 s after mpirun ended"; }
    done
}

for fault in DIE STOP; do
    log="$TEST_TMPDIR/waitall_$fault.log"
    job "$log" -x FTMPI_SHIM_ON_FAILURE=return -x SHIM_P_$fault=2:40 "$PAT" halo
    [ $RC -ne 0 ] || { cat "$log"; die "$fault: exit status 0 after a lost rank"; }
    file_has "$log" 'world rank\(s\) 2 lost; aborting the job: world rank [013] was blocked for [0-9]+ ms in MPI_(Waitall|Sendrecv)' ||
        { cat "$log"; die "$fault: no line naming rank 2 and the exchange"; }
    took=$(sed -n 's/.*libftmpi_pmpi: world rank [0-9]* ends the job \([0-9]*\) ms after the call was entered.*/\1/p' "$log" | head -n 1)
    [ -n "$took" ] || { cat "$log"; die "$fault: no line saying when the job was ended"; }
    [ "$took" -le $((FTMPI_TIMEOUT_MS + 500)) ] ||
        { cat "$log"; die "$fault: the job was ended $took ms after the call was entered (FTMPI_TIMEOUT_MS=$FTMPI_TIMEOUT_MS, + 0.5 s at most)"; }
    at=$(sed -n 's/^patterns fault rank=2 at_ms=\([0-9]*\).*/\1/p' "$log" | head -n 1)
    echo "$fault in MPI_Waitall: status $RC, ended $took ms after the call was entered, mpirun gone $((END_MS - at)) ms after the fault"
done

# ---- the exit status per mode and case
# NAME EXPECT(0|nonzero) LINES [plain] mpirun flags: one cell
cell() {
    _name=$1 _want=$2 _lines=$3
    shift 3
    log="$TEST_TMPDIR/status_$_name.log"
    job "$log" "$@" "$ERRH"
    if [ "$_want" = 0 ]; then
        [ $RC -eq 0 ] || { cat "$log"; die "$_name: exit status $RC, expected 0"; }
    else
        [ $RC -ne 0 ] || { cat "$log"; die "$_name: exit status 0 after a lost rank"; }
    fi
    n=$(grep -c '^shim_errh rank=[013] ' "$log")
    [ "$_lines" = - ] || [ "$n" -eq "$_lines" ] || { cat "$log"; die "$_name: $n survivors' lines, expected $_lines"; }
    echo "$_name: status $RC, $n survivors' lines"
}
cell abort_kill nonzero 0 -x FTMPI_SHIM_ON_FAILURE=abort -x SHIM_ERRH_DIE=2:100
cell return_kill nonzero 3 -x FTMPI_SHIM_ON_FAILURE=return -x SHIM_ERRH_DIE=2:100
cell continue_kill nonzero 3 -x FTMPI_SHIM_ON_FAILURE=continue -x SHIM_ERRH_DIE=2:100
cell return_kill_ok 0 3 -x FTMPI_SHIM_ON_FAILURE=return -x SHIM_ERRH_DIE=2:100 \
    -x FTMPI_SHIM_SUCCESS_AFTER_LOSS=1
cell continue_kill_ok 0 3 -x FTMPI_SHIM_ON_FAILURE=continue -x SHIM_ERRH_DIE=2:100 \
    -x FTMPI_SHIM_SUCCESS_AFTER_LOSS=1
# (Open MPI 5 too: its MPI_Finalize waited in its fence for the stopped
# rank until the watchdog ended the job, before the lines; issue 38 item 3)
cell return_stop_ok nonzero 3 -x FTMPI_SHIM_ON_FAILURE=return -x SHIM_ERRH_STOP=2:100 \
    -x FTMPI_SHIM_SUCCESS_AFTER_LOSS=1
cell return_kill_plain nonzero - plain -x FTMPI_SHIM_ON_FAILURE=return -x SHIM_ERRH_DIE=2:100
