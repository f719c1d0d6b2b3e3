#!/bin/sh
# The Fortran collectives under the drop-in (issue 28, item 3 for Fortran
# callers): tests/shim/shim_coll_f.f90 (`use mpi`, built here with
# mpifort) calls MPI_BCAST, MPI_REDUCE (MPI_IN_PLACE too), MPI_ALLGATHER
# (MPI_IN_PLACE too) and MPI_BARRIER on MPI_COMM_WORLD and on an
# MPI_COMM_DUP of it, 4 ranks:
#  - failure-free with and without LD_PRELOAD=libftmpi_pmpi.so: the same
#    bits on every rank, exit status 0, and every one of those calls
#    protected as the C ones are (MPI_Finalize's counts: 400 protected, 400
#    made from Fortran, on each rank);
#  - world rank 2 SIGKILLs itself mid-run (FTMPI_SHIM_ON_FAILURE=abort, the
#    default), under mpirun --enable-recovery and plain mpirun: the job
#    ends with a non-zero status, no rank finishes, and a line names world
#    rank 2 and the protected call a survivor was in (under plain mpirun
#    Open MPI may end the job first, naming the rank itself).
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
need_kill_recovery "the drop-in's Fortran collectives after a lost rank"
lib_test_env
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
PRELOAD=$(san_preload "$SHIM")
FC=$(mpi_fort)
[ -n "$FC" ] || skip "no mpifort: the Fortran collectives are not run"
PROG="$TEST_TMPDIR/shim_coll_f"
"$FC" -Wall -o "$PROG" "$top_srcdir/tests/shim/shim_coll_f.f90" > "$TEST_TMPDIR/fc.log" 2>&1 ||
    { cat "$TEST_TMPDIR/fc.log"; die "$FC failed on shim_coll_f.f90"; }
NP=4
ITERS=100

# LOG LAUNCH(plain|recovery) PRELOAD(or empty) [mpirun flags]: the job in
# its own process group, ended within 120 s; sets RC
job() {
    _log=$1 _launch=$2 _pre=$3
    shift 3
    _rec=
    [ "$_launch" = recovery ] && _rec=--enable-recovery
    if [ -n "$_pre" ]; then
        setsid "$MPIRUN" $_rec -np $NP -x LD_PRELOAD="$_pre" -x SHIM_P_ITERS=$ITERS "$@" "$PROG" \
            > "$_log" 2>&1 &
    else
        setsid "$MPIRUN" $_rec -np $NP -x SHIM_P_ITERS=$ITERS "$@" "$PROG" > "$_log" 2>&1 &
    fi
    _job=$!
    register_pgid $_job
    wait_pid_timeout $_job 120 || { cat "$_log"; die "$_log: the job did not end in 120 s"; }
    wait $_job
    RC=$?
    wait_until 30 sh -c "! pgrep -f '^$PROG\$' > /dev/null" ||
        { pgrep -af "^$PROG\$"; die "$_log: ranks left 30 s after mpirun ended"; }
}

results() { grep -E "^coll_f rank=[0-9]+ iters=" "$1" | sort; }

# ---- failure-free: native bits, every call protected
job "$TEST_TMPDIR/native.log" plain ""
[ $RC -eq 0 ] || { cat "$TEST_TMPDIR/native.log"; die "failed without the shim"; }
[ "$(results "$TEST_TMPDIR/native.log" | wc -l)" -eq $NP ] || die "$NP result lines expected"
job "$TEST_TMPDIR/shim.log" recovery "$PRELOAD"
[ $RC -eq 0 ] || { cat "$TEST_TMPDIR/shim.log"; die "failed under the shim"; }
[ "$(results "$TEST_TMPDIR/native.log")" = "$(results "$TEST_TMPDIR/shim.log")" ] ||
    { results "$TEST_TMPDIR/native.log"; results "$TEST_TMPDIR/shim.log"; die "results differ under the shim"; }
n=$((4 * ITERS))
c=$(count_lines "$TEST_TMPDIR/shim.log" "libftmpi_pmpi: $n MPI_Barrier, MPI_Bcast, MPI_Reduce and MPI_Allgather calls protected")
[ "$c" -eq $NP ] || { grep 'libftmpi_pmpi: [0-9]* MPI_' "$TEST_TMPDIR/shim.log"; die "$c of $NP ranks protected the $n Fortran collectives"; }
c=$(count_lines "$TEST_TMPDIR/shim.log" "libftmpi_pmpi: 0 MPI_Allreduce calls protected, 0 passed to MPI, $n made from Fortran")
[ "$c" -eq $NP ] || { grep 'made from Fortran' "$TEST_TMPDIR/shim.log"; die "$c of $NP ranks counted $n calls from Fortran"; }
! file_has "$TEST_TMPDIR/shim.log" 'MPI_(Barrier|Bcast|Reduce|Allgather) call\(s\) went to MPI unprotected' ||
    { grep unprotected "$TEST_TMPDIR/shim.log"; die "a Fortran collective went to MPI unprotected"; }
echo "failure-free: $(results "$TEST_TMPDIR/shim.log" | head -n 1), the same bits with and without the shim; $n calls protected per rank"

# ---- world rank 2 SIGKILLed
for launch in recovery plain; do
    log="$TEST_TMPDIR/kill_$launch.log"
    job "$log" $launch "$PRELOAD" -x SHIM_P_DIE=2:40
    [ $RC -ne 0 ] || { cat "$log"; die "$launch: exit status 0 after a lost rank"; }
    ! file_has "$log" '^coll_f rank=' || { cat "$log"; die "$launch: a rank finished"; }
    if ! file_has "$log" 'world rank\(s\) 2 lost; aborting the job: world rank [0-9]+ had a rank lost \(FTMPI_SHIM_ON_FAILURE=abort\) in MPI_(Barrier|Bcast|Reduce|Allgather)'; then
        [ $launch = plain ] && file_has "$log" 'process rank 2 .*exited on signal 9' ||
            { cat "$log"; die "$launch: no line naming world rank 2 and the protected call"; }
    fi
    echo "SIGKILL, $launch mpirun: status $RC: $(grep -o 'world rank [0-9]* [a-z].* in MPI_[A-Za-z_]*' "$log" | head -n 1)"
done
