#!/bin/sh
# The source of a heal is killed while the heal runs.  3 groups with a
# large state (16 Mi floats = 64 MiB, so the copy takes a moment); g2 is
# killed and restarted; when it heals, its source (g0: the first
# up-to-date group by replica id, results.c) is killed with SIGKILL as soon
# as g0 has served the heal's metadata, i.e. while the data is streamed.
# g2's heal must fail cleanly and g2 must get the state from g1 (another
# source, in the next quorum); g0 is restarted and heals too.  At the end
# every group holds the same parameters.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
: "${E2E_HEAL_FEATURES:=16777216}"
FTMPI_TIMEOUT_MS=5000
export FTMPI_TIMEOUT_MS
args="--features $E2E_HEAL_FEATURES --batch 2 --samples 64 --eval 4 --lr 0.05 --steps 20 --print-every 1"

e2e_lighthouse_start 1
# g0 logs at debug level: "heal: metadata of step ..." marks a heal it serves
FTMPI_LOG_LEVEL=debug
e2e_group_start g0 1 $args
FTMPI_LOG_LEVEL=info
e2e_group_start g1 1 $args
e2e_group_start g2 1 $args
e2e_wait_step g2 3 60
# Arm the trigger before g2 goes down: the first "heal: metadata of step"
# line g0 logs from now on marks the start of g2's heal; the kill follows
# within milliseconds (tail -f wakes on the write, no polling loop, no fork
# between the match and the kill).  --pid ends tail once g0's rank is gone.
m0=$(e2e_mpirun_pid g0)
r0=$(e2e_ranks g0)
[ -n "$m0" ] && [ -n "$r0" ] || e2e_fail "g0 has no mpirun or rank"
(
    timeout 60 tail -n 0 --pid="$r0" -f "$TEST_TMPDIR/g0.err" | {
        grep -q -m 1 'heal: metadata of step' && kill -KILL "-$m0" $r0 &&
            echo "[trigger] g0's heal metadata served: SIGKILL to mpirun $m0 and ranks $r0"
    }
) &
trigger=$!
register_pid "$trigger"
e2e_kill_group g2
killed_at=$(e2e_step g2)
e2e_wait_restart g2 2 20
wait_pid_timeout "$trigger" 40 || e2e_fail "g0 never served g2's heal"
wait "$trigger"
e2e_wait_restart g0 2 20
e2e_wait_agents 120 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_loss g0 g1 g2
e2e_check_final 1 g0 g1 g2

# g2's heals: the one from g0 failed, a later one succeeded from another source
ev=$TEST_TMPDIR/g2.events
grep '"event":"heal"' "$ev" >&2
failed=$(grep '"event":"heal"' "$ev" | grep -v '"error":0' | head -n 1)
[ -n "$failed" ] || e2e_fail "no heal of g2 failed: the kill came too late (after the heal) - nothing was tested"
bad_src=$(echo "$failed" | sed -n 's/.*"source":"\([^"]*\)".*/\1/p')
good=$(grep '"event":"heal"' "$ev" | grep '"error":0' | tail -n 1)
[ -n "$good" ] || e2e_fail "g2 never healed"
good_src=$(echo "$good" | sed -n 's/.*"source":"\([^"]*\)".*/\1/p')
[ "$good_src" != "$bad_src" ] || e2e_fail "g2 healed from the killed source $bad_src"
first=$(e2e_first_step_of_run g2 2)
[ -n "$first" ] && [ "$first" -gt "$killed_at" ] || e2e_fail "g2's restarted run began at step '$first'"
e2e_log "g2: heal from $bad_src failed, healed from $good_src, rejoined at step $first"
echo "PASS ($TEST_NAME)"
