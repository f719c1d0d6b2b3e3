#!/bin/sh
# Mode B: a member late for a slice's creation blocks no one (issue 10,
# item 3).  3 groups of 2 ranks and the lighthouse rank (mpirun -np 7),
# FTMPI_TIMEOUT_MS=2000.  g2 is killed (both ranks) at step 10, so g0 and
# g1 get a new quorum and build new slices.  World rank 0 (g0's manager)
# is stopped with SIGSTOP exactly when it starts building that slice (gdb
# breaks at fti_mpi_slice_create of 2 groups, sends the SIGSTOP and
# detaches) and continued 5 s later.  Before the fix, world rank 2 gave up
# on the token exchange, world rank 0 then entered MPI_Comm_create_group
# alone and never came back.  Now: after SIGCONT world rank 0 comes back
# within the deadline (its group is lost and leaves, or goes on;
# either is fine), g1 goes on to the last step with
# equal states on both its ranks, and mpirun ends.
. "$top_srcdir/tests/integration/modeb_lib.sh"
mb_init
need_kill_recovery "mode B after a SIGKILL"
command -v gdb >/dev/null 2>&1 || skip "no gdb (it stops the rank exactly at slice creation)"
FTMPI_TIMEOUT_MS=2000
# g0 must stay in the quorums while it is stopped: only the slice is late
FTMPI_LH_HEARTBEAT_TIMEOUT_MS=120000
export FTMPI_TIMEOUT_MS FTMPI_LH_HEARTBEAT_TIMEOUT_MS
STEPS=150
STOP_S=5

# the run holds before step 20's allreduce until g2 is killed (mb_pace)
mb_pace 20
mb_start 7 2 "$MB_SGD" --steps $STEPS --sleep-ms 20 --print-every 1 \
    --group-timeout-ms 120000 --dump "$TEST_TMPDIR/state" --pace-file "$MB_PACE"
# gdb attaches while FT_Init's collectives wait for everyone (no deadline
# there) or, on a loaded machine, later; it reads libftmpi's symbols only
# (auto-solib-add off), so the attach stops rank 0 briefly, and --group-timeout-ms and the
# heartbeat timeout are long (2 min), so the stall of the attach (rank 0
# stopped while gdb reads the symbols) loses no group and lets no other
# group run to the last step meanwhile.  The breakpoint stops world rank
# 0 only at the slice of a quorum of 2 groups (n == 2: the quorum without
# g2), whenever gdb got there; g2 is killed once gdb says it is set.
_rank0_up() { p0=$(mb_rank_pid 0); [ -n "$p0" ]; }
wait_until 60 _rank0_up || mb_fail "world rank 0 has no process"
gdb -p "$p0" -batch -nx -iex 'set auto-solib-add off' -ex 'set pagination off' \
    -ex 'sharedlibrary libftmpi' -ex 'set breakpoint pending on' \
    -ex 'break fti_mpi_slice_create if n == 2' -ex 'echo FTI_GDB_READY\n' -ex 'continue' \
    -ex "shell kill -STOP $p0" -ex 'detach' >"$TEST_TMPDIR/gdb.out" 2>&1 &
gdb_pid=$!
register_pid "$gdb_pid"
wait_until 120 file_has "$TEST_TMPDIR/gdb.out" FTI_GDB_READY ||
    { cat "$TEST_TMPDIR/gdb.out"; mb_fail "gdb did not set its breakpoint in 120 s"; }
mb_wait_step 0 10 120
mb_kill 4
mb_kill 5
mb_pace $((STEPS + 1))
wait_pid_timeout "$gdb_pid" 120 || { cat "$TEST_TMPDIR/gdb.out"; mb_fail "world rank 0 built no slice"; }
grep -q 'Breakpoint 1, .*fti_mpi_slice_create' "$TEST_TMPDIR/gdb.out" ||
    { cat "$TEST_TMPDIR/gdb.out"; mb_fail "gdb did not stop world rank 0 at its slice"; }
state=$(awk '/^State:/ { print $2 }' "/proc/$p0/status" 2>/dev/null)
[ "$state" = T ] || mb_fail "world rank 0 is not stopped (state '$state')"
mb_log "world rank 0 stopped at fti_mpi_slice_create (step $(mb_step 0)) for $STOP_S s"
sleep $STOP_S
lines_before=$(wc -l <"$(mb_out 0)")
kill -CONT "$p0"
t_cont=$(mb_now_ms)

# world rank 0 comes back: it prints something (a step, or that its group
# is lost) within the deadline of anything it waits for (before the fix it
# never did); the bound is generous so that a loaded machine cannot fail
# it, the time it took is logged
_rank0_moved() { [ "$(wc -l <"$(mb_out 0)")" -gt "$lines_before" ] || ! kill -0 "$p0" 2>/dev/null; }
limit_s=$((10 * FTMPI_TIMEOUT_MS / 1000 + 10))
if ! wait_until $limit_s _rank0_moved; then
    where=$(gdb -p "$p0" -batch -nx -ex bt 2>/dev/null | grep '^#' | head -n 8)
    mb_fail "world rank 0 is still blocked $limit_s s after SIGCONT, in:
$where"
fi
mb_log "world rank 0 moved $(($(mb_now_ms) - t_cont)) ms after SIGCONT: $(tail -n 1 "$(mb_out 0)")"

mb_wait_end 180
[ "$MB_RC" -eq 0 ] || mb_fail "mpirun exited with status $MB_RC"
left=$(pgrep -s "$MB_PID" | tr '\n' ' ')
[ -z "$left" ] || mb_fail "processes left in mpirun's session: $left"
file_has "$(mb_out 2)" "^steps committed $STEPS " || mb_fail "world rank 2 (g1) did not commit $STEPS steps"
mb_check_states "$TEST_TMPDIR/state" 2
for w in 0 1; do
    # finished (group rank 0 prints the summary, every rank its final line) or left
    if ! file_has "$(mb_out $w)" "^steps committed $STEPS |^final replica=.* step=$STEPS " &&
        ! file_has "$(mb_out $w)" '^group lost'; then
        mb_fail "world rank $w neither finished nor left"
    fi
done
echo "PASS ($TEST_NAME)"
