#!/bin/sh
# Issue 26 item 1: sharded state is compared per group rank.  Three groups
# of 2 ranks register each rank's own block of the parameters (ft_sgd
# --shard 1: FT_State_register_shard, one buffer 'weights' per rank, with
# different contents on the two ranks); group rank 1 of g2 flips a bit of
# its block (parameter 50 of 65) after step 8 (test hook).  The check of
# step 10 (FTMPI_SDC_EVERY=5) must name g2's group rank 1 (not rank 0,
# whose block is intact), g2 heals from the others, and every rank of every
# group ends with the same parameters.  The groups start from the same
# parameters (--init-seed): ft_sgd gathers the blocks again only after a
# heal that moved the step, which the initial sync at step 0 does not.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
need_test_hooks # ft_sgd --flip-at-step
T=$TEST_TMPDIR
FTMPI_SDC_EVERY=5
export FTMPI_SDC_EVERY

e2e_lighthouse_start 3
for g in g0 g1 g2; do
    _flip=
    [ $g = g2 ] && _flip="--flip-at-step 8 --flip-rank 1 --flip-index 50"
    # shellcheck disable=SC2086
    e2e_group_start $g 2 --steps 25 --sleep-ms 5 --print-every 5 --shard 1 --init-seed 7 $_flip
done
e2e_wait_agents 180 g0 g1 g2
file_has "$T/g2.err" "test hook: group g2 rank 1 flipped bit 22 of weights\[50\] after step 8" ||
    e2e_fail "g2's rank 1 did not flip its bit"
e2e_check_states g0 g1 g2
e2e_check_final 2 g0 g1 g2
L=$T/lighthouse.log
line=$(grep 'SDC: group g2 ' "$L" | head -n 1)
[ -n "$line" ] || e2e_fail "the lighthouse did not report g2"
e2e_log "lighthouse: $line"
echo "$line" | grep -q "at step 10: group rank 1, buffer 'weights'" ||
    e2e_fail "the report does not name step 10, group rank 1 and buffer 'weights': $line"
if grep -q 'SDC: group g[01] ' "$L"; then
    e2e_fail "the lighthouse reported a group whose state was right"
fi
file_has "$T/g2.err" "healed step 10 from g[01]" || e2e_fail "g2 did not heal step 10 from g0 or g1"
echo "PASS ($TEST_NAME)"
