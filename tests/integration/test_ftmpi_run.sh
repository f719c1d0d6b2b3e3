#!/bin/sh
# test_ftmpi_run.sh - the restart agent with real processes: restarts after a
# failure and after SIGKILL, gives up with the command's status, forwards
# SIGTERM to the command's process group and leaves no process behind,
# refuses bad flags with exit 2.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"

RUN=$top_builddir/ftmpi-run
[ -x "$RUN" ] || skip "$RUN not built"
need_cmd timeout
T=$TEST_TMPDIR
unset FTMPI_REPLICA_ID FTMPI_RESTART_COUNT

# agent NAME ARGS... : runs the agent in the foreground under a timeout, with
# stdout/stderr in $T/NAME.out/.err; sets $rc.
agent() {
    _n=$1
    shift
    timeout -k 2 30 "$RUN" "$@" >"$T/$_n.out" 2>"$T/$_n.err" </dev/null
    rc=$?
}

expect_rc() { # EXPECTED WHAT
    [ "$rc" -eq "$1" ] || {
        cat "$T"/*.err >&2
        die "$2: exit status $rc, expected $1"
    }
}

# ---- 1. fails twice, then succeeds: exactly 2 restarts, counts 0,1,2 ----
cat >"$T/flaky.sh" <<'EOF'
echo "$FTMPI_RESTART_COUNT $FTMPI_REPLICA_ID" >>"$1/flaky.seen"
n=$(cat "$1/flaky.count" 2>/dev/null || echo 0)
n=$((n + 1))
echo $n >"$1/flaky.count"
[ $n -ge 3 ] || exit 3
exit 0
EOF
agent flaky --replica-id g0 --max-restarts 5 --backoff-ms 20 --events "$T/flaky.ev" \
    -- sh "$T/flaky.sh" "$T"
expect_rc 0 "fails twice then succeeds"
[ "$(cat "$T/flaky.seen" | tr '\n' ,)" = "0 g0,1 g0,2 g0," ] ||
    die "FTMPI_RESTART_COUNT/FTMPI_REPLICA_ID seen: $(cat "$T/flaky.seen" | tr '\n' ,)"
[ "$(count_lines "$T/flaky.ev" '"event":"start"')" -eq 3 ] || die "expected 3 start events"
[ "$(count_lines "$T/flaky.ev" '"event":"restart"')" -eq 2 ] || die "expected 2 restart events"
[ "$(count_lines "$T/flaky.ev" '"event":"giveup"')" -eq 0 ] || die "unexpected giveup event"
file_has "$T/flaky.ev" '"event":"exit","replica_id":"g0","restart":1,"pid":[0-9]+,"status":3,"signal":null' ||
    die "no exit event with status 3 for restart 1: $(cat "$T/flaky.ev")"
# the backoff doubles: 20 ms, then 40 ms
file_has "$T/flaky.ev" '"event":"restart".*"restart":1,.*"backoff_ms":20}' || die "first backoff not 20 ms"
file_has "$T/flaky.ev" '"event":"restart".*"restart":2,.*"backoff_ms":40}' || die "second backoff not 40 ms"
[ "$(count_lines "$T/flaky.err" 'exited with status 3')" -eq 2 ] ||
    die "expected 2 log lines 'exited with status 3': $(cat "$T/flaky.err")"

# ---- 2. a command killed by SIGKILL is restarted ----
cat >"$T/killed.sh" <<'EOF'
[ "$FTMPI_RESTART_COUNT" = 0 ] && kill -KILL $$
exit 0
EOF
agent killed --replica-id g1 --max-restarts 2 --backoff-ms 10 --events "$T/killed.ev" \
    -- sh "$T/killed.sh"
expect_rc 0 "killed by SIGKILL, then succeeds"
file_has "$T/killed.ev" '"event":"exit".*"status":137,"signal":9' || die "no exit event for SIGKILL"
[ "$(count_lines "$T/killed.ev" '"event":"restart"')" -eq 1 ] || die "expected 1 restart after SIGKILL"
file_has "$T/killed.err" 'signal 9' || die "the SIGKILL was not logged: $(cat "$T/killed.err")"

# ---- 3. out of restarts: the command's exit code, or 128 + signal ----
agent giveup --replica-id g2 --max-restarts 2 --backoff-ms 20 --max-backoff-ms 30 \
    --events "$T/giveup.ev" \
    -- sh -c 'echo x >>"$0/giveup.runs"; exit 7' "$T"
expect_rc 7 "out of restarts"
[ "$(count_lines "$T/giveup.runs" x)" -eq 3 ] || die "expected 3 runs with --max-restarts 2"
file_has "$T/giveup.ev" '"event":"giveup".*"restart":2,.*"status":7' || die "no giveup event"
file_has "$T/giveup.err" 'giving up after 2 restarts' || die "giving up was not logged"
# the backoff is capped by --max-backoff-ms: 20 ms, then 30 ms (not 40)
file_has "$T/giveup.ev" '"event":"restart".*"restart":2,.*"backoff_ms":30}' || die "backoff not capped at 30 ms"

agent giveup_sig --replica-id g2 --max-restarts 0 -- sh -c 'kill -TERM $$'
expect_rc 143 "out of restarts after SIGTERM of the command"

# what the failed command leaves is killed at once: a child in its process
# group, and one in a session of its own (as mpirun's ranks are)
cat >"$T/leftover.sh" <<'EOF'
sleep 300 &
echo $! >"$0.pid1"
setsid sh -c 'echo $$ >"$0.pid2"; exec sleep 300' "$0" &
while [ ! -s "$0.pid2" ]; do sleep 0.01; done
kill -KILL $$
EOF
agent leftover --replica-id g2 --max-restarts 0 -- sh "$T/leftover.sh"
expect_rc 137 "a command that leaves children behind"
register_pid "$(cat "$T/leftover.sh.pid1")"
register_pid "$(cat "$T/leftover.sh.pid2")"
for f in pid1 pid2; do
    lpid=$(cat "$T/leftover.sh.$f")
    wait_pid_timeout "$lpid" 2 || die "the command's child $lpid ($f) outlived the agent"
done

# the same with a real mpirun killed by SIGKILL: its ranks (each in a
# process group of its own) go too, and the group is started again
if [ -n "$MPIRUN" ]; then
    cat >"$T/rank.sh" <<'EOF'
echo $$ >"$0.$FTMPI_RESTART_COUNT.${OMPI_COMM_WORLD_RANK:-$PMI_RANK}"
[ "$FTMPI_RESTART_COUNT" -ge 1 ] && exit 0
trap '' TERM HUP
while :; do sleep 0.1; done
EOF
    timeout -k 2 60 "$RUN" --replica-id m0 --max-restarts 1 --backoff-ms 10 --events "$T/mpi.ev" \
        -- "$MPIRUN" -np 2 sh "$T/rank.sh" >"$T/mpi.out" 2>"$T/mpi.err" </dev/null &
    apid=$!
    register_pid "$apid"
    for r in 0 1; do
        wait_until 30 file_has "$T/rank.sh.0.$r" '[0-9]' || die "mpirun rank $r did not start"
        register_pid "$(cat "$T/rank.sh.0.$r")"
    done
    mpid=$(sed -n 's/.*"event":"start".*"pid":\([0-9]*\),.*/\1/p' "$T/mpi.ev")
    [ -n "$mpid" ] || die "no start event for mpirun"
    kill -KILL "$mpid"
    wait_pid_timeout "$apid" 40 || die "the agent did not end after mpirun was killed"
    wait "$apid"
    rc=$?
    expect_rc 0 "mpirun killed, restarted, succeeded"
    for r in 0 1; do
        pid_alive "$(cat "$T/rank.sh.0.$r")" && die "rank $r of the killed mpirun is still there"
        file_has "$T/rank.sh.1.$r" '[0-9]' || die "rank $r did not run again after the restart"
    done
else
    echo "no mpirun: skipping the mpirun case" >&2
fi

agent quiet --replica-id g2 --max-restarts 1 --backoff-ms 1 --quiet -- sh -c 'exit 4'
expect_rc 4 "--quiet"
[ "$(count_lines "$T/quiet.err" 'exited with status')" -eq 0 ] || die "--quiet still logs exits"

# a command that cannot be executed is not restarted
agent noexec --replica-id g2 --max-restarts 5 --backoff-ms 1000 -- "$T/does-not-exist"
expect_rc 127 "command not found"
file_has "$T/noexec.err" 'cannot execute' || die "exec failure not reported"

# ---- 4. SIGTERM to the agent reaches the command's group; no restart ----
# The command traps SIGTERM (marker, exit 5); of its two background children
# one traps SIGTERM too (marker, exits: the signal went to the whole group),
# the other ignores it (the agent must kill it with the group).
cat >"$T/trap.sh" <<'EOF'
d=$1
trap 'echo got-TERM >"$d/trap.marker"; exit 5' TERM
echo x >>"$d/trap.runs"
sh -c 'trap "echo got-TERM >\"$1/gc1.marker\"; exit 0" TERM; echo $$ >"$1/gc1.pid"; while :; do sleep 0.1; done' sh "$d" &
sh -c 'trap "" TERM; echo $$ >"$1/gc2.pid"; while :; do sleep 0.1; done' sh "$d" &
echo $$ >"$d/trap.child"
while :; do sleep 0.1; done
EOF
"$RUN" --replica-id g3 --max-restarts 5 --backoff-ms 10 --grace-ms 2000 \
    --events "$T/trap.ev" -- sh "$T/trap.sh" "$T" >"$T/trap.out" 2>"$T/trap.err" </dev/null &
apid=$!
register_pid "$apid"
for f in trap.child gc1.pid gc2.pid; do
    wait_until 10 file_has "$T/$f" '[0-9]' || die "the command did not start ($f)"
done
cpid=$(cat "$T/trap.child")
gc1=$(cat "$T/gc1.pid")
gc2=$(cat "$T/gc2.pid")
register_pgid "$cpid"
register_pid "$gc1"
register_pid "$gc2"
[ "$(ps -o pgid= -p "$cpid" | tr -d ' ')" = "$cpid" ] || die "the command is not its own process group leader"
[ "$(ps -o pgid= -p "$apid" | tr -d ' ')" != "$cpid" ] || die "the agent is in the command's process group"
kill -TERM "$apid"
wait_pid_timeout "$apid" 10 || die "the agent did not end within 10 s of SIGTERM"
wait "$apid"
rc=$?
expect_rc 5 "SIGTERM forwarded (the command's trap exits 5)"
file_has "$T/trap.marker" got-TERM || die "the command did not get SIGTERM"
wait_until 5 file_has "$T/gc1.marker" got-TERM || die "the command's child did not get SIGTERM (not sent to the group?)"
[ "$(count_lines "$T/trap.runs" x)" -eq 1 ] || die "the command was restarted after SIGTERM"
[ "$(count_lines "$T/trap.ev" '"event":"restart"')" -eq 0 ] || die "restart event after SIGTERM"
file_has "$T/trap.ev" '"event":"stop".*"signal":15' || die "no stop event"
wait_pid_timeout "$cpid" 2 || die "command pid $cpid still there"
wait_pid_timeout "$gc1" 2 || die "grandchild pid $gc1 still there"
wait_pid_timeout "$gc2" 2 || die "grandchild pid $gc2 (ignores SIGTERM) still there"
file_has "$T/trap.err" 'still there after 2000 ms: SIGKILL' || die "the group was not killed after the grace period"

# SIGINT reaches the command even though the agent, a background job of this
# script, was started with SIGINT ignored (the agent restores the default)
"$RUN" --replica-id g3 --max-restarts 5 -- sh -c 'echo $$ >"$0/int.child"; exec sleep 300' "$T" \
    >"$T/int.out" 2>"$T/int.err" </dev/null &
apid=$!
register_pid "$apid"
wait_until 10 file_has "$T/int.child" '[0-9]' || die "the sleep command did not start"
cpid=$(cat "$T/int.child")
register_pgid "$cpid"
kill -INT "$apid"
wait_pid_timeout "$apid" 10 || die "the agent did not end within 10 s of SIGINT"
wait "$apid"
rc=$?
expect_rc 130 "SIGINT forwarded to a command that does not handle it"
wait_pid_timeout "$cpid" 2 || die "sleep $cpid still there after SIGINT"

# a stop signal during the backoff: no restart, the last status
"$RUN" --replica-id g3 --max-restarts 5 --backoff-ms 20000 --events "$T/bo.ev" \
    -- sh -c 'echo x >>"$0/bo.runs"; exit 9' "$T" >"$T/bo.out" 2>"$T/bo.err" </dev/null &
apid=$!
register_pid "$apid"
wait_until 10 file_has "$T/bo.ev" '"event":"restart"' || die "no restart event before the backoff"
kill -TERM "$apid"
wait_pid_timeout "$apid" 10 || die "the agent did not end on SIGTERM during its backoff"
wait "$apid"
rc=$?
expect_rc 9 "SIGTERM during the backoff"
[ "$(count_lines "$T/bo.runs" x)" -eq 1 ] || die "restarted after SIGTERM during the backoff"
file_has "$T/bo.ev" '"event":"stop".*"status":9,"signal":15' || die "no stop event during the backoff"

# ---- the agent killed by SIGKILL: its command gets SIGTERM ----
cat >"$T/orphan.sh" <<'EOF'
trap 'echo got-TERM >"$0.marker"; exit 0' TERM
echo $$ >"$0.pid"
while :; do sleep 0.1; done
EOF
"$RUN" --replica-id g3 -- sh "$T/orphan.sh" >"$T/orphan.out" 2>"$T/orphan.err" </dev/null &
apid=$!
register_pid "$apid"
wait_until 10 file_has "$T/orphan.sh.pid" '[0-9]' || die "the orphan command did not start"
cpid=$(cat "$T/orphan.sh.pid")
register_pgid "$cpid"
kill -KILL "$apid"
wait_until 5 file_has "$T/orphan.sh.marker" got-TERM || die "the command did not get SIGTERM when the agent was killed"
wait_pid_timeout "$cpid" 5 || die "the command $cpid outlived its killed agent"

# ---- 5. a command that ignores SIGTERM is killed after the grace period ----
cat >"$T/stubborn.sh" <<'EOF'
trap '' TERM INT
echo $$ >"$1/stubborn.child"
while :; do sleep 0.1; done
EOF
"$RUN" --replica-id g4 --grace-ms 300 -- sh "$T/stubborn.sh" "$T" \
    >"$T/stubborn.out" 2>"$T/stubborn.err" </dev/null &
apid=$!
register_pid "$apid"
wait_until 10 file_has "$T/stubborn.child" '[0-9]' || die "the stubborn command did not start"
cpid=$(cat "$T/stubborn.child")
register_pgid "$cpid"
kill -INT "$apid"
wait_pid_timeout "$apid" 10 || die "the agent did not end after the grace period"
wait "$apid"
rc=$?
expect_rc 137 "SIGKILL after the grace period"
wait_pid_timeout "$cpid" 2 || die "stubborn command $cpid still there"
file_has "$T/stubborn.err" 'SIGKILL' || die "the SIGKILL after the grace period was not logged"

# ---- 6. bad flags: exit 2 with a message naming the flag ----
bad() { # PATTERN ARGS...
    _p=$1
    shift
    timeout 10 "$RUN" "$@" >"$T/bad.out" 2>"$T/bad.err" </dev/null
    _rc=$?
    [ $_rc -eq 2 ] || die "ftmpi-run $*: exit $_rc, expected 2"
    file_has "$T/bad.err" "$_p" || die "ftmpi-run $*: message lacks '$_p': $(cat "$T/bad.err")"
}
bad '--replica-id' -- true
bad '--replica-id' --max-restarts 1 -- true
bad 'command' --replica-id g0
bad 'command' --replica-id g0 --
bad '--max-restarts' --replica-id g0 --max-restarts abc -- true
bad '--max-restarts' --replica-id g0 --max-restarts=-1 -- true
bad '--backoff-ms' --replica-id g0 --backoff-ms 1x -- true
bad '--bogus' --replica-id g0 --bogus -- true
bad '--events' --replica-id g0 --events
# a bad FTMPI_* value fails at once instead of in every restart
(
    FTMPI_TIMEOUT_MS=abc
    export FTMPI_TIMEOUT_MS
    bad 'FTMPI_TIMEOUT_MS' --replica-id g0 -- true
) || exit 1

timeout 10 "$RUN" --help >"$T/help.out" 2>&1 || die "--help failed"
file_has "$T/help.out" '^Usage: ftmpi-run' || die "--help prints no usage"
timeout 10 "$RUN" --version >"$T/version.out" 2>&1 || die "--version failed"
file_has "$T/version.out" 'ftmpi-run \(libftmpi\) [0-9]' || die "--version: $(cat "$T/version.out")"

echo "PASS ($TEST_NAME)"
exit 0
