#!/bin/sh
# The drop-in's start (issue 39 item 2): it hands its mode and the FTMPI_*
# table it loaded to FT_Init, so every rank loads the settings once
# (FT_Init's debug line counts the loads: 2 when FT_Init loaded them a
# second time), and FT_Init runs the drop-in's mode; a backend name that is
# no backend (FTMPI_BACKEND=tpc, a typo) ends the job naming the value (it
# ran the mpi backend silently).
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
PRELOAD=$(san_preload "$SHIM")
lib_test_env
PI="$top_builddir/examples/shim_pi"
NP=2

run() { # LOG: shim_pi on NP ranks under the drop-in
    timeout 300 "$MPIRUN" --enable-recovery -np $NP -x LD_PRELOAD="$PRELOAD" \
        -x SHIM_PI_BATCHES=5 -x SHIM_PI_SAMPLES=1000 "$PI" > "$1" 2>&1
}

FTMPI_LOG_LEVEL=debug run "$TEST_TMPDIR/ok.log" || { cat "$TEST_TMPDIR/ok.log"; die "shim_pi failed under the drop-in"; }
n=$(count_lines "$TEST_TMPDIR/ok.log" 'FT_Init: mode drop-in; the FTMPI_\* table was loaded 1 time\(s\) in this process')
[ "$n" -eq $NP ] || { grep 'table was loaded' "$TEST_TMPDIR/ok.log"; die "expected $NP ranks in the drop-in's mode with one load of the settings each, got $n"; }
echo "$n ranks: the drop-in's mode, the settings loaded once"

# (mpirun --enable-recovery exits 0 after MPI_Abort: the output tells)
FTMPI_BACKEND=tpc run "$TEST_TMPDIR/typo.log"
! file_has "$TEST_TMPDIR/typo.log" '^pi rank=' || { cat "$TEST_TMPDIR/typo.log"; die "FTMPI_BACKEND=tpc: the job ran"; }
file_has "$TEST_TMPDIR/typo.log" 'FTMPI_BACKEND=tpc: no such backend' ||
    { cat "$TEST_TMPDIR/typo.log"; die "FTMPI_BACKEND=tpc: no error naming the value"; }
echo "FTMPI_BACKEND=tpc: refused, naming the value"
