#!/bin/sh
# The ucx backend (issue 37 item 4) through a real network partition:
# test_partition.sh (three network namespaces; the minority's link cut both
# ways, then blackholed one way; the majority keeps committing, the
# minority commits nothing while cut, rejoins and heals; every group ends
# with the majority's bytes) unchanged but for FTMPI_BACKEND=ucx, so that
# the slices are UCX endpoints across the namespaces' veth links.  Then
# every group must have run on ucx.  Skips (77) where test_partition.sh
# does (not root, no namespaces) and in a build without UCX.
. "$top_srcdir/tests/integration/common.sh"
grep -q '^#define FTMPI_HAVE_UCX 1' "$top_builddir/ftmpi_config.h" 2>/dev/null ||
    skip "built without UCX (configure found no pkg-config ucx, or --without-ucx)"
t=test_partition
# its files inside ours (kept: ours go at exit), to check the backend
FTMPI_BACKEND=ucx TMPDIR=$TEST_TMPDIR KEEP_TMPDIR=1 timeout 600 \
    sh "$top_srcdir/tests/integration/$t.sh" >"$TEST_TMPDIR/$t.log" 2>&1
st=$?
[ "$st" -eq 77 ] && skip "$t skipped: $(tail -n 1 "$TEST_TMPDIR/$t.log")"
if [ "$st" -ne 0 ]; then
    tail -n 40 "$TEST_TMPDIR/$t.log"
    die "$t on ucx: exit status $st"
fi
for g in g0 g1 g2; do
    grep -q 'FT_Init: .*, backend ucx$' "$TEST_TMPDIR"/ftmpi-$t.*/$g.err ||
        die "$t: $g did not run on ucx"
done
grep -E 'connection to replica|auto|ucx:' "$TEST_TMPDIR"/ftmpi-$t.*/g[012].err | sed 's/.*\] //' | sort | uniq -c | head -n 5
echo "$t on ucx: $(tail -n 1 "$TEST_TMPDIR/$t.log")"
echo "PASS ($TEST_NAME)"
