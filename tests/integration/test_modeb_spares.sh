#!/bin/sh
# Mode B with a spare group: 4 groups of 1 rank, FTMPI_WORLD_SIZE_MODE=
# fixed_with_spares, FTMPI_MIN_REPLICAS=2: g0 and g1 participate, g2 and g3
# are spares (they take part in every quorum and allreduce, contribute
# nothing, stay in sync).  g1 dies by SIGKILL in step 20 (--die-at-step):
# the participating size stays 2, g2 takes g1's place, g3 stays a spare;
# every survivor commits every step and holds the same state.
. "$top_srcdir/tests/integration/modeb_lib.sh"
mb_init
need_kill_recovery "mode B after a SIGKILL"
STEPS=80
FTMPI_WORLD_SIZE_MODE=fixed_with_spares
FTMPI_MIN_REPLICAS=2
export FTMPI_WORLD_SIZE_MODE FTMPI_MIN_REPLICAS

mb_start 5 1 "$MB_SGD" --steps $STEPS --sleep-ms 20 --print-every 1 \
    --die-at-step 20 --die-rank 1 --dump "$TEST_TMPDIR/state"
mb_wait_end 60
[ "$MB_RC" -eq 0 ] || mb_fail "mpirun exited with status $MB_RC"
file_has "$(mb_err 1)" 'SIGKILL to myself' || mb_fail "world rank 1 did not die"
for w in 0 2 3; do
    o=$(mb_out $w)
    file_has "$o" "^steps committed $STEPS " || mb_fail "world rank $w did not commit $STEPS steps"
    [ "$(mb_failures $w)" -eq 1 ] || mb_fail "world rank $w reports $(mb_failures $w) failures survived"
    file_has "$o" '^step 20 failed' || mb_fail "world rank $w: step 20 did not fail"
    # the participating size is 2 before and after the failure
    n=$(grep -c '^step [0-9]* loss' "$o")
    n2=$(grep -c '^step [0-9]* loss .* participants 2$' "$o")
    [ "$n" -eq "$STEPS" ] && [ "$n2" -eq "$n" ] ||
        mb_fail "world rank $w: $n2 of $n step lines with 2 participants, want $STEPS of $STEPS"
done
# who participated (the library's quorum lines): g2 was a spare, then took
# g1's place; g3 stayed a spare
e2=$(mb_err 2)
e3=$(mb_err 3)
grep -q 'quorum [0-9]*: 4 groups (2 participate), replica rank 2 (spare)' "$e2" ||
    mb_fail "g2 was not a spare before the failure"
grep -q 'quorum [0-9]*: 3 groups (2 participate), replica rank 1, ' "$e2" ||
    mb_fail "g2 did not take g1's place"
grep -q 'quorum [0-9]*: 3 groups (2 participate), replica rank 2 (spare)' "$e3" ||
    mb_fail "g3 is not a spare after the failure"
grep -h 'groups (2 participate)' "$e2" | sed 's/^\[[^]]*\] //' | uniq
mb_check_states "$TEST_TMPDIR/state" 0 2 3
mb_check_final 0 2 3
echo "PASS ($TEST_NAME)"
