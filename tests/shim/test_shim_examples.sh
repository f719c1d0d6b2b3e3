#!/bin/sh
# The drop-in's examples (plain MPI, no FT_ call; DESIGN section 10):
#  examples/shim_pi (C, Monte-Carlo pi): the same estimate on every rank
#    with and without libftmpi_pmpi; under FTMPI_SHIM_ON_FAILURE=continue
#    with world rank 2 SIGKILLed mid-run, the 3 survivors end with one
#    estimate that passes the program's own check;
#  examples/shim_trainer_cxx.cpp (C++, built by make when configure found
#    a C++ compiler, else here with mpic++) and examples/shim_pi_f.f90
#    (Fortran, `use mpi`, built here with mpifort): the same results with
#    and without the shim (the trainer: the same loss to 1e-6; its
#    parameters are equal on every rank of a run, but not bitwise to
#    native MPI's, whose tuned allreduce adds in another order), and the
#    shim saw their calls.
# A missing compiler skips its part; both missing, the C part still runs.
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
lib_test_env
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
PRELOAD=$(san_preload "$SHIM")
PI="$top_builddir/examples/shim_pi"
NP=4

run() { # LOG PRELOAD PROGRAM: runs PROGRAM on NP ranks, output in LOG
    if [ -n "$2" ]; then
        timeout 600 "$MPIRUN" --enable-recovery -np $NP -x LD_PRELOAD="$2" "$3" > "$1" 2>&1
    else
        timeout 600 "$MPIRUN" --enable-recovery -np $NP "$3" > "$1" 2>&1
    fi
    rc=$?
    [ $rc -ne 124 ] || echo "(mpirun killed after 600 s by timeout)" >> "$1"
    return $rc
}

# LOG PREFIX: the sorted result lines of a run
results() { grep "^$2 rank=" "$1" | sort; }

# LOG_NATIVE LOG_SHIM PREFIX NAME: same results, NP of them, the shim counted calls
same_results() {
    [ "$(results "$1" "$3" | wc -l)" -eq $NP ] || { cat "$1"; die "$4: $NP result lines expected without the shim"; }
    [ "$(results "$1" "$3")" = "$(results "$2" "$3")" ] ||
        { results "$1" "$3"; results "$2" "$3"; die "$4: results differ with the shim"; }
    n=$(count_lines "$2" 'libftmpi_pmpi: [1-9][0-9]* MPI_Allreduce calls protected')
    [ "$n" -eq $NP ] || { cat "$2"; die "$4: $n of $NP ranks report protected calls"; }
}

# ---- C: shim_pi, with and without the shim
run "$TEST_TMPDIR/pi_native.log" "" "$PI" || { cat "$TEST_TMPDIR/pi_native.log"; die "shim_pi failed without the shim"; }
run "$TEST_TMPDIR/pi_shim.log" "$PRELOAD" "$PI" || { cat "$TEST_TMPDIR/pi_shim.log"; die "shim_pi failed under the shim"; }
same_results "$TEST_TMPDIR/pi_native.log" "$TEST_TMPDIR/pi_shim.log" pi shim_pi
echo "C: $(results "$TEST_TMPDIR/pi_shim.log" pi | head -n 1 | sed 's/rank=[0-9]* //'), with and without the shim"

# ---- C: shim_pi under continue, world rank 2 killed mid-run (needs the
# survivors of a SIGKILL to go on in one job: Open MPI's --enable-recovery)
if [ "$FTI_MPI_IMPL" = openmpi ]; then
    setsid "$MPIRUN" --enable-recovery -np $NP -x LD_PRELOAD="$PRELOAD" -x FTMPI_SHIM_ON_FAILURE=continue \
        -x SHIM_PI_SLEEP_MS=10 -x SHIM_PI_BATCHES=400 -x SHIM_PI_SAMPLES=20000 "$PI" \
        > "$TEST_TMPDIR/pi_kill.log" 2>&1 &
    JOB=$!
    register_pgid $JOB
    wait_until 30 file_has "$TEST_TMPDIR/pi_kill.log" '^pi started' || die "continue: shim_pi did not start"
    sleep 1
    killed=
    for p in $(pgrep -f "^$PI\$"); do
        if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=2"; then
            kill -9 $p && killed=$p
            break
        fi
    done
    [ -n "$killed" ] || die "continue: no rank 2 to kill"
    wait_pid_timeout $JOB 90 || die "continue: the job did not end"
    n=$(grep -c '^pi rank=[0-9]* batches=400 .* ok$' "$TEST_TMPDIR/pi_kill.log")
    [ "$n" -eq $((NP - 1)) ] || { cat "$TEST_TMPDIR/pi_kill.log"; die "continue: $n of $((NP - 1)) survivors ended with a checked estimate"; }
    [ "$(grep '^pi rank=' "$TEST_TMPDIR/pi_kill.log" | sed 's/rank=[0-9]* //' | sort -u | wc -l)" -eq 1 ] ||
        { grep '^pi rank=' "$TEST_TMPDIR/pi_kill.log"; die "continue: the survivors' estimates differ"; }
    file_has "$TEST_TMPDIR/pi_kill.log" 'world rank\(s\) 2 lost; MPI_Allreduce goes on over 3 of 4' ||
        die "continue: no message naming rank 2"
    echo "C, rank 2 killed: $n survivors, $(grep '^pi rank=' "$TEST_TMPDIR/pi_kill.log" | head -n 1 | sed 's/rank=[0-9]* //')"
