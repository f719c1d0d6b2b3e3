#!/bin/sh
# The group's gather, broadcast and commit decision on 3 real MPI ranks, with ranks that
# are late for an operation (tests/integration/test_group.c).
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
prog=$top_builddir/tests/integration/test_group
[ -x "$prog" ] || die "$prog is not built"
timeout -k 5 60 "$MPIRUN" -np 3 "$prog" >"$TEST_TMPDIR/out" 2>&1
rc=$?
cat "$TEST_TMPDIR/out"
[ $rc -eq 0 ] || die "test_group exited with $rc"
grep -q '^PASS' "$TEST_TMPDIR/out" || die "no PASS line"
echo "PASS ($TEST_NAME)"
