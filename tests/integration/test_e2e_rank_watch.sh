#!/bin/sh
# test_e2e_rank_watch.sh - ftmpi-run notices a rank's death itself
# (FTMPI_AGENT_DIR, tools/rank_watch.h) and ends and restarts the group at
# once, without waiting for mpirun to notice; and it gives up at once when
# the command cannot start its program.
#  1. g0 (2 ranks) trains; one rank is SIGKILLed: the agent's events show
#     "rank_died" before the command's "exit" (the agent ended it), the
#     group is started again and commits again.
#  2. `mpirun -np 1 /no/such/program` and `sh -c 'exit 127'` with
#     --max-restarts 10: started once, the agent exits with the command's
#     status and says why.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
T=$TEST_TMPDIR

e2e_lighthouse_start 1
e2e_group_start g0 2 --steps 1000000 --sleep-ms 20 --print-every 1
e2e_wait_step g0 10 120
victim=$(e2e_ranks g0 | head -n 1)
[ -n "$victim" ] || e2e_fail "no rank of g0 found"
kill -KILL "$victim"
e2e_log "rank pid $victim of g0 killed"
_died() { file_has "$T/g0.agent" '"event":"rank_died"'; }
wait_until 60 _died || e2e_fail "the agent did not notice the rank's death itself"
e2e_wait_restart g0 2 60
first=$(grep -n '"event":"rank_died"\|"event":"exit"' "$T/g0.agent" | head -n 1)
echo "$first" | grep -q rank_died || e2e_fail "mpirun's exit came before the agent noticed: $first"
file_has "$T/g0.err" "rank pid $victim ended without FT_Finalize" || e2e_fail "the agent did not say which rank died"
_again() { [ -n "$(e2e_first_step_of_run g0 2)" ]; }
wait_until 120 _again || e2e_fail "g0 did not commit again after its restart"
e2e_log "g0 restarted by its agent, committing again from step $(e2e_first_step_of_run g0 2)"

# 2. a command that cannot start: given up at once
for cmd in "$MPIRUN -np 1 --bind-to none $T/no-such-program" "sh -c exit\ 127"; do
    : >"$T/cs.agent"
    # shellcheck disable=SC2086
    eval "timeout -s KILL 120 \"$E2E_RUN_BIN\" --replica-id cs --max-restarts 10 --backoff-ms 500 \
        --events \"$T/cs.agent\" -- $cmd" >"$T/cs.out" 2>&1 </dev/null
    rc=$?
    n=$(count_lines "$T/cs.agent" '"event":"start"')
    [ "$n" -eq 1 ] || e2e_fail "'$cmd': started $n times, want 1: $(cat "$T/cs.out" | tail -n 5)"
    [ "$rc" -ne 0 ] && [ "$rc" -ne 137 ] || e2e_fail "'$cmd': agent exit status $rc"
    grep -q 'could not start its program' "$T/cs.out" || e2e_fail "'$cmd': no message: $(tail -n 3 "$T/cs.out")"
    e2e_log "'$cmd': given up at once, status $rc"
done
echo "PASS ($TEST_NAME)"
