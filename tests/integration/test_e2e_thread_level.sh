#!/bin/sh
# FT_Init refuses to run from a thread other than MPI's main thread when MPI
# granted less than MPI_THREAD_SERIALIZED, with a message that says what to
# do; with MPI_THREAD_SERIALIZED the thread check passes (issue 10, item 9).
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
BIN=$top_builddir/tests/integration/e2e_thread_level
[ -x "$BIN" ] || skip "$BIN not built"
# nothing listens here: FT_Init gets no further than its own checks
FTMPI_LIGHTHOUSE=127.0.0.1:1 FTMPI_CONNECT_TIMEOUT_MS=500 FTMPI_QUORUM_TIMEOUT_MS=1000
export FTMPI_LIGHTHOUSE FTMPI_CONNECT_TIMEOUT_MS FTMPI_QUORUM_TIMEOUT_MS

run_level() {
    out=$TEST_TMPDIR/$1.out
    timeout -s KILL 30 "$MPIRUN" -np 1 --bind-to none "$BIN" "$1" >"$out" 2>&1 </dev/null
    rc=$?
    [ $rc -eq 77 ] && skip "MPI does not grant $1 here"
    [ $rc -eq 0 ] || { cat "$out" >&2; die "$1: exit status $rc"; }
}

run_level funneled
grep -q "^rc=-5 " "$out" || { cat "$out" >&2; die "funneled: FT_Init from a second thread did not fail with FT_ERR_CONFIG (-5)"; }
grep -q "MPI_THREAD_SERIALIZED" "$out" || { cat "$out" >&2; die "funneled: the message does not say what level is needed"; }
echo "ok: funneled, second thread: $(grep '^rc=' "$out")"

run_level serialized
grep -q "^rc=" "$out" || { cat "$out" >&2; die "serialized: no result line"; }
grep -q "^rc=-5 " "$out" && { cat "$out" >&2; die "serialized: FT_Init refused the thread level"; }
grep -q "thread other than" "$out" && { cat "$out" >&2; die "serialized: thread-level message printed"; }
echo "ok: serialized, second thread passes the check: $(grep '^rc=' "$out")"
echo "PASS ($TEST_NAME)"