else
    echo "C, rank 2 killed: not run: the survivors of a SIGKILL go on in one job only under Open MPI's mpirun --enable-recovery; this build's launcher is $FTI_MPI_IMPL's (doc/INSTALL.md)"
fi

# ---- C++: shim_trainer_cxx
CXX_BIN="$top_builddir/examples/shim_trainer_cxx"
if [ ! -x "$CXX_BIN" ] && MPICXX=$(mpi_cxx) && [ -n "$MPICXX" ]; then
    CXX_BIN="$TEST_TMPDIR/shim_trainer_cxx"
    "$MPICXX" -Wall -Wextra -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1 -o "$CXX_BIN" \
        "$top_srcdir/examples/shim_trainer_cxx.cpp" > "$TEST_TMPDIR/cxx.log" 2>&1 ||
        { cat "$TEST_TMPDIR/cxx.log"; die "mpic++ failed on shim_trainer_cxx.cpp"; }
fi
if [ -x "$CXX_BIN" ]; then
    run "$TEST_TMPDIR/cxx_native.log" "" "$CXX_BIN" || { cat "$TEST_TMPDIR/cxx_native.log"; die "C++: failed without the shim"; }
    run "$TEST_TMPDIR/cxx_shim.log" "$PRELOAD" "$CXX_BIN" || { cat "$TEST_TMPDIR/cxx_shim.log"; die "C++: failed under the shim"; }
    for f in cxx_native cxx_shim; do
        [ "$(results "$TEST_TMPDIR/$f.log" final | wc -l)" -eq $NP ] || { cat "$TEST_TMPDIR/$f.log"; die "C++ ($f): $NP final lines expected"; }
        [ "$(results "$TEST_TMPDIR/$f.log" final | sed 's/rank=[0-9]* //' | sort -u | wc -l)" -eq 1 ] ||
            { results "$TEST_TMPDIR/$f.log" final; die "C++ ($f): the ranks' parameters differ"; }
    done
    loss() { results "$1" final | head -n 1 | sed 's/.* loss=\([0-9.]*\) .*/\1/'; }
    a=$(loss "$TEST_TMPDIR/cxx_native.log") b=$(loss "$TEST_TMPDIR/cxx_shim.log")
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !(d < 2e-6 && d > -2e-6) }' ||
        die "C++: final loss $b under the shim, $a without"
    n=$(count_lines "$TEST_TMPDIR/cxx_shim.log" 'libftmpi_pmpi: 202 MPI_Allreduce calls protected')
    [ "$n" -eq $NP ] || { cat "$TEST_TMPDIR/cxx_shim.log"; die "C++: the shim did not see the 202 calls on every rank"; }
    echo "C++: $(results "$TEST_TMPDIR/cxx_shim.log" final | head -n 1 | sed 's/rank=[0-9]* //'), with and without the shim"
else
    echo "no C++ compiler: shim_trainer_cxx not run"
fi

# ---- Fortran (use mpi): shim_pi_f
if [ "$FTI_MPI_IMPL" != openmpi ]; then
    echo "Fortran: shim_pi_f not run: the drop-in's Fortran MPI_ALLREDUCE recognises Open MPI's Fortran MPI_IN_PLACE (mpi_fortran_in_place) only, not MPICH's (mpi_shim/fortran.c; issue 28)"
elif MPIFORT=$(mpi_fort) && [ -n "$MPIFORT" ]; then
    "$MPIFORT" -Wall -o "$TEST_TMPDIR/shim_pi_f" "$top_srcdir/examples/shim_pi_f.f90" \
        > "$TEST_TMPDIR/fc.log" 2>&1 || { cat "$TEST_TMPDIR/fc.log"; die "mpifort failed on shim_pi_f.f90"; }
    run "$TEST_TMPDIR/f_native.log" "" "$TEST_TMPDIR/shim_pi_f" || { cat "$TEST_TMPDIR/f_native.log"; die "Fortran: failed without the shim"; }
    run "$TEST_TMPDIR/f_shim.log" "$PRELOAD" "$TEST_TMPDIR/shim_pi_f" || { cat "$TEST_TMPDIR/f_shim.log"; die "Fortran: failed under the shim"; }
    same_results "$TEST_TMPDIR/f_native.log" "$TEST_TMPDIR/f_shim.log" pi_f shim_pi_f
    n=$(count_lines "$TEST_TMPDIR/f_shim.log" 'libftmpi_pmpi: 100 MPI_Allreduce calls protected, 0 passed to MPI, 100 made from Fortran')
    [ "$n" -eq $NP ] || { cat "$TEST_TMPDIR/f_shim.log"; die "Fortran: the shim did not see the 100 calls on every rank"; }
    echo "Fortran: $(results "$TEST_TMPDIR/f_shim.log" pi_f | head -n 1 | sed 's/rank=[0-9]* //'), 100 calls from Fortran protected"
else
    echo "no mpifort: shim_pi_f not run"
fi
