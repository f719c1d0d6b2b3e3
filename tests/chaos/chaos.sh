#!/bin/sh
# tests/chaos/chaos.sh - the chaos soak of `make chaos` (issue 11 item 7;
# doc/USER_GUIDE.md, "Chaos soak").  A lighthouse and 3 groups of 2 ranks of
# ft_sgd, each under ftmpi-run (mode A), first run healthy for CHAOS_SECONDS
# (the reference rate), then again for CHAOS_SECONDS while a seeded driver
# injects one fault at a time at random intervals: SIGKILL of a group's
# mpirun and ranks, SIGKILL of one rank, SIGSTOP of a group for a while then
# SIGCONT, SIGKILL of the lighthouse and its restart on the same port.  At
# least one group stays up.  Then the faults stop, the lighthouse comes back
# with --min-replicas 3 (no step without every group), and all finish at the
# same step.  Asserts:
#   (a) every rank of every group ends at the same step with the same
#       checksum (and the --dump files are bitwise equal);
#   (b) goodput: committed steps per second during the faults over the
#       healthy rate, above CHAOS_GOODPUT_FLOOR;
#   (c) every process the run started is gone at the end, and each
#       lighthouse incarnation's fds (less its established sockets) and
#       VmRSS stay within a small bound of their start (chaos_lib.sh);
#   (d) the faults happened: a count per kind, each > 0 for runs >= 60 s.
#
# Settings (environment): CHAOS_SECONDS (600), CHAOS_HEALTHY_SECONDS (the
# healthy run's length: CHAOS_SECONDS; a rate needs less), CHAOS_SEED (random, printed:
# give it again to replay the same draws), CHAOS_GAP_MIN_MS/MAX_MS (3000,
# 8000: between faults), CHAOS_STOP_MIN_MS/MAX_MS (1000, 5000: SIGSTOP),
# CHAOS_LH_DOWN_MIN_MS/MAX_MS (200, 3000: lighthouse down), CHAOS_SLEEP_MS
# (20: ft_sgd --sleep-ms), CHAOS_GOODPUT_FLOOR (0.2), CHAOS_GOODPUT_EST (0.85)
# and CHAOS_TAIL_S (15: they set the chaos run's --steps), KEEP_TMPDIR=1 keeps
# the logs.  A 300 s run here (2 cores, shared): 37 faults, goodput 0.84,
# 13 lighthouse incarnations, no fd or RSS growth past 28 kB, no leak.
# shellcheck disable=SC2086 # lists of groups split on purpose
. "$top_srcdir/tests/chaos/chaos_lib.sh"
. "$top_srcdir/tests/chaos/chaos_drive.sh"
e2e_init
if [ ! -r /proc/self/status ] || [ ! -r /proc/net/tcp ]; then
    skip "no /proc here (the soak reads the lighthouse's fds and sockets there)"
fi

: "${CHAOS_SECONDS:=600}" "${CHAOS_HEALTHY_SECONDS:=$CHAOS_SECONDS}"
[ -n "$CHAOS_SEED" ] || CHAOS_SEED=$(($(od -An -N4 -tu4 /dev/urandom) % 2147483648))
: "${CHAOS_GAP_MIN_MS:=3000}" "${CHAOS_GAP_MAX_MS:=8000}"
: "${CHAOS_STOP_MIN_MS:=1000}" "${CHAOS_STOP_MAX_MS:=5000}"
: "${CHAOS_LH_DOWN_MIN_MS:=200}" "${CHAOS_LH_DOWN_MAX_MS:=3000}"
: "${CHAOS_SLEEP_MS:=20}" "${CHAOS_GOODPUT_FLOOR:=0.2}"
# the chaos run's --steps: what the healthy rate reaches in CHAOS_SECONDS
# times CHAOS_GOODPUT_EST, plus CHAOS_TAIL_S seconds of healthy steps to
# finish on (the faults stop earlier if the run gets that far first)
: "${CHAOS_GOODPUT_EST:=0.85}" "${CHAOS_TAIL_S:=15}"
# under --enable-sanitizers ASan keeps freed memory in its quarantine (256
# MiB by default) and the lighthouse's VmRSS grows by design (26 and 50 MB
# in one incarnation of the 60 s run): the RSS bound is then the quarantine
# plus 64 MiB, and only the plain build checks it closely; the fd bound stays
if [ -n "$(san_runtime "$top_builddir/ftmpi-lighthouse")" ]; then
    : "${CHAOS_RSS_SLACK_KB:=$(((256 + 64) * 1024))}"
fi
: "${CHAOS_FD_SLACK:=2}" "${CHAOS_RSS_SLACK_KB:=1024}"
CHAOS_RNG=$CHAOS_SEED
CHAOS_NP=2
CHAOS_FD_MAX_GROWTH=-1000000
CHAOS_RSS_MAX_GROWTH=-1000000
CHAOS_LH_INCARNATIONS=0
for k in $CHAOS_KINDS skipped; do eval "CHAOS_N_$k=0"; done
# many restarts, each soon: a soak kills the same group again and again
# (e2e_group_start adds E2E_RUN_FLAGS after its own; the last flag wins)
E2E_RUN_FLAGS="--max-restarts 1000000 --backoff-ms 200 --max-backoff-ms 1000"
SGD_FLAGS="--sleep-ms $CHAOS_SLEEP_MS --print-every 5"
echo "chaos: seed $CHAOS_SEED, $CHAOS_SECONDS s of faults after $CHAOS_HEALTHY_SECONDS s healthy (replay: make chaos CHAOS_SEED=$CHAOS_SEED CHAOS_SECONDS=$CHAOS_SECONDS CHAOS_HEALTHY_SECONDS=$CHAOS_HEALTHY_SECONDS)"
ALL_PIDS=

