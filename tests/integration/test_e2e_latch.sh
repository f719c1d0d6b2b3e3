#!/bin/sh
# Issue 23 item 5: any error of a call made inside a step is latched, so
# FT_Commit never commits a step whose reduction never ran
# (tests/integration/e2e_latch.c, one group of 1 rank under the lighthouse).
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
E2E_PROG=$top_builddir/tests/integration/e2e_latch
[ -x "$E2E_PROG" ] || die "$E2E_PROG is not built"
E2E_RUN_FLAGS="--max-restarts 0"
e2e_lighthouse_start 1
e2e_group_start g0 1
e2e_wait_agents 120 g0
e2e_log "$(cat "$TEST_TMPDIR/g0.out")"
grep -q '^PASS' "$TEST_TMPDIR/g0.out" || e2e_fail "a step with a failed call committed (or the run failed)"
echo "PASS ($TEST_NAME)"
