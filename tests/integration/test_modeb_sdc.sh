#!/bin/sh
# Issue 26 item 1 in mode B (one mpirun --enable-recovery, the lighthouse on
# the last rank, full member lists instead of compact replies: each rank
# computes its results from the quorum's members and their SDC verdicts).
# 3 groups of 2 ranks; world rank 3 (group rank 1 of the second group)
# flips a bit of its registered state after step 12 (ft_sgd --flip-at-step,
# a test hook); the check of step 15 (FTMPI_SDC_EVERY=5) names it, its
# group heals from the others, and every rank ends with the same state.
. "$top_srcdir/tests/integration/modeb_lib.sh"
mb_init
need_test_hooks # ft_sgd --flip-at-step
SGD=$top_builddir/examples/ft_sgd
FTMPI_SDC_EVERY=5
export FTMPI_SDC_EVERY
mb_start 7 2 "$SGD" --steps 30 --sleep-ms 5 --print-every 5 --flip-at-step 12 --flip-rank 3
mb_wait_end 180
[ "$MB_RC" -eq 0 ] || mb_fail "mpirun exited with status $MB_RC"
file_has "$(mb_err 3)" "test hook: group .* rank 1 flipped bit 22 of weights\[1\] after step 12" ||
    mb_fail "world rank 3 did not flip its bit"
mb_check_final 0 1 2 3 4 5
line=$(grep 'SDC: group ' "$(mb_err 6)" | head -n 1)
[ -n "$line" ] || mb_fail "the lighthouse rank reported nothing"
mb_log "lighthouse: $line"
echo "$line" | grep -q "disagrees with the majority at step 15: group rank 1, buffer 'weights'" ||
    mb_fail "the report does not name step 15, group rank 1 and buffer 'weights': $line"
[ "$(grep -c 'SDC: group ' "$(mb_err 6)")" -eq 1 ] ||
    mb_fail "more than one group reported: $(grep 'SDC: group ' "$(mb_err 6)")"
for w in 2 3; do
    file_has "$(mb_err $w)" "healed step 15 from" || mb_fail "world rank $w did not heal step 15"
done
echo "PASS ($TEST_NAME)"
