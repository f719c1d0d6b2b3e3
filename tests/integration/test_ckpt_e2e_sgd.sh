#!/bin/sh
# Issue 14, the end-to-end scenario: ft_sgd with sharded parameters
# (--shard 1), 3 groups x 2 ranks, a checkpoint every 20 steps; every group
# is SIGKILLed at once (agents included: nothing restarts them), then the
# job restarts as 3 groups x 3 ranks, which load the newest checkpoint
# resharded (2 -> 3 ranks), resume from its step (not 0), and finish with
# equal states and a loss below the initial one.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
CKPT_BIN=$top_builddir/ftmpi-ckpt
FTMPI_CKPT_DIR=$TEST_TMPDIR/ckpt
FTMPI_CKPT_EVERY=20
FTMPI_CKPT_KEEP=2
export FTMPI_CKPT_DIR FTMPI_CKPT_EVERY FTMPI_CKPT_KEEP

e2e_lighthouse_start 1
e2e_groups_start "g0 g1 g2" 2 --steps 200 --sleep-ms 30 --print-every 5 --shard 1 --features 101
e2e_wait_step g0 50 60
for g in g0 g1 g2; do
    pkill -KILL -s "$(e2e_agent_pid $g)"
done
e2e_log "every group killed at step $(e2e_step g0)"
_all_gone() { ! pgrep -s "$(e2e_agent_pid g0)" >/dev/null && ! pgrep -s "$(e2e_agent_pid g1)" >/dev/null \
    && ! pgrep -s "$(e2e_agent_pid g2)" >/dev/null; }
wait_until 10 _all_gone || e2e_fail "the killed groups did not go away"

"$CKPT_BIN" ls "$FTMPI_CKPT_DIR" || e2e_fail "ftmpi-ckpt ls found no checkpoint"
"$CKPT_BIN" verify "$FTMPI_CKPT_DIR" || e2e_fail "ftmpi-ckpt verify failed"
last=$("$CKPT_BIN" ls "$FTMPI_CKPT_DIR" | sed -n 's/.* step \([0-9][0-9]*\) group_size 2 .*/\1/p' | head -n 1)
[ -n "$last" ] && [ "$last" -ge 40 ] || e2e_fail "no checkpoint of step >= 40 by 2 ranks (got '$last')"
e2e_log "newest checkpoint: step $last"

e2e_groups_start "h0 h1 h2" 3 --steps 100 --sleep-ms 10 --print-every 5 --shard 1 --features 101
e2e_wait_agents 120 h0 h1 h2
# the groups in the first quorum load the checkpoint (resharded 2 -> 3);
# one that joins later heals from them instead
loaders=0
for g in h0 h1 h2; do
    if file_has "$TEST_TMPDIR/$g.out" "^checkpoint loaded at step $last\$"; then
        loaders=$((loaders + 1))
        [ "$(count_lines "$TEST_TMPDIR/$g.err" "loaded step $last .*[(]2 ranks wrote it, 3 load it")" -eq 3 ] ||
            e2e_fail "group $g: not every rank loaded step $last resharded from 2 to 3"
    fi
done
[ "$loaders" -ge 1 ] || e2e_fail "no group loaded the checkpoint of step $last"
e2e_log "$loaders group(s) loaded step $last"
for g in h0 h1 h2; do
    first=$(sed -n 's/^step \([0-9][0-9]*\) loss.*/\1/p' "$TEST_TMPDIR/$g.out" | head -n 1)
    [ -n "$first" ] && [ "$first" -gt "$last" ] ||
        e2e_fail "group $g's first step line is '$first', not past the checkpoint's $last"
done
e2e_check_states h0 h1 h2
e2e_check_loss h0 h1 h2
e2e_check_final 3 h0 h1 h2
echo "PASS ($TEST_NAME)"
