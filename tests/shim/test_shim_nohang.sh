#!/bin/sh
# No hang anywhere under the drop-in (issue 28 items 1, 2 and 6): unmodified
# MPI programs with the patterns of real codes (tests/shim/shim_patterns.c:
# a halo exchange, the same completed by an MPI_Test loop, a barrier after
# each allreduce, an allreduce and a bcast on a communicator split with one
# color; tests/shim/shim_halo_f.f90: a Fortran halo exchange + allreduce +
# barrier), 4 ranks:
#  - failure-free with and without LD_PRELOAD=libftmpi_pmpi.so: the same
#    results, bit for bit, and exit status 0; world rank 0 says at
#    MPI_Finalize which kinds of call went to MPI unprotected (warn level on
#    a communicator spanning the world), none of the split communicator's;
#  - world rank 2 SIGKILLs itself, and separately SIGSTOPs itself, mid-run,
#    under plain mpirun and under mpirun --enable-recovery
#    (FTMPI_SHIM_ON_FAILURE=abort, the default): the job ends with a
#    non-zero status and a line naming world rank 2 (ours, or under plain
#    mpirun after a SIGKILL Open MPI's own), no rank finishes, and it ends
#    within FTMPI_TIMEOUT_MS + 2 s of the fault (checked with a margin for
#    a loaded machine: SLACK_MS; the measured figure is printed);
#  - the same SIGSTOP under FTMPI_SHIM_ON_FAILURE=continue for the halo
#    exchange: the allreduce is redone but the next exchange cannot be, and
#    the line names the call (MPI_Waitall);
#  - continue with a program whose calls are all protected (allreduce,
#    barrier), rank 2 SIGSTOPped: the survivors finish, then the job ends
#    with a non-zero status (mpirun would wait for the stopped rank);
#  - world rank 0 (the watchdog hub, the lighthouse) SIGKILLed and SIGSTOPped
#    under --enable-recovery: the same;
#  - a long compute phase on one rank (3 phases of 2.5 s with
#    FTMPI_TIMEOUT_MS=1000): the job ends normally, nothing is lost.
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
need_kill_recovery "the drop-in's watchdog after a lost rank (and its Fortran part, built with Open MPI's mpifort)"
FTMPI_TIMEOUT_MS=3000
lib_test_env
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
PRELOAD=$(san_preload "$SHIM")
PAT="$top_builddir/tests/shim/shim_patterns"
NP=4
SLACK_MS=${SLACK_MS:-4000}

HALO_F=
if command -v mpifort > /dev/null 2>&1; then
    HALO_F="$TEST_TMPDIR/shim_halo_f"
    mpifort -Wall -o "$HALO_F" "$top_srcdir/tests/shim/shim_halo_f.f90" > "$TEST_TMPDIR/fc.log" 2>&1 ||
        { cat "$TEST_TMPDIR/fc.log"; die "mpifort failed on shim_halo_f.f90"; }
else
    echo "no mpifort: the Fortran halo exchange is not run"
fi

now_ms() { date +%s%3N; }
EXTRA=

# LOG LAUNCH(plain|recovery) PRELOAD(or empty) PROGRAM ARGS...: runs the job in
# its own process group; sets RC, END_MS
job() {
    _log=$1 _launch=$2 _pre=$3
    shift 3
    _rec=
    [ "$_launch" = recovery ] && _rec=--enable-recovery
    if [ -n "$_pre" ]; then
        setsid "$MPIRUN" $_rec -np $NP -x LD_PRELOAD="$_pre" $EXTRA "$@" > "$_log" 2>&1 &
    else
        setsid "$MPIRUN" $_rec -np $NP $EXTRA "$@" > "$_log" 2>&1 &
    fi
    _job=$!
    register_pgid $_job
    wait_pid_timeout $_job 120 || { cat "$_log"; die "$_log: the job did not end in 120 s"; }
    END_MS=$(now_ms)
    wait $_job
    RC=$?
    # the ranks end with mpirun (Open MPI kills them, a stopped one too)
    wait_until 30 sh -c "! pgrep -f '^$1( |\$)' > /dev/null" ||
        { pgrep -af "^$1( |\$)"; die "$_log: ranks left 30 s after mpirun ended"; }
}

results() { grep -E "^patterns [a-z_]* rank=[0-9]+ iters=" "$1" | sort; }