_chaos_all_in() {
    for _g in $CHAOS_GROUPS; do
        tail -n 3 "$TEST_TMPDIR/$_g.out" 2>/dev/null | grep -q "participants 3\$" || return 1
    done
}

# Starts the lighthouse and the groups $CHAOS_GROUPS (--steps $1); returns
# once every group takes part in the steps and 2 s more went by.
chaos_start_run() {
    e2e_lighthouse_start 1
    ALL_PIDS="$ALL_PIDS $E2E_LH_PID"
    for g in $CHAOS_GROUPS; do
        # shellcheck disable=SC2086
        e2e_group_start "$g" "$CHAOS_NP" --steps "$1" $SGD_FLAGS
        ALL_PIDS="$ALL_PIDS $(e2e_agent_pid "$g")"
    done
    wait_until 120 _chaos_all_in || e2e_fail "the 3 groups did not all take part within 120 s"
    sleep 2
}

# ---- 1. the healthy run: the reference rate ---------------------------
CHAOS_GROUPS="h0 h1 h2"
chaos_start_run 1000000000
t0=$(chaos_now_ms)
chaos_leader
s0=$L
HEALTHY_S0=$s0
sleep "$CHAOS_HEALTHY_SECONDS"
t1=$(chaos_now_ms)
chaos_leader
RATE=$(awk -v d=$((L - s0)) -v ms=$((t1 - t0)) 'BEGIN { printf "%.2f", d * 1000 / ms }')
e2e_log "healthy: steps $s0 -> $L in $((t1 - t0)) ms: $RATE steps/s"
awk -v r="$RATE" 'BEGIN { exit !(r > 0) }' || e2e_fail "the healthy run committed no step"
for g in $CHAOS_GROUPS; do kill -TERM "$(e2e_agent_pid "$g")"; done
for g in $CHAOS_GROUPS; do
    wait_pid_timeout "$(e2e_agent_pid "$g")" 30 || e2e_fail "agent of $g ignored SIGTERM for 30 s"
done
kill -TERM "$E2E_LH_PID"
wait_pid_timeout "$E2E_LH_PID" 10 || e2e_fail "lighthouse $E2E_LH_PID ignored SIGTERM for 10 s"

# ---- 2. the chaos run -------------------------------------------------
CHAOS_GROUPS="g0 g1 g2"
STEPS=$(awk -v r="$RATE" -v s0="$HEALTHY_S0" -v t="$CHAOS_SECONDS" -v g="$CHAOS_GOODPUT_EST" \
    -v tail="$CHAOS_TAIL_S" 'BEGIN { printf "%d", 2 * s0 + 50 + r * (t * g + tail) }')
STOP_AT=$(awk -v n="$STEPS" -v r="$RATE" -v tail="$CHAOS_TAIL_S" 'BEGIN { printf "%d", n - r * tail }')
e2e_log "chaos run: --steps $STEPS, faults until ${CHAOS_SECONDS} s or step $STOP_AT"
chaos_start_run "$STEPS"
for g in $CHAOS_GROUPS; do eval "CHAOS_REC_$g=0"; done
chaos_lh_check start
chaos_drive "$CHAOS_SECONDS" "$STOP_AT"

# ---- 3. the end: every group back, all finish -------------------------
# The lighthouse is restarted (SIGTERM, same port) with --min-replicas 3:
# no step commits until every group is back in the quorum, so no group can
# reach --steps and leave while another is still restarting (it would then
# train alone from where it healed, whatever the load makes a restart take).
chaos_lh_check end
kill -TERM "$E2E_LH_PID"
wait_pid_timeout "$E2E_LH_PID" 10 || e2e_fail "lighthouse $E2E_LH_PID ignored SIGTERM for 10 s"
chaos_mark_down $CHAOS_GROUPS
e2e_lighthouse_start 3 "$E2E_LH_PORT"
ALL_PIDS="$ALL_PIDS $E2E_LH_PID"
wait_until 180 _chaos_all_up || e2e_fail "not every group came back within 180 s of the last fault"
chaos_lh_check start
chaos_leader
e2e_log "every group is back at step $L; finishing at $STEPS"
[ "$L" -lt "$STEPS" ] || e2e_fail "the run reached step $STEPS before every group was back"
left=$(awk -v n=$((STEPS - L)) -v r="$RATE" 'BEGIN { printf "%d", 60 + 4 * n / r }')
e2e_wait_agents "$left" $CHAOS_GROUPS
chaos_lh_check end
kill -TERM "$E2E_LH_PID"
wait_pid_timeout "$E2E_LH_PID" 10 || e2e_fail "lighthouse $E2E_LH_PID ignored SIGTERM for 10 s"

# (a) equal states
e2e_check_final "$CHAOS_NP" $CHAOS_GROUPS
e2e_check_states $CHAOS_GROUPS
# (c) no leaked process: agents, lighthouses, every mpirun the agents started
for f in "$TEST_TMPDIR"/*.agent; do
    ALL_PIDS="$ALL_PIDS $(sed -n 's/.*"event":"start".*"pid":\([0-9][0-9]*\).*/\1/p' "$f" | tr '\n' ' ')"
done
# shellcheck disable=SC2086
chaos_check_no_leak $ALL_PIDS
e2e_log "lighthouse: $CHAOS_LH_INCARNATIONS incarnation(s); largest growth: fds less established" \
    "$CHAOS_FD_MAX_GROWTH (bound $CHAOS_FD_SLACK), VmRSS $CHAOS_RSS_MAX_GROWTH kB (bound $CHAOS_RSS_SLACK_KB)"
# (b) goodput, (d) the faults
chaos_report
echo "PASS ($TEST_NAME)"
