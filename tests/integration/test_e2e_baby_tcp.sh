#!/bin/sh
# ft_sgd on the baby-tcp data plane (FTMPI_BACKEND=baby-tcp: the tcp ring in
# an ftmpi-baby child per rank and quorum): 3 groups, one SIGKILLed mid-run
# and restarted by its agent; it heals and rejoins, every rank of every group
# ends with the same step and bytes, and the survivors' children were
# respawned for each new quorum (issue 12 item 5).  With a job secret
# (FTMPI_TOKEN_FILE, the lighthouse's --token-file, issue 11): the children's
# rings authenticate with it (the rank hands the key over the command
# channel), the run trains as usual, and the secret is on no child's
# command line or environment.
# the lighthouse waits for held healthy groups, and a restarted group's
# request for the quorum stays pending while they are held (e2e_lib.sh,
# "holding the run")
E2E_JOIN_TIMEOUT_MS=120000
E2E_HB_TIMEOUT_MS=5000
FTMPI_QUORUM_TIMEOUT_MS=120000
export FTMPI_QUORUM_TIMEOUT_MS
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
BABY=$top_builddir/ftmpi-baby
[ -x "$BABY" ] || skip "$BABY not built"
(umask 077 && printf 'baby-e2e-secret-7f3a9c2e41b8d6057e1f\n' >"$TEST_TMPDIR/token")
FTMPI_BACKEND=baby-tcp FTMPI_BABY_PATH=$BABY FTMPI_TOKEN_FILE=$TEST_TMPDIR/token
export FTMPI_BACKEND FTMPI_BABY_PATH FTMPI_TOKEN_FILE

# this test's children: their environment names its token file (test_baby,
# run beside this one by make -j, starts ftmpi-baby children of its own)
our_babies() {
    for _p in $(pgrep -f "$BABY"); do
        grep -aqF "FTMPI_TOKEN_FILE=$TEST_TMPDIR/token" "/proc/$_p/environ" 2>/dev/null &&
            echo "$_p"
    done
}

e2e_lighthouse_start 1 0 --token-file "$TEST_TMPDIR/token"
# the groups hold before step 40's allreduce (ft_sgd --pace-file) until g1
# was killed and its new run waits at the lighthouse for a quorum (or
# healed): at a load of 20 the survivors otherwise reached --steps and left
# before g1's new run asked, which then trained alone
e2e_pace 0
for g in g0 g1 g2; do
    e2e_group_start $g 1 --steps 120 --sleep-ms 25 --print-every 5 --pace-file "$E2E_PACE"
done
e2e_gather 120 40 g0 g1 g2
e2e_wait_step g1 20 40
# the children run: one ftmpi-baby per rank
[ -n "$(our_babies)" ] || e2e_fail "no ftmpi-baby child is running"
for p in $(our_babies); do
    ! grep -aq 'baby-e2e-secret-7f3a9c2e41b8d6057e1f' "/proc/$p/cmdline" "/proc/$p/environ" 2>/dev/null ||
        e2e_fail "the secret is on child $p's command line or in its environment"
done
e2e_kill_group g1
killed_at=$(e2e_step g1)
s0=$(e2e_step g0)
e2e_wait_restart g1 2 60
e2e_wait_rejoining 120 g1
e2e_pace 1000000
e2e_wait_step g0 $((s0 + 5)) 60
e2e_wait_agents 90 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_loss g0 g1 g2
e2e_check_final 1 g0 g1 g2
first=$(e2e_first_step_of_run g1 2)
[ -n "$first" ] || e2e_fail "g1's restarted run committed no step"
[ "$first" -gt "$killed_at" ] || e2e_fail "g1's restarted run began at step $first (killed at $killed_at): it did not heal"
grep -q "backend baby-tcp" "$(e2e_err g0)" 2>/dev/null || grep -rq "baby-tcp" "$TEST_TMPDIR" ||
    e2e_fail "no log line says the baby-tcp backend ran"
# every ring (in the children) passed the handshake; no group ran keyless
! grep -rq 'failed the job secret handshake' "$TEST_TMPDIR" ||
    e2e_fail "a ring refused a neighbour: $(grep -rh 'failed the job secret handshake' "$TEST_TMPDIR" | head -3)"
! grep -rq 'unauthenticated' "$TEST_TMPDIR"/*.err 2>/dev/null ||
    e2e_fail "a group says it is unauthenticated"
# no child outlives its parent
sleep 1
left=$(our_babies)
[ -z "$left" ] || e2e_fail "ftmpi-baby children left after every group ended: $left"
e2e_log "g1 killed at step $killed_at, rejoined at step $first on baby-tcp"
echo "PASS ($TEST_NAME)"
