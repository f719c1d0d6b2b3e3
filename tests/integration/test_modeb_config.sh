#!/bin/sh
# Mode B refuses what cannot work, on every rank, with a clear message
# (FT_Init fails with FT_ERR_CONFIG; ft_sgd exits 2):
#  - a world of 4 ranks with FTMPI_GROUP_SIZE=2 (4 - 1 is not a multiple of 2);
#  - a world of 1 rank (no room for a group and the lighthouse rank);
#  - FTMPI_GROUP_SIZE differing between ranks;
#  - FTMPI_BACKEND=mpi in mode A (FTMPI_LIGHTHOUSE set).
# Plain mpirun (no --enable-recovery): its exit status is the ranks'.
. "$top_srcdir/tests/integration/modeb_lib.sh"
mb_init

# refused NAME WANT_PATTERN MPIRUN_ARGS...
refused() {
    name=$1
    want=$2
    shift 2
    out=$TEST_TMPDIR/refused.out
    timeout -s KILL 30 "$MPIRUN" --bind-to none "$@" >"$out" 2>&1 </dev/null
    rc=$?
    [ $rc -eq 2 ] || { cat "$out" >&2; die "$name: mpirun exit status $rc, want 2 (FT_Init failed)"; }
    grep -q "FT_Init failed: bad configuration value$" "$out" || { cat "$out" >&2; die "$name: FT_Init did not fail with FT_ERR_CONFIG"; }
    grep -Eq -- "$want" "$out" || { cat "$out" >&2; die "$name: no message matching '$want'"; }
    echo "ok: $name: $(grep -E -- "$want" "$out" | head -n 1 | sed 's/^\[[^]]*\] //')"
}

refused "4 ranks, groups of 2" 'FTMPI_GROUP_SIZE=2 does not fit a world of 4 ranks' \
    -np 4 -x FTMPI_GROUP_SIZE=2 "$MB_SGD" --steps 1
refused "1 rank, groups of 1" 'FTMPI_GROUP_SIZE=1 does not fit a world of 1 rank:' \
    -np 1 -x FTMPI_GROUP_SIZE=1 "$MB_SGD" --steps 1
refused "group sizes differ" 'must be the same on every rank' \
    -np 2 -x FTMPI_GROUP_SIZE=1 "$MB_SGD" --steps 1 : -np 1 -x FTMPI_GROUP_SIZE=2 "$MB_SGD" --steps 1
refused "mpi backend in mode A" 'FTMPI_BACKEND=mpi needs mode B' \
    -np 1 -x FTMPI_BACKEND=mpi -x FTMPI_LIGHTHOUSE=127.0.0.1:1 "$MB_SGD" --steps 1
echo "PASS ($TEST_NAME)"
