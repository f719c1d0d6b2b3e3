#!/bin/sh
# The ucx backend (issue 37) through two of the tcp backend's own
# scenarios, unchanged but for FTMPI_BACKEND=ucx: test_e2e_sigstop.sh (a
# frozen group, its endpoints open: the survivors leave the allreduce by
# the deadline or UCX's keepalive and go on; after SIGCONT it heals and
# rejoins) and test_e2e_kill_restart.sh (a group SIGKILLed, restarted by
# its agent, healed, back in the ucx slices).  Each runs as its own
# process; this test fails with the first that fails.  Skips (77) in a
# build without UCX.
. "$top_srcdir/tests/integration/common.sh"
grep -q '^#define FTMPI_HAVE_UCX 1' "$top_builddir/ftmpi_config.h" 2>/dev/null ||
    skip "built without UCX (configure found no pkg-config ucx, or --without-ucx)"
command -v "${MPIRUN:-mpirun}" >/dev/null 2>&1 || skip "no mpirun"
for t in test_e2e_sigstop test_e2e_kill_restart; do
    # its files inside ours (kept: ours go at exit), to check the backend
    FTMPI_BACKEND=ucx TMPDIR=$TEST_TMPDIR KEEP_TMPDIR=1 timeout 300 \
        sh "$top_srcdir/tests/integration/$t.sh" >"$TEST_TMPDIR/$t.log" 2>&1
    st=$?
    if [ "$st" -ne 0 ]; then
        tail -n 40 "$TEST_TMPDIR/$t.log"
        die "$t on ucx: exit status $st"
    fi
    grep -q 'FT_Init: .*, backend ucx$' "$TEST_TMPDIR"/ftmpi-$t.*/g0.err ||
        die "$t: g0 did not run on ucx"
    echo "$t on ucx: $(tail -n 1 "$TEST_TMPDIR/$t.log")"
done
echo "PASS ($TEST_NAME)"
