#!/bin/sh
# Mode B, 3 groups of 2 ranks and the lighthouse rank (mpirun -np 7):
#  1. world rank 3 (group rank 1 of g1) is killed with SIGKILL from
#     outside at a random point of a step.  Its partner, world rank 2
#     (g1's manager), notices within its deadline (the in-group sum, the
#     commit vote or the quorum gather: FTMPI_TIMEOUT_MS and
#     --group-timeout-ms), says "group lost" and leaves (FT_Finalize,
#     MPI_Finalize); g0 and g2 go on with 2 participants and finish with
#     equal states (every rank); the lighthouse rank hears g1 leave;
#     mpirun exits 0 with every rank gone.
#  2. the same where the library itself must notice: world rank 4 (g2's
#     manager) dies after the step's FT_Allreduce (ft_sgd --die-where
#     commit); its partner's FT_Commit returns FT_ERR_GROUP_LOST within
#     FTMPI_TIMEOUT_MS and the partner (not a manager) tells the lighthouse
#     that g2 leaves.
. "$top_srcdir/tests/integration/modeb_lib.sh"
mb_init
need_kill_recovery "mode B after a SIGKILL"
STEPS=100

# the run holds before step 30's allreduce until world rank 3 is killed
mb_pace 30
mb_start 7 2 "$MB_SGD" --steps $STEPS --sleep-ms 20 --print-every 1 \
    --group-timeout-ms "$FTMPI_TIMEOUT_MS" --dump "$TEST_TMPDIR/state" --pace-file "$MB_PACE"
mb_wait_step 2 20 40
mb_kill 3
mb_pace $((STEPS + 1))
wait_until 20 file_has "$(mb_out 2)" '^group lost' || mb_fail "world rank 2 did not leave"
ms=$(($(mb_now_ms) - MB_KILL_MS))
mb_log "world rank 2: $(grep -m 1 '^group lost' "$(mb_out 2)") -- $ms ms after the kill"
[ $ms -le $((FTMPI_TIMEOUT_MS + 3000)) ] || mb_fail "the partner left only after $ms ms"
wait_until 10 file_has "$(mb_err 2)" 'leaves: the group lost a rank' || mb_fail "world rank 2 did not say it leaves"

for w in 0 4; do
    mb_wait_line $w '^step [0-9]+ loss .* participants 2$' 20
done
mb_log "next quorum without g1: $(grep -m 1 'participants 2$' "$(mb_out 0)")"

mb_wait_end 60
[ "$MB_RC" -eq 0 ] || mb_fail "mpirun exited with status $MB_RC"
# every rank is gone: mpirun's children too
left=$(pgrep -s "$MB_PID" | tr '\n' ' ')
[ -z "$left" ] || mb_fail "processes left in mpirun's session: $left"
for w in 0 4; do
    file_has "$(mb_out $w)" "^steps committed $STEPS " || mb_fail "world rank $w did not commit $STEPS steps"
    [ "$(mb_failures $w)" -ge 1 ] || mb_fail "world rank $w reports no failure survived"
done
mb_check_states "$TEST_TMPDIR/state" 0 4
# every rank of g0 and g2 (world ranks 0 1 4 5), not only the group rank 0s
mb_check_final 0 1 4 5
lh=$(mb_err 6)
grep -Eq 'group g1 (finalized|gone)' "$lh" || mb_fail "the lighthouse rank did not see g1 leave"
grep -h 'group g1' "$lh"
grep -q 'every group is done' "$lh" || mb_fail "the lighthouse rank did not end"

# 2. the manager of g2 dies while its group votes.  The lighthouse rank
# gives up on a silent group after 2 x FTMPI_LH_HEARTBEAT_TIMEOUT_MS; the
# partner needs up to FTMPI_TIMEOUT_MS to notice, so the lighthouse must
# wait longer than that, or (on a loaded machine) it may end before the
# partner's notice arrives and the check below would test the race.
FTMPI_LH_HEARTBEAT_TIMEOUT_MS=$((FTMPI_TIMEOUT_MS + 500))
export FTMPI_LH_HEARTBEAT_TIMEOUT_MS
rm -rf "$TEST_TMPDIR/out"
mb_start 7 2 "$MB_SGD" --steps 60 --sleep-ms 10 --print-every 1 \
    --group-timeout-ms "$FTMPI_TIMEOUT_MS" --die-at-step 15 --die-rank 4 --die-where commit
wait_until 40 file_has "$(mb_err 4)" 'SIGKILL to myself at step 15 \(commit\)' ||
    mb_fail "world rank 4 did not die at step 15"
t_die=$(mb_now_ms)
wait_until 20 file_has "$(mb_out 5)" '^group lost at step 15: .*\(commit\)' ||
    mb_fail "world rank 5 did not get FT_ERR_GROUP_LOST from FT_Commit"
ms=$(($(mb_now_ms) - t_die))
mb_log "world rank 5: $(grep -m 1 '^group lost' "$(mb_out 5)") -- $ms ms after its manager died"
[ $ms -le $((FTMPI_TIMEOUT_MS + 3000)) ] || mb_fail "the partner left only after $ms ms"
mb_wait_end 60
[ "$MB_RC" -eq 0 ] || mb_fail "mpirun exited with status $MB_RC"
for w in 0 2; do
    file_has "$(mb_out $w)" "^steps committed 60 " || mb_fail "run 2: world rank $w did not commit 60 steps"
done
# the lighthouse learns that g2 is gone either from the partner (finalize)
# or, first, from its manager's connection closing (the process died)
grep -q 'group g2 finalized' "$(mb_err 6)" ||
    grep -q "g2: its manager's connections closed" "$(mb_err 6)" ||
    mb_fail "run 2: the lighthouse heard neither from g2's partner nor of its manager's death"
grep -q 'this group lost a rank' "$(mb_err 5)" || mb_fail "run 2: the library of world rank 5 did not notice"
# g0 and g1 (world ranks 0-3) end equal; g2's ranks print no final line
mb_check_final 0 1 2 3
echo "PASS ($TEST_NAME)"