# ---- failure-free: the same bits with and without the shim
for prog in "halo" "testloop" "barrier" "split" "F"; do
    if [ "$prog" = F ]; then
        [ -n "$HALO_F" ] || continue
        set -- "$HALO_F"
    else
        set -- "$PAT" "$prog"
    fi
    job "$TEST_TMPDIR/ff_native_$prog.log" plain "" "$@"
    [ $RC -eq 0 ] || { cat "$TEST_TMPDIR/ff_native_$prog.log"; die "$prog: failed without the shim"; }
    job "$TEST_TMPDIR/ff_shim_$prog.log" recovery "$PRELOAD" "$@"
    [ $RC -eq 0 ] || { cat "$TEST_TMPDIR/ff_shim_$prog.log"; die "$prog: failed under the shim"; }
    [ "$(results "$TEST_TMPDIR/ff_native_$prog.log" | wc -l)" -eq $NP ] || die "$prog: $NP result lines expected"
    [ "$(results "$TEST_TMPDIR/ff_native_$prog.log")" = "$(results "$TEST_TMPDIR/ff_shim_$prog.log")" ] ||
        { results "$TEST_TMPDIR/ff_native_$prog.log"; results "$TEST_TMPDIR/ff_shim_$prog.log"; die "$prog: results differ under the shim"; }
    echo "failure-free $prog: $(results "$TEST_TMPDIR/ff_shim_$prog.log" | head -n 1 | sed 's/.*value=//'), the same with and without the shim"
done
# MPI_Finalize's lines (world rank 0): a kind of call that went to MPI
# unprotected, at warn level on a communicator spanning the world
l="$TEST_TMPDIR/ff_shim_halo.log"
file_has "$l" 'ftmpi warn .*libftmpi_pmpi: 200 MPI_Sendrecv call\(s\) went to MPI unprotected, on a communicator spanning the world' ||
    { cat "$l"; die "halo: no warn line about MPI_Sendrecv"; }
file_has "$l" 'ftmpi info .*libftmpi_pmpi: 100 MPI_Waitall call\(s\) went to MPI unprotected \(' ||
    { cat "$l"; die "halo: no info line about MPI_Waitall"; }
! file_has "$TEST_TMPDIR/ff_shim_split.log" 'MPI_(Allreduce|Bcast) call\(s\) went to MPI unprotected' ||
    die "split: the allreduce or bcast on the split communicator went unprotected"

# ---- faults: every job ends, non-zero, naming rank 2
VICTIM=2
# LOG FAULT LAUNCH MODE: the checks on one faulted run
check_fault() {
    _log=$1
    [ $RC -ne 0 ] || { cat "$_log"; die "$_log: exit status 0 after a lost rank"; }
    ! file_has "$_log" '^patterns [a-z_]* rank=[0-9]+ iters=' || { cat "$_log"; die "$_log: a rank finished"; }
    if ! file_has "$_log" "world rank\\(s\\) $VICTIM lost; aborting the job: world rank [0-9]+ .* in MPI_"; then
        # a SIGKILL under plain mpirun: Open MPI may end the job first
        [ "$2" = DIE ] && [ "$3" = plain ] && file_has "$_log" "process rank $VICTIM .*exited on signal 9" ||
            { cat "$_log"; die "$_log: no line naming world rank $VICTIM and the call"; }
    fi
    _at=$(sed -n "s/^patterns fault rank=$VICTIM at_ms=\\([0-9]*\\).*/\\1/p" "$_log" | head -n 1)
    if [ -n "$_at" ]; then
        _ms=$((END_MS - _at))
        [ $_ms -le $((FTMPI_TIMEOUT_MS + 2000 + SLACK_MS)) ] ||
            { cat "$_log"; die "$_log: ended $_ms ms after the fault"; }
        _took=" $_ms ms after the fault"
    else
        _took=
    fi
    echo "$(basename "$_log" .log): status $RC$_took: $(grep -o 'world rank [0-9]* [a-z].* in MPI_[A-Za-z_]*' "$_log" | head -n 1)"
}

for prog in "halo" "testloop" "barrier" "split" "F"; do
    if [ "$prog" = F ]; then
        [ -n "$HALO_F" ] || continue
        set -- "$HALO_F"
    else
        set -- "$PAT" "$prog"
    fi
    for fault in DIE STOP; do
        for launch in plain recovery; do
            log="$TEST_TMPDIR/${prog}_${fault}_$launch.log"
            EXTRA="-x SHIM_P_$fault=2:40"
            job "$log" $launch "$PRELOAD" "$@"
            check_fault "$log" $fault $launch
        done
    done
