#!/bin/sh
# A group started by the launcher of another MPI than the program's (Open
# MPI's mpirun starting an MPICH build, MPICH's hydra an Open MPI build)
# runs every process as a singleton: MPI_COMM_WORLD of size 1 where the
# launcher started 2.  FT_Init must refuse it on every process (ft_sgd
# exits 2) with a message naming the launcher's variable and the MPI this
# build needs, before it connects anywhere; under the build's own launcher
# the same job gets no such message.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
# mode B with groups of 5: a world of 2 fails FT_Init at once with a
# message naming its size (which shows the world size the ranks saw)
unset FTMPI_LIGHTHOUSE
FTMPI_GROUP_SIZE=5
export FTMPI_GROUP_SIZE
case $FTI_MPI_IMPL in
openmpi) other=$(command -v mpiexec.hydra || command -v mpiexec.mpich) var=PMI_SIZE ;;
mpich) other=$(command -v mpirun.openmpi || command -v orterun) var=OMPI_COMM_WORLD_SIZE ;;
*) skip "the build's MPI is $FTI_MPI_IMPL" ;;
esac
[ -n "$other" ] || skip "no launcher of the other MPI installed (Debian: mpich or openmpi-bin)"
out=$TEST_TMPDIR/other.out
timeout -s KILL 60 "$other" -np 2 "$E2E_SGD_BIN" --steps 1 >"$out" 2>&1 </dev/null
rc=$?
n=$(grep -c "launcher belongs to another MPI" "$out")
if [ "$n" -ne 2 ] || ! grep -q "$var=2" "$out"; then
    cat "$out" >&2
    die "$other -np 2 (exit $rc): $n of 2 processes refused with a message naming $var=2"
fi
[ $rc -ne 0 ] || die "$other -np 2 exited 0"
echo "ok: $(basename "$other") -np 2 of a $FTI_MPI_IMPL build refused (exit $rc):"
grep -m 1 "launcher belongs to another MPI" "$out"
# the build's own launcher: a world of 2, no launcher message (FT_Init then
# fails on the group size, which does not fit)
out=$TEST_TMPDIR/own.out
timeout -s KILL 60 "$MPIRUN" -np 2 --bind-to none "$E2E_SGD_BIN" --steps 1 >"$out" 2>&1 </dev/null
! grep -q "launcher belongs to another MPI" "$out" || { cat "$out" >&2; die "the build's own launcher was refused"; }
grep -q "does not fit a world of 2 ranks" "$out" || { cat "$out" >&2; die "the own launcher's job did not run in a world of 2"; }
echo "ok: $(basename "${FTI_REAL_MPIRUN:-$MPIRUN}") -np 2 not refused"
echo "PASS ($TEST_NAME)"
