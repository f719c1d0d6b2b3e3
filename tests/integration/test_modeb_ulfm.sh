#!/bin/sh
# Mode B, 4 groups of 2 ranks and the lighthouse rank (mpirun -np 9), world
# rank 3 (group rank 1 of g1) SIGKILLs itself in step 20's commit (ft_sgd
# --die-where commit): the 3 other groups finish every step with equal
# states (every rank), g1's other rank leaves, and mpirun ends with 0.
# Under Open MPI 5 (mpirun_prte.sh: mpirun --with-ft ulfm --mca pml ob1)
# this is mode B on ULFM: world rank 0 logs that path, world rank 2 learns
# the death from MPI itself (the commit's MPIX_Comm_iagree fails with
# MPIX_ERR_PROC_FAILED, not at a deadline) and revokes the group's
# communicators; before, the job never ended (every survivor waited in
# MPI_Finalize) and world rank 2 died on MPI_ERRORS_ARE_FATAL.  Elsewhere
# (Open MPI 4.1, --enable-recovery) the same run on the library's own
# deadlines.  Every rank ignores SIGPIPE (world rank 0 says so): across
# nodes a survivor's tcp BTL wrote to the dead rank's socket and SIGPIPE
# ended it without a word (tests/nodes/test_nodes.sh, scenario 4).
. "$top_srcdir/tests/integration/modeb_lib.sh"
mb_init
need_kill_recovery "mode B after a SIGKILL"
STEPS=80

mb_start 9 2 "$MB_SGD" --steps $STEPS --sleep-ms 10 --print-every 1 \
    --group-timeout-ms "$FTMPI_TIMEOUT_MS" --dump "$TEST_TMPDIR/state" \
    --die-at-step 20 --die-rank 3 --die-where commit
wait_until 60 file_has "$(mb_err 3)" 'SIGKILL to myself at step 20 \(commit\)' ||
    mb_fail "world rank 3 did not die at step 20"
t_die=$(mb_now_ms)
wait_until 30 file_has "$(mb_out 2)" '^group lost at step 20' ||
    mb_fail "world rank 2 did not leave"
ms=$(($(mb_now_ms) - t_die))
mb_log "world rank 2: $(grep -m 1 '^group lost' "$(mb_out 2)") -- $ms ms after the kill"
mb_wait_end 90
[ "$MB_RC" -eq 0 ] || mb_fail "mpirun exited with status $MB_RC"
left=$(pgrep -s "$MB_PID" | tr '\n' ' ')
[ -z "$left" ] || mb_fail "processes left in mpirun's session: $left"
for w in 0 4 6; do
    file_has "$(mb_out $w)" "^steps committed $STEPS " || mb_fail "world rank $w did not commit $STEPS steps"
done
mb_check_states "$TEST_TMPDIR/state" 0 4 6
mb_check_final 0 1 4 5 6 7
grep -q 'every group is done' "$(mb_err 8)" || mb_fail "the lighthouse rank did not end"
# SIGPIPE ignored (it was at its default): a survivor's MPI writing to the
# dead rank's socket (Open MPI's tcp BTL across nodes) must not end it
grep -q 'SIGPIPE ignored' "$(mb_err 0)" || mb_fail "world rank 0 did not ignore SIGPIPE"
if [ "$FTI_LAUNCHER" = prte ]; then
    grep -q 'fault tolerance (ULFM) on' "$(mb_err 0)" || mb_fail "world rank 0 did not log the ULFM path"
    grep -q 'revoked (MPIX_Comm_revoke)' "$(mb_err 2)" ||
        mb_fail "world rank 2 did not revoke its group's communicators"
    grep -q 'ERRORS_ARE_FATAL' "$TEST_TMPDIR/mpirun.out" "$(mb_err 2)" &&
        mb_fail "a rank died on MPI_ERRORS_ARE_FATAL"
    grep -h 'ULFM\|MPIX_Comm_revoke' "$(mb_err 0)" "$(mb_err 2)"
fi
echo "PASS ($TEST_NAME)"