done

# ---- continue: the redone allreduce, then the exchange nobody can redo
log="$TEST_TMPDIR/halo_STOP_continue.log"
EXTRA="-x SHIM_P_STOP=2:40 -x FTMPI_SHIM_ON_FAILURE=continue"
job "$log" recovery "$PRELOAD" "$PAT" halo
check_fault "$log" STOP recovery
file_has "$log" 'world rank\(s\) 2 lost; aborting the job: world rank [0-9]+ was blocked for [0-9]+ ms in MPI_(Waitall|Sendrecv)' ||
    { cat "$log"; die "continue: the line does not name the halo exchange"; }

# ---- continue, every call protected: the survivors finish, then the job
# ends (non-zero) instead of mpirun waiting for the stopped rank
# (Open MPI 5 too: before, the survivors waited in MPI_Finalize's fence for
# the stopped rank until the watchdog aborted the job, exit 70 after 14 s,
# without this line; issue 38 item 3)
for launch in plain recovery; do
    log="$TEST_TMPDIR/barrier_STOP_continue_$launch.log"
    EXTRA="-x SHIM_P_STOP=2:40 -x FTMPI_SHIM_ON_FAILURE=continue"
    job "$log" $launch "$PRELOAD" "$PAT" barrier
    [ $RC -ne 0 ] || { cat "$log"; die "$log: exit status 0 with a stopped rank"; }
    # (mpirun's teardown sends SIGCONT before its SIGTERM: the stopped rank
    # may wake and finish alone too)
    for r in 0 1 3; do
        file_has "$log" "^patterns barrier rank=$r iters=200 " || { cat "$log"; die "$log: survivor $r did not finish"; }
    done
    file_has "$log" 'world rank\(s\) 2 lost and maybe still there' || { cat "$log"; die "$log: no line naming rank 2"; }
    echo "barrier_STOP_continue_$launch: $((NP - 1)) survivors finished, status $RC"
done

# ---- the same with 1 MiB allreduces (the held allreduce, mpi_shim/fast.c):
# the survivors wait in its ring for the stopped rank, leave it on the
# detector's word and finish alike
log="$TEST_TMPDIR/held_STOP_continue.log"
EXTRA="-x SHIM_P_STOP=2:40 -x FTMPI_SHIM_ON_FAILURE=continue -x SHIM_P_COUNT=131072 -x FTMPI_LOG_LEVEL=info"
job "$log" recovery "$PRELOAD" "$PAT" barrier
[ $RC -ne 0 ] || { cat "$log"; die "$log: exit status 0 with a stopped rank"; }
for r in 0 1 3; do
    file_has "$log" "^patterns barrier rank=$r iters=200 " || { cat "$log"; die "$log: survivor $r did not finish"; }
done
[ "$(sed -n 's/^patterns barrier rank=[013] iters=200 //p' "$log" | sort -u | wc -l)" -eq 1 ] ||
    { grep '^patterns' "$log"; die "$log: the survivors' values differ"; }
n=$(count_lines "$log" '[1-9][0-9]* as the held allreduce')
[ "$n" -ge 3 ] || { grep 'held' "$log"; die "$log: $n survivors ran the held allreduce"; }
echo "held_STOP_continue: $((NP - 1)) survivors left the held ring and finished alike, status $RC"

# ---- world rank 0 lost: the hub and the lighthouse with it
VICTIM=0
for fault in DIE STOP; do
    log="$TEST_TMPDIR/halo_rank0_${fault}_recovery.log"
    EXTRA="-x SHIM_P_$fault=0:40"
    job "$log" recovery "$PRELOAD" "$PAT" halo
    check_fault "$log" $fault recovery
done

# ---- a long compute phase on a live rank is no failure
log="$TEST_TMPDIR/compute.log"
EXTRA="-x FTMPI_TIMEOUT_MS=1000 -x SHIM_P_ITERS=30 -x SHIM_P_COMPUTE_MS=2500"
job "$log" recovery "$PRELOAD" "$PAT" compute
[ $RC -eq 0 ] || { cat "$log"; die "compute: exit status $RC"; }
[ "$(results "$log" | wc -l)" -eq $NP ] || { cat "$log"; die "compute: $NP result lines expected"; }
! file_has "$log" 'lost|aborting' || { cat "$log"; die "compute: a rank was taken for lost"; }
echo "compute: 3 phases of 2.5 s on world rank 1 with FTMPI_TIMEOUT_MS=1000, the job ended normally"
