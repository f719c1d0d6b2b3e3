#!/bin/sh
# Issue 23 item 4: two live processes claiming one group (replica id "dup",
# group rank 0) - a second job started under FTMPI_REPLICA_ID=dup while the
# first still runs - are refused: the second never takes part (no step of
# it runs), the lighthouse's and the second's logs name both addresses, and
# the first keeps stepping without a failure.  When the first dies
# (kill -9: its connections close), a restarted incarnation under the same
# id replaces it and steps.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
T=$TEST_TMPDIR
e2e_lighthouse_start 1

# dup_start NAME: mpirun -np 1 ft_sgd as replica "dup", in its own session
dup_start() {
    FTMPI_REPLICA_ID=dup setsid "$MPIRUN" -np 1 --bind-to none $E2E_MPIRUN_FLAGS "$E2E_SGD_BIN" \
        --steps 100000 --sleep-ms 20 --print-every 1 >"$T/$1.out" 2>"$T/$1.err" </dev/null &
    eval "DUP_$1=$!"
    at_cleanup "pkill -KILL -s $!"
    e2e_log "dup $1: session $!"
}

dup_start a
_a_steps() { [ "$(sgd_step "$T/a.out")" -ge 3 ]; }
wait_until 60 _a_steps || e2e_fail "the first 'dup' did not reach step 3"
dup_start b
_b_refused() { file_has "$T/lighthouse.log" "replica id 'dup' is held by a live process at"; }
wait_until 60 _b_refused || e2e_fail "the lighthouse never refused the second 'dup'"
line=$(grep "replica id 'dup' is held by a live process at" "$T/lighthouse.log" | head -n 1)
held=$(echo "$line" | sed -n "s/.*held by a live process at \([0-9.]*:[0-9]*\); refused the one at \([0-9.]*:[0-9]*\):.*/\1 \2/p")
[ -n "$held" ] || e2e_fail "the refusal does not name two addresses: $line"
set -- $held
[ "$1" != "$2" ] || e2e_fail "the refusal names one address twice: $line"
_b_told() { file_has "$T/b.err" "held by a live process at"; }
wait_until 60 _b_told || e2e_fail "the second 'dup' was not told why it was refused"
# the first goes on, the second never runs a step, while the first lives
s0=$(sgd_step "$T/a.out")
_a_more() { [ "$(sgd_step "$T/a.out")" -ge $((s0 + 10)) ]; }
wait_until 60 _a_more || e2e_fail "the first 'dup' stopped stepping after the second came"
! grep -q '^step [0-9]* loss' "$T/b.out" || e2e_fail "the second 'dup' ran steps: $(grep '^step' "$T/b.out" | head -3)"
! grep -qi "failure\|FT_ERR" "$T/a.err" || e2e_fail "the first 'dup' saw failures: $(grep -i 'failure\|FT_ERR' "$T/a.err" | head -3)"
pkill -KILL -s "$DUP_b"

# the first dies: a restarted incarnation replaces it
pkill -KILL -s "$DUP_a"
_a_gone() { ! pgrep -s "$DUP_a" >/dev/null; }
wait_until 30 _a_gone || e2e_fail "the first 'dup' did not go away"
dup_start c
_c_steps() { [ "$(sgd_step "$T/c.out")" -ge 3 ]; }
wait_until 90 _c_steps || e2e_fail "a restart under 'dup' after the first died did not step"
e2e_log "refused while the first lived ($held); the restart after kill -9 stepped"
echo "PASS ($TEST_NAME)"
