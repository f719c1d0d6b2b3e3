#!/bin/sh
# Mode B, 4 groups of 1 rank and the lighthouse rank (mpirun -np 5):
#  1. world rank 1 (g1) dies by SIGKILL in step 20, sent to itself by
#     ft_sgd --die-at-step after its compute, while the others wait for it
#     in the step's allreduce: their FT_Allreduce fails within
#     FTMPI_TIMEOUT_MS, the next quorum leaves g1 out, training goes on
#     with 3 participants;
#  2. later world rank 2 (g2) is killed from outside (SIGKILL at whatever
#     point of its step it is): survived too, 2 participants.
# At the end the survivors g0 and g3 committed every step, report 2
# failures survived and hold bitwise equal states; the lighthouse rank ends
# once they finalized; mpirun exits 0 (4.1 always does with
# --enable-recovery: the output is what is checked; Open MPI 5 runs it with
# --with-ft ulfm, mpirun_prte.sh, and must end with 0 too).
. "$top_srcdir/tests/integration/modeb_lib.sh"
mb_init
need_kill_recovery "mode B after a SIGKILL"
STEPS=120

# the run holds before step 40's allreduce until g2 is killed (mb_pace)
mb_pace 40
mb_start 5 1 "$MB_SGD" --steps $STEPS --sleep-ms 20 --print-every 1 \
    --die-at-step 20 --die-rank 1 --dump "$TEST_TMPDIR/state" --pace-file "$MB_PACE"

# 1. g1 dies in the middle of step 20
wait_until 40 file_has "$(mb_err 1)" 'SIGKILL to myself at step 20' || mb_fail "world rank 1 did not die at step 20"
t_die=$(mb_now_ms)
for w in 0 2 3; do
    mb_wait_line $w '^step 20 failed: .*\(allreduce\)$' 20
done
t_err=$(mb_now_ms)
ms=$((t_err - t_die))
mb_log "the survivors' FT_Allreduce of step 20 failed $ms ms after g1 died (FTMPI_TIMEOUT_MS=$FTMPI_TIMEOUT_MS)"
[ $ms -le $((FTMPI_TIMEOUT_MS + 3000)) ] || mb_fail "the allreduce failed only after $ms ms"
grep -h '^step 20 failed' "$(mb_out 0)" "$(mb_out 2)" "$(mb_out 3)"
for w in 0 2 3; do
    mb_wait_line $w '^step [0-9]+ loss .* participants 3$' 20
done
mb_log "next quorum without g1: $(grep -m 1 'participants 3$' "$(mb_out 0)")"

# 2. g2 killed from outside, later
mb_wait_step 0 30 60
mb_kill 2
mb_pace $((STEPS + 1))
for w in 0 3; do
    mb_wait_line $w '^step [0-9]+ loss .* participants 2$' 20
done
mb_log "next quorum without g2: $(grep -m 1 'participants 2$' "$(mb_out 0)")"

mb_wait_end 60
[ "$MB_RC" -eq 0 ] || mb_fail "mpirun exited with status $MB_RC"
for w in 0 3; do
    file_has "$(mb_out $w)" "^steps committed $STEPS " || mb_fail "world rank $w did not commit $STEPS steps"
    [ "$(mb_failures $w)" -eq 2 ] || mb_fail "world rank $w reports $(mb_failures $w) failures survived, want 2"
    # Open MPI 4.1: a request to the dead rank never completes, it is
    # abandoned at the deadline; under ULFM (Open MPI 5) it fails at once
    if [ "$FTI_LAUNCHER" != prte ]; then
        grep -q 'MPI requests were abandoned at deadlines' "$(mb_err $w)" ||
            mb_fail "world rank $w reports no abandoned MPI request"
    fi
done
mb_check_states "$TEST_TMPDIR/state" 0 3
mb_check_final 0 3
lh=$(mb_err 4)
grep -q 'group g1 gone' "$lh" || mb_fail "the lighthouse rank did not see g1 go"
grep -q 'group g2 gone' "$lh" || mb_fail "the lighthouse rank did not see g2 go"
grep -q 'every group is done (2 of 4 finalized)' "$lh" || mb_fail "the lighthouse rank did not end as expected"
grep -h 'failures survived\|steps committed' "$(mb_out 0)"
grep -h 'abandoned' "$(mb_err 0)" || true
echo "PASS ($TEST_NAME)"
