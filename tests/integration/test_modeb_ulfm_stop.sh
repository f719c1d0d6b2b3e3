#!/bin/sh
# Mode B on ULFM (Open MPI 5, mpirun_prte.sh: mpirun --with-ft ulfm), a rank
# SIGSTOPped at step 20 or later; the other groups finish every step with
# equal states (every rank), the stopped rank is ended and mpirun ends with
# 0.  Two jobs:
#  1. 4 groups of 1 rank and the lighthouse rank (mpirun -np 5), world rank
#     1 (g1) stopped: the lighthouse rank finds g1 silent (gone) and ends it;
#  2. 4 groups of 2 ranks and the lighthouse rank (mpirun -np 9), world rank
#     3 (group rank 1 of g1) stopped: g1's other rank leaves and ends it.
#
# A stopped rank is not dead to ULFM (its failure detector is off by
# default): every live rank's MPI_Finalize, which shrinks the world first
# (an agreement of the ranks not known dead), waited for it for good.  The
# library's own detector decides (mode/mode_b.h): in 2, world rank 2's
# group operation with it misses its deadline, the group is lost, and at
# FT_Finalize world rank 2 waits for its partners' goodbye on the group's
# own communicator; in 1, the lighthouse rank sees no heartbeat of g1 for
# twice FTMPI_LH_HEARTBEAT_TIMEOUT_MS.  The rank is then ended through the
# launcher (PMIx job control, PMIX_JOB_CTRL_KILL) and reported failed to
# ULFM, after which every MPI_Finalize completes.  Before: the job never
# ended.
# Elsewhere (Open MPI 4.1's --enable-recovery, MPICH): skipped, mpirun waits
# for a stopped rank there (doc/USER_GUIDE.md).
. "$top_srcdir/tests/integration/modeb_lib.sh"
mb_init
need_kill_recovery "mode B after a SIGSTOP"
[ "$FTI_LAUNCHER" = prte ] ||
    skip "mode B's stopped rank is ended through ULFM's launcher (Open MPI 5's mpirun --with-ft ulfm); this launcher is $FTI_LAUNCHER's"
STEPS=60

# ---- 1. groups of one rank: the lighthouse rank ends the silent group
mb_pace 30
mb_start 5 1 "$MB_SGD" --steps $STEPS --sleep-ms 10 --print-every 1 \
    --dump "$TEST_TMPDIR/state1" --pace-file "$MB_PACE"
mb_wait_step 1 20 90
p1=$(mb_rank_pid 1)
[ -n "$p1" ] || mb_fail "world rank 1 has no process"
kill -STOP "$p1"
mb_log "SIGSTOP to world rank 1 (pid $p1) at step $(mb_step 1)"
mb_pace $((STEPS + 1))
mb_wait_end 120
[ "$MB_RC" -eq 0 ] || mb_fail "mpirun exited with status $MB_RC"
kill -0 "$p1" 2>/dev/null && mb_fail "the stopped world rank 1 (pid $p1) is still there"
for w in 0 2 3; do
    file_has "$(mb_out $w)" "^steps committed $STEPS " || mb_fail "world rank $w did not commit $STEPS steps"
done
mb_check_states "$TEST_TMPDIR/state1" 0 2 3
mb_check_final 0 2 3
grep -q 'world rank 1 (group g1) sent the lighthouse no heartbeat' "$(mb_err 4)" ||
    mb_fail "the lighthouse rank did not name the stopped world rank 1"
grep -h 'no heartbeat for\|ended through' "$(mb_err 4)"
rm -rf "$TEST_TMPDIR/out"

# ---- 2. groups of two: the stopped rank's partner ends it
# the run holds before step 30's allreduce until world rank 3 is stopped
mb_pace 30
mb_start 9 2 "$MB_SGD" --steps $STEPS --sleep-ms 10 --print-every 1 \
    --group-timeout-ms "$FTMPI_TIMEOUT_MS" --dump "$TEST_TMPDIR/state" --pace-file "$MB_PACE"
mb_wait_step 2 20 90
p3=$(mb_rank_pid 3)
[ -n "$p3" ] || mb_fail "world rank 3 has no process"
kill -STOP "$p3"
mb_log "SIGSTOP to world rank 3 (pid $p3), its group at step $(mb_step 2)"
mb_pace $((STEPS + 1))
wait_until 60 file_has "$(mb_out 2)" '^group lost at step' ||
    mb_fail "world rank 2 did not leave"
mb_log "world rank 2: $(grep -m 1 '^group lost' "$(mb_out 2)")"
mb_wait_end 120
[ "$MB_RC" -eq 0 ] || mb_fail "mpirun exited with status $MB_RC"
kill -0 "$p3" 2>/dev/null && mb_fail "the stopped world rank 3 (pid $p3) is still there"
left=$(pgrep -s "$MB_PID" | tr '\n' ' ')
[ -z "$left" ] || mb_fail "processes left in mpirun's session: $left"
for w in 0 4 6; do
    file_has "$(mb_out $w)" "^steps committed $STEPS " || mb_fail "world rank $w did not commit $STEPS steps"
done
mb_check_states "$TEST_TMPDIR/state" 0 4 6
mb_check_final 0 1 4 5 6 7
grep -q 'every group is done' "$(mb_err 8)" || mb_fail "the lighthouse rank did not end"
grep -q 'world rank 3 said no goodbye' "$(mb_err 2)" ||
    mb_fail "world rank 2 did not name its stopped partner"
grep -h 'said no goodbye\|job control' "$(mb_err 2)"
echo "PASS ($TEST_NAME)"
