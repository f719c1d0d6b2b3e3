#!/bin/sh
# Issue 26 item 4: the flight recorder.  Two groups (1 rank each) keep
# their last FTMPI_FLIGHT_RECORDS=12 calls; a SIGUSR1 makes a rank write
# them to its event log (from the recorder's thread, not the handler); the
# first FT_ERR_* of a step writes them too; ftmpi-flight prints the ranks
# side by side, in rounds of one cause, with each rank's place.  A frozen group (SIGSTOP) makes the other hang in a call:
# a SIGUSR1 dump then shows that call RUNNING, and ftmpi-flight names it.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
FLIGHT=$top_builddir/ftmpi-flight
[ -x "$FLIGHT" ] || die "$FLIGHT is not built"

# a frozen group stays in the quorum (no heartbeat timeout during the test)
E2E_HB_TIMEOUT_MS=600000
FTMPI_FLIGHT_RECORDS=12
export FTMPI_FLIGHT_RECORDS
e2e_lighthouse_start 2
for g in g0 g1; do
    e2e_group_start $g 1 --steps 100000 --sleep-ms 20 --print-every 5
done
e2e_wait_step g0 10 60
e2e_wait_step g1 10 60

# dumps of a rank with the given reason in its event log
dumps() { count_lines "$TEST_TMPDIR/$1.events" "\"event\":\"flight\".*\"reason\":\"$2\""; }
_more_dumps() { [ "$(dumps "$1" "$2")" -gt "$3" ]; }

# MPICH's MPI_Init installs a SIGUSR1 handler of its own (hydra's notice of
# a failed process), and the recorder takes SIGUSR1 only in a program
# without one: under MPICH only the dump on a failed step is checked
usr1=1
if [ "$FTI_MPI_IMPL" = mpich ]; then
    usr1=
    e2e_log "SIGUSR1 dumps not checked under MPICH: its MPI_Init handles SIGUSR1 itself"
fi
if [ -n "$usr1" ]; then
    # 1. SIGUSR1: a dump of at most 12 records, consecutive, each a known call;
    # g0's rank gets it directly, g1's through its agent (ftmpi-run -> mpirun)
    r=$(e2e_ranks g0)
    [ -n "$r" ] || e2e_fail "no rank of g0 found"
    kill -USR1 $r
    wait_until 30 _more_dumps g0 sigusr1 0 || e2e_fail "g0 wrote no flight records on SIGUSR1"
    kill -USR1 "$(e2e_agent_pid g1)"
    wait_until 30 _more_dumps g1 sigusr1 0 || e2e_fail "g1 wrote no flight records on SIGUSR1 to its agent"
    pid_alive "$(e2e_agent_pid g1)" || e2e_fail "g1's agent ended on SIGUSR1"
    [ "$(e2e_starts g1)" -eq 1 ] || e2e_fail "g1 was restarted after SIGUSR1"
    grep '"event":"flight".*"reason":"sigusr1"' "$TEST_TMPDIR/g0.events" |
        awk -F'"seq":' '{ split($2, a, ","); print a[1] }' >"$TEST_TMPDIR/seqs"
    n=$(wc -l <"$TEST_TMPDIR/seqs")
    [ "$n" -ge 3 ] && [ "$n" -le 12 ] || e2e_fail "g0's SIGUSR1 dump has $n records (want 3..12 with FTMPI_FLIGHT_RECORDS=12)"
    awk 'NR > 1 && $1 != prev + 1 { bad = 1 } { prev = $1 } END { exit bad }' "$TEST_TMPDIR/seqs" ||
        e2e_fail "g0's dump is not its consecutive last calls: $(tr '\n' ' ' <"$TEST_TMPDIR/seqs")"
    grep '"event":"flight"' "$TEST_TMPDIR/g0.events" | grep -Ev '"op":"(quorum|allreduce|commit)"' &&
        e2e_fail "a flight record with an unknown op"
    grep -q '"event":"flight".*"op":"allreduce","bytes":[1-9][0-9]*,"quorum_id":[0-9]' \
        "$TEST_TMPDIR/g0.events" || e2e_fail "no allreduce record with its bytes and quorum id"
    # each dump begins with its header, which counts its records
    grep -q '"event":"flight_dump".*"dump":1,"reason":"sigusr1","records":'"$n"'$\|"event":"flight_dump".*"dump":1,"reason":"sigusr1","records":'"$n"'}' \
        "$TEST_TMPDIR/g0.events" || e2e_fail "g0's SIGUSR1 dump has no flight_dump header of $n records"
    e2e_log "SIGUSR1: g0 dumped $n consecutive records"
    "$FLIGHT" "$TEST_TMPDIR/g0.events" "$TEST_TMPDIR/g1.events" >"$TEST_TMPDIR/flight1.txt" ||
        e2e_fail "ftmpi-flight failed"
    # each dump in a round of its own cause, every rank's place named (the
    # two SIGUSR1 dumps are one round or two, as far apart as they came)
    for r in g0/0 g1/0; do
        grep -Eq "^$r is (in|between calls)" "$TEST_TMPDIR/flight1.txt" ||
            e2e_fail "ftmpi-flight names no place of $r: $(grep -E '^(round|g[01]/0)' "$TEST_TMPDIR/flight1.txt")"
    done
    grep -q '^round 1 of [0-9]*: sigusr1 dumps' "$TEST_TMPDIR/flight1.txt" ||
        e2e_fail "ftmpi-flight shows no SIGUSR1 round: $(head -n 3 "$TEST_TMPDIR/flight1.txt")"
