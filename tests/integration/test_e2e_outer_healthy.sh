#!/bin/sh
# LocalSGD and DiLoCo (FT_Outer_*, ft_sgd --localsgd H / --diloco H), no
# failure: three groups of 2 ranks sync every 10 inner steps; every sync
# commits with the three groups, the loss goes down, and every rank of
# every group ends bitwise equal (the global state and the parameters
# reset to it).  Each sync but the join of the fresh start (which reduces
# nothing: no group has anything to average) hands FT_Allreduce (F + 2)
# floats, the parameters and the weight, once per H inner steps: as much
# as one step of per-step data parallelism (gradient and loss).
# groups wait for each other at a sync (a slow group is not left out of it)
: "${E2E_JOIN_TIMEOUT_MS:=5000}"
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init

for algo in localsgd diloco; do
    e2e_log "---- $algo"
    rm -f "$TEST_TMPDIR"/g*.out "$TEST_TMPDIR"/g*.dump*
    e2e_lighthouse_start 3
    e2e_groups_start "g0 g1 g2" 2 --$algo 10 --steps 200 --print-every 1
    e2e_wait_agents 120 g0 g1 g2
    kill "$E2E_LH_PID" 2>/dev/null
    wait "$E2E_LH_PID" 2>/dev/null
    e2e_check_states g0 g1 g2
    e2e_check_final 2 g0 g1 g2
    e2e_check_loss g0 g1 g2
    for g in g0 g1 g2; do
        f=$TEST_TMPDIR/$g.out
        # 1 join + 200 / 10 syncs, all committed, all with 3 participants
        line=$(grep '^outer ' "$f")
        [ "$line" = "outer 21 syncs 21 committed 0 healed 5280 bytes 201 inner" ] ||
            e2e_fail "$g ($algo): '$line', want 21 syncs, all committed, (64 + 2) * 4 bytes in each but the fresh join"
        [ "$(grep -c 'participants 3$' "$f")" -eq 21 ] ||
            e2e_fail "$g ($algo): not every sync had 3 participants"
        ! grep -q ' failed: ' "$f" || e2e_fail "$g ($algo): a sync failed: $(grep ' failed: ' "$f")"
    done
done
echo "PASS ($TEST_NAME)"
