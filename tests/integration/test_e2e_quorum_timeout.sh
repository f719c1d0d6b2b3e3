#!/bin/sh
# I5: a group is missing.  The lighthouse needs 2 groups, only one runs (1
# rank, then 2 ranks): FT_Quorum and FT_Commit must return FT_ERR_TIMEOUT
# within the configured deadline + 1 s, nothing commits, and the program
# ends cleanly (e2e_timeout.c checks and times every call).
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
prog=$top_builddir/tests/integration/e2e_timeout
[ -x "$prog" ] || die "$prog is not built"
FTMPI_QUORUM_TIMEOUT_MS=1500
FTMPI_TIMEOUT_MS=1000
FTMPI_MIN_REPLICAS=2
export FTMPI_QUORUM_TIMEOUT_MS FTMPI_TIMEOUT_MS FTMPI_MIN_REPLICAS

e2e_lighthouse_start 2
for np in 1 2; do
    out=$TEST_TMPDIR/alone$np.out
    FTMPI_REPLICA_ID=alone$np timeout -s KILL 30 "$MPIRUN" -np $np --bind-to none "$prog" \
        --quorum-timeout-ms $FTMPI_QUORUM_TIMEOUT_MS --timeout-ms $FTMPI_TIMEOUT_MS --steps 2 \
        >"$out" 2>"$TEST_TMPDIR/alone$np.err" </dev/null
    rc=$?
    cat "$out"
    [ $rc -eq 0 ] || e2e_fail "$np rank(s): e2e_timeout exited with $rc"
    grep -q '^PASS' "$out" || e2e_fail "$np rank(s): no PASS line"
done
echo "PASS ($TEST_NAME)"
