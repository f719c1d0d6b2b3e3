#!/bin/sh
# A public MPI benchmark, unmodified, with its own result checks, under the
# drop-in (issue 13, "Must hold"): HPC Challenge (Debian's `hpcc` package:
# HPL with its residual check, PTRANS, MPIRandomAccess with its error
# count, MPIFFT, STREAM, DGEMM), small sizes (HPL N=400), 4 ranks, with
# LD_PRELOAD=libftmpi_pmpi.so.  Passes when hpcc reports Success=1, HPL's
# residual checks all passed, MPIRandomAccess found 0 errors, and every
# rank says the shim protected MPI_Allreduce calls.  Without hpcc the test
# installs it (apt-get, as root) and is skipped (77) when it cannot.
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
lib_test_env
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
PRELOAD=$(san_preload "$SHIM")
if ! command -v hpcc > /dev/null 2>&1; then
    [ "$(id -u)" -eq 0 ] && command -v apt-get > /dev/null 2>&1 ||
        skip "no hpcc (apt-get install hpcc)"
    timeout 300 apt-get install -y --no-install-recommends hpcc > "$TEST_TMPDIR/apt.log" 2>&1 ||
        skip "no hpcc, and apt-get install hpcc failed (offline?)"
fi
INF=/usr/share/doc/hpcc/examples/_hpccinf.txt
[ -f "$INF" ] || skip "no $INF (hpcc's example input)"
# the shim wraps the MPI library it was built against: hpcc must use it
mpi_lib=$(ldd "$SHIM" | sed -n 's/.*\(libmpi\(ch\)\{0,1\}\.so[.0-9]*\) =>.*/\1/p' | head -n 1)
ldd "$(command -v hpcc)" | grep -q "$mpi_lib =>" || skip "hpcc is not linked with $mpi_lib"

cd "$TEST_TMPDIR" || die "no $TEST_TMPDIR"
# lines 6 and 8 of the input: HPL's N and NB (small: seconds, not minutes)
sed -e '6s/.*/400          Ns/' -e '8s/.*/40           NBs/' "$INF" > hpccinf.txt
timeout 300 "$MPIRUN" --enable-recovery -np 4 -x LD_PRELOAD="$PRELOAD" hpcc > run.log 2>&1 ||
    { tail -n 30 run.log; die "hpcc failed under the shim"; }
out=hpccoutf.txt
file_has "$out" '^Success=1$' || { tail -n 40 "$out"; die "hpcc: no Success=1"; }
file_has "$out" '^ *0 tests completed and failed residual checks' || die "hpcc: HPL failed its residual check"
! file_has "$out" '[1-9][0-9]* tests completed and failed residual checks' || die "hpcc: HPL failed its residual check"
file_has "$out" '^MPIRandomAccess_Errors=0$' || die "hpcc: MPIRandomAccess found errors"
n=$(count_lines run.log 'libftmpi_pmpi: [1-9][0-9]* MPI_Allreduce calls protected')
[ "$n" -eq 4 ] || { cat run.log; die "hpcc: $n of 4 ranks report protected MPI_Allreduce calls"; }
echo "hpcc under the shim: Success=1, HPL residuals passed, MPIRandomAccess 0 errors;" \
    "$(grep -m 1 'calls protected' run.log | sed 's/.*libftmpi_pmpi: //')"
