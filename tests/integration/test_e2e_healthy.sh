#!/bin/sh
# I1: a healthy run of 3 replica groups (1 rank each).  Each group starts
# from different initial parameters (--init-seed defaults to a hash of the
# replica id), so equal states at the end also show that the initial sync
# (FTMPI_INIT_SYNC=1) copied the primary's parameters at step 0.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init

e2e_lighthouse_start 3
for g in g0 g1 g2; do
    e2e_group_start $g 1 --steps 60 --sleep-ms 5 --print-every 10
done
e2e_wait_agents 60 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_loss g0 g1 g2
e2e_check_final 1 g0 g1 g2
for g in g0 g1 g2; do
    [ "$(e2e_starts $g)" -eq 1 ] || e2e_fail "group $g was restarted"
    grep -q '^steps committed 60 ' "$TEST_TMPDIR/$g.out" || e2e_fail "group $g did not commit 60 steps"
    grep -Eq '^step 60 loss .* participants 3$' "$TEST_TMPDIR/$g.out" ||
        e2e_fail "group $g: the last step did not have 3 participants"
done
echo "PASS ($TEST_NAME)"