fi

# 2. g1 frozen: g0's reductions fail (an error dump with the failed call)
# and it then hangs in its calls: a SIGUSR1 dump shows one RUNNING
e2e_signal_group g1 STOP
at_cleanup "kill -CONT $(e2e_ranks g1) 2>/dev/null"
wait_until 60 _more_dumps g0 error 0 || e2e_fail "g0 wrote no flight records on its failed step"
grep -q '"event":"flight".*"reason":"error".*"result":"FT_ERR_' "$TEST_TMPDIR/g0.events" ||
    e2e_fail "g0's error dump holds no failed call"
if [ -z "$usr1" ]; then
    "$FLIGHT" "$TEST_TMPDIR/g0.events" "$TEST_TMPDIR/g1.events" >"$TEST_TMPDIR/flight1.txt" ||
        e2e_fail "ftmpi-flight failed"
    grep -Eq '^g0/0 is (in|between calls)' "$TEST_TMPDIR/flight1.txt" ||
        e2e_fail "ftmpi-flight names no place of g0/0: $(head -n 3 "$TEST_TMPDIR/flight1.txt")"
    e2e_log "error dumps of g0: $(dumps g0 error) record(s)"
else
    r0=$(e2e_ranks g0)
    _running_dump() {
        _before=$(dumps g0 sigusr1)
        kill -USR1 $r0
        wait_until 20 _more_dumps g0 sigusr1 "$_before" || return 1
        "$FLIGHT" --last "$TEST_TMPDIR/g0.events" "$TEST_TMPDIR/g1.events" >"$TEST_TMPDIR/flight2.txt" || return 1
        grep -q '^g0/0 is in ' "$TEST_TMPDIR/flight2.txt"
    }
    wait_until 60 _running_dump || e2e_fail "no SIGUSR1 dump of g0 showed a call still running: $(tail -n 5 "$TEST_TMPDIR/flight2.txt")"
    grep -q 'RUNNING' "$TEST_TMPDIR/flight2.txt" || e2e_fail "ftmpi-flight shows no RUNNING cell"
    e2e_log "hang: $(grep '^g0/0 is in ' "$TEST_TMPDIR/flight2.txt")"
    cat "$TEST_TMPDIR/flight2.txt"
fi
echo "PASS ($TEST_NAME)"
