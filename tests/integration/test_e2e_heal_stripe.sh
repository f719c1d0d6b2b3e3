#!/bin/sh
# Striped healing across real processes (issue 15 item 4).  g0, g1 and g2
# (one rank each, 64 MiB of parameters) train; g1 serves one byte of every
# heal range flipped (FTMPI_TEST_HEAL_CORRUPT=weights:*, its memory and
# its checksums stay right).  g3 joins at step 0 and heals from every
# up-to-date group at once:
#   - g3 heals (from more than one source, or, when the quorum held a single
#     up-to-date group, from it alone), and whatever g1 served it fails its
#     piece sums and is fetched again elsewhere: no heal of the job ever
#     installs g1's flipped bytes, so all groups that finish together hold
#     bitwise the same state;
#   - some heal of the job did catch g1's bytes ("fails its checksum").
# No race with the clock: g0..g2 are held (SIGSTOP) from step 3 until g3
# finished FT_Init, and the lighthouse waits for every healthy group
# (join timeout 10 min; heartbeat timeout 10 min so the held groups stay
# healthy), so g3 heals in a quorum where g0, g1 and g2 are up to date.
# A source that answers its metadata last may find every range taken by
# the others (each range goes to whichever source is free first: correct,
# but then g1 serves nothing; seen at a load of 3): g0 and g2 wait 200 ms
# before each 8 MiB fetch reply (FTMPI_TEST_HEAL_SERVE_DELAY_MS), g1 not.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
: "${E2E_HEAL_FEATURES:=16777216}"
FTMPI_TIMEOUT_MS=5000
export FTMPI_TIMEOUT_MS
need_test_hooks # g1 serves flipped bytes (FTMPI_TEST_HEAL_CORRUPT)
args="--features $E2E_HEAL_FEATURES --batch 2 --samples 64 --eval 4 --lr 0.05 --steps 14 --print-every 1"

E2E_HB_TIMEOUT_MS=600000
E2E_JOIN_TIMEOUT_MS=600000
e2e_lighthouse_start 1
FTMPI_TEST_HEAL_SERVE_DELAY_MS=200
export FTMPI_TEST_HEAL_SERVE_DELAY_MS
e2e_group_start g0 1 $args
unset FTMPI_TEST_HEAL_SERVE_DELAY_MS
FTMPI_TEST_HEAL_CORRUPT='weights:*'
export FTMPI_TEST_HEAL_CORRUPT
e2e_group_start g1 1 $args
unset FTMPI_TEST_HEAL_CORRUPT
FTMPI_TEST_HEAL_SERVE_DELAY_MS=200
export FTMPI_TEST_HEAL_SERVE_DELAY_MS
e2e_group_start g2 1 $args
unset FTMPI_TEST_HEAL_SERVE_DELAY_MS
_at3() { for _g in g0 g1 g2; do _e2e_step_ge $_g 3 || return 1; done; }
wait_until 120 _at3 || e2e_fail "g0..g2 did not reach step 3 in 120 s"
e2e_group_start g3 1 $args
e2e_hold_groups "g0 g1 g2" 120 e2e_inited g3
e2e_wait_agents 300 g0 g1 g2 g3

grep -h 'healed step\|fails its checksum' "$TEST_TMPDIR"/g*.err >&2
grep -q 'healed step' "$TEST_TMPDIR/g3.err" || e2e_fail "g3 never healed"
grep -q 'fails its checksum' "$TEST_TMPDIR"/g*.err ||
    e2e_fail "no heal caught g1's flipped bytes: g1 served no heal range - nothing was tested"
stripes=$(grep -c 'healed step .* and [1-9][0-9]* other source' "$TEST_TMPDIR"/g*.err | awk -F: '{ n += $2 } END { print n + 0 }')

# the groups whose last step was committed in the same quorum as the most
# participants' (a straggler alone after the others left: min_replicas 1)
last_commit() { grep '^step [0-9]* loss' "$TEST_TMPDIR/$1.out" | tail -n 1 | awk '{ print $6, $8 }'; }
best_q=0 best_p=0
for g in g0 g1 g2 g3; do
    set -- $(last_commit $g)
    [ "${2:-0}" -gt "$best_p" ] && best_q=$1 best_p=$2
done
together=
for g in g0 g1 g2 g3; do
    set -- $(last_commit $g)
    if [ "$1" = "$best_q" ]; then
        together="$together $g"
    elif [ "$2" -ne 1 ] || [ "$1" -le "$best_q" ]; then
        e2e_fail "$g's last step was committed in quorum $1 with $2 participants, the others' in quorum $best_q"
    fi
done
[ "$(echo $together | wc -w)" -ge 3 ] || e2e_fail "fewer than 3 groups finished together: $together"
# shellcheck disable=SC2086
e2e_check_states $together
e2e_check_loss g0 g1 g2 g3
e2e_log "heals striped over several sources: $stripes; g1's flipped bytes caught: $(grep -c 'fails its checksum' "$TEST_TMPDIR"/g*.err | awk -F: '{ n += $2 } END { print n + 0 }') piece(s)"
echo "PASS ($TEST_NAME)"
