#!/bin/sh
# S2 (DESIGN section 10): a rank of an unmodified program SIGKILLed mid-run
# under libftmpi_pmpi.
#  continue: the plain trainer (examples/shim_trainer) finishes on the 3
#    survivors with equal parameters and a loss below the initial one;
#  return: shim_return's survivors get the error once, and their next
#    calls succeed over the survivors (the sum of ones is 3);
#  return, killed inside a call: shim_agree's survivors (calls back to
#    back) see the same results, one of them possibly a call ahead;
#  return, a survivor late: world rank 2 dies while world rank 1 computes
#    1.5 s longer; rank 1 asks for the new quorum 1.5 s after the others and
#    is not left out, even with FTMPI_LH_JOIN_TIMEOUT_MS=500 (the
#    in-process lighthouse waits FTMPI_TIMEOUT_MS + 2 s at least);
#  return set late: shim_return sets MPI_ERRORS_RETURN after 20 calls
#    made under MPI_ERRORS_ARE_FATAL (auto: abort, the drop-in's hot path,
#    which keeps the failure mode until the program sets a handler); the
#    survivors get the error once, as under return from the start (the
#    same from Fortran and with MPI-1's call: test_shim_hot);
#  abort: the job ends within FTMPI_TIMEOUT_MS + 2 s with a message naming
#    the lost world rank (the lighthouse drops it the moment its
#    connections close, so the new quorum comes at once);
#  continue with an external lighthouse (FTMPI_LIGHTHOUSE, a separate
#    ftmpi-lighthouse): world rank 0 killed, the 3 others finish alike.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
need_kill_recovery "the drop-in after a SIGKILL"
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
PRELOAD=$(san_preload "$SHIM")
TRAINER="$top_builddir/examples/shim_trainer"
RET="$top_builddir/tests/shim/shim_return"
AGREE="$top_builddir/tests/shim/shim_agree"
NP=4
VICTIM=2

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

start() { # LOG PROGRAM MODE [mpirun flags]: starts the job in the background, pid in $JOB
    _log=$1 _prog=$2 _mode=$3
    shift 3
    setsid "$MPIRUN" --enable-recovery -np $NP -x LD_PRELOAD="$PRELOAD" \
        -x FTMPI_SHIM_ON_FAILURE="$_mode" -x FTMPI_SHIM_RESCALE=1 -x SHIM_TRAINER_STEPS=400 \
        -x SHIM_TRAINER_SLEEP_MS=10 "$@" "$_prog" > "$_log" 2>&1 &
    JOB=$!
    register_pgid $JOB
}

# LOG: the continue checks: NP - 1 survivors with equal parameters, a loss
# below the initial one, a message naming VICTIM
continue_checks() {
    n=$(grep -c '^final rank=' "$1")
    [ "$n" -eq $((NP - 1)) ] || { cat "$1"; die "continue: $n survivors finished, expected $((NP - 1))"; }
    [ "$(grep '^final rank=' "$1" | sed 's/.*steps=//' | sort -u | wc -l)" -eq 1 ] ||
        { grep '^final' "$1"; die "continue: the survivors' parameters differ"; }
    l0=$(sed -n 's/^initial loss //p' "$1")
    l1=$(sed -n 's/^final rank=[0-9]* steps=[0-9]* loss=\([0-9.]*\) .*/\1/p' "$1" | head -n 1)
    awk -v a="$l1" -v b="$l0" 'BEGIN { exit !(a < b) }' || die "continue: final loss $l1 not below $l0"
    file_has "$1" "world rank\\(s\\) $VICTIM lost; MPI_Allreduce goes on over 3 of 4" ||
        die "continue: no message naming rank $VICTIM"
    paths_checks "$1" continue
}

# LOG WHAT: each of the NP - 1 survivors made calls on the fast path before
# the kill, gave up one fast request, and made calls on the fault-tolerant
# path after it
paths_checks() {
    n=$(count_lines "$1" 'libftmpi_pmpi: paths: [1-9][0-9]* fast, [1-9][0-9]* fault-tolerant; 1 fast request\(s\) abandoned')
    [ "$n" -eq $((NP - 1)) ] || { grep 'paths:' "$1"; die "$2: $n of $((NP - 1)) survivors went from the fast path to the fault-tolerant one"; }
}

kill_victim() { # PROGRAM: SIGKILL of world rank VICTIM (its OMPI_COMM_WORLD_RANK)
    for p in $(pgrep -f "^$1\$"); do
        if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$VICTIM"; then
            kill -9 $p
            return 0
        fi
    done
    return 1
}

# ---- continue
start "$TEST_TMPDIR/cont.log" "$TRAINER" continue
wait_until 30 file_has "$TEST_TMPDIR/cont.log" '^initial loss' || die "continue: the trainer did not start"
sleep 1
kill_victim "$TRAINER" || die "continue: no rank $VICTIM to kill"
wait_pid_timeout $JOB 90 || die "continue: the job did not end"
continue_checks "$TEST_TMPDIR/cont.log"
echo "continue: $n survivors agree ($(grep '^final' "$TEST_TMPDIR/cont.log" | head -n 1)), loss $l0 -> $l1"

# ---- return
start "$TEST_TMPDIR/ret.log" "$RET" auto
wait_until 30 file_has "$TEST_TMPDIR/ret.log" '^shim_return started' || die "return: did not start"
sleep 1
kill_victim "$RET" || die "return: no rank $VICTIM to kill"
wait_pid_timeout $JOB 90 || die "return: the job did not end"
n=$(grep -c '^shim_return rank=[0-9]* errors=1 after=ok' "$TEST_TMPDIR/ret.log")
[ "$n" -eq $((NP - 1)) ] || { cat "$TEST_TMPDIR/ret.log"; die "return: $n of $((NP - 1)) survivors saw one error and then correct sums"; }
paths_checks "$TEST_TMPDIR/ret.log" return
echo "return: $n survivors got the error once, then sums over 3 ranks"

# ---- return, a rank killed inside a call (calls back to back): a survivor
# may have completed the call the others failed (one fast call ahead: it
# hands its result over and nobody sees an error) or not (every survivor
# sees one error); either way every survivor sees the same results
# (4,000 calls: on the fast path 400 were over in under 0.5 s, before the kill)
start "$TEST_TMPDIR/agree.log" "$AGREE" auto -x SHIM_AGREE_CALLS=4000
wait_until 30 file_has "$TEST_TMPDIR/agree.log" '^shim_agree started' || die "agree: did not start"
sleep 0.1
kill_victim "$AGREE" || die "agree: no rank $VICTIM to kill"
wait_pid_timeout $JOB 90 || die "agree: the job did not end"
n=$(grep -c '^shim_agree rank=[0-9]* errors=[01] hash=' "$TEST_TMPDIR/agree.log")
[ "$n" -eq $((NP - 1)) ] || { cat "$TEST_TMPDIR/agree.log"; die "agree: $n of $((NP - 1)) survivors finished with at most one error"; }
[ "$(sed -n 's/^shim_agree rank=[0-9]* //p' "$TEST_TMPDIR/agree.log" | sort -u | wc -l)" -eq 1 ] ||
    { grep '^shim_agree' "$TEST_TMPDIR/agree.log"; die "agree: the survivors saw different results"; }
paths_checks "$TEST_TMPDIR/agree.log" agree
echo "agree: 3 survivors saw the same results ($(grep -m 1 '^shim_agree rank' "$TEST_TMPDIR/agree.log" | sed 's/.*errors=\([01]\).*/\1/') error(s): 0 when one was a call ahead)"

# ---- the held allreduce (1 MiB on 4 ranks, mpi_shim/fast.c): no member
# returns before every member holds the result, and no copy of it is kept.
# return and continue, a rank killed inside a call: the survivors see the
# same results (return: at most one error, continue: none); with the test
# hook, world rank 2 dies after the ring of its 40th call, before the
# zero-byte round: every survivor holds that result, nobody sees an error.
held_checks() { # LOG WHAT MAX_ERRORS
    n=$(grep -c "^shim_agree rank=[0-9]* errors=[0-$3] hash=" "$1")
    [ "$n" -eq $((NP - 1)) ] || { cat "$1"; die "$2: $n of $((NP - 1)) survivors finished with at most $3 error(s)"; }
    [ "$(sed -n 's/^shim_agree rank=[0-9]* //p' "$1" | sort -u | wc -l)" -eq 1 ] ||
        { grep '^shim_agree' "$1"; die "$2: the survivors saw different results"; }
    n=$(count_lines "$1" 'libftmpi_pmpi: [0-9]+ fast call\(s\) ran as the point-to-point allreduce .*, [1-9][0-9]* as the held allreduce')
    [ "$n" -eq $((NP - 1)) ] || { grep 'as the held' "$1"; die "$2: $n of $((NP - 1)) survivors ran the held allreduce"; }
    paths_checks "$1" "$2"
}
HELD="-x SHIM_AGREE_COUNT=131072"
for mode in auto continue; do
    max=1
    [ $mode = continue ] && max=0
    start "$TEST_TMPDIR/held-$mode.log" "$AGREE" $mode -x SHIM_AGREE_CALLS=1500 $HELD
    wait_until 30 file_has "$TEST_TMPDIR/held-$mode.log" '^shim_agree started' || die "held, $mode: did not start"
    sleep 0.2
    kill_victim "$AGREE" || die "held, $mode: no rank $VICTIM to kill"
    wait_pid_timeout $JOB 120 || die "held, $mode: the job did not end"
    held_checks "$TEST_TMPDIR/held-$mode.log" "held, $mode" $max
    echo "held, $mode: 3 survivors saw the same results ($(grep -m 1 '^shim_agree rank' "$TEST_TMPDIR/held-$mode.log" | sed 's/.*errors=\([01]\).*/\1/') error(s))"
done
if have_test_hooks; then
    for mode in auto continue; do
        start "$TEST_TMPDIR/holds-$mode.log" "$AGREE" $mode -x SHIM_AGREE_CALLS=200 $HELD \
            -x FTMPI_TEST_SHIM_HELD_DIE=$VICTIM:40
        wait_pid_timeout $JOB 120 || die "holds, $mode: the job did not end"
        n=$(count_lines "$TEST_TMPDIR/holds-$mode.log" 'MPI_Allreduce on the failure-free path lost a rank after this rank held the result')
        [ "$n" -eq $((NP - 1)) ] || { cat "$TEST_TMPDIR/holds-$mode.log"; die "holds, $mode: $n of $((NP - 1)) survivors held the result when rank $VICTIM died"; }
        held_checks "$TEST_TMPDIR/holds-$mode.log" "holds, $mode" 0
        echo "holds, $mode: rank $VICTIM died before the zero-byte round; 3 survivors held the result, no error"
    done
else
    echo "holds: skipped (built without --enable-test-hooks)"
fi

# ---- return, a survivor late (it must not be left out of the new quorum)
start "$TEST_TMPDIR/late.log" "$RET" auto -x SHIM_RETURN_DIE=$VICTIM:100 \
    -x SHIM_RETURN_STALL=1:100:1500 -x FTMPI_LH_JOIN_TIMEOUT_MS=500
wait_pid_timeout $JOB 90 || die "return, late: the job did not end"
n=$(grep -c '^shim_return rank=[0-9]* errors=1 after=ok' "$TEST_TMPDIR/late.log")
[ "$n" -eq $((NP - 1)) ] || { cat "$TEST_TMPDIR/late.log"; die "return, late: $n of $((NP - 1)) survivors saw one error and then correct sums"; }
file_has "$TEST_TMPDIR/late.log" "join timeout is FTMPI_TIMEOUT_MS \\+ 2000 ms = $((FTMPI_TIMEOUT_MS + 2000)) ms" ||
    die "return, late: no line about the join timeout"
file_has "$TEST_TMPDIR/late.log" 'quorum [0-9]*: 3 members, -r2;' || die "return, late: no quorum of the 3 survivors"
echo "return, late: rank 1, 1.5 s late, stays in (3 survivors, one error each)"

# ---- return set late (the hot path under abort must see the handler change)
start "$TEST_TMPDIR/setlate.log" "$RET" auto -x SHIM_RETURN_LATE=20 -x SHIM_RETURN_DIE=$VICTIM:100
wait_pid_timeout $JOB 90 || die "return set late: the job did not end"
n=$(grep -c '^shim_return rank=[0-9]* errors=1 after=ok' "$TEST_TMPDIR/setlate.log")
[ "$n" -eq $((NP - 1)) ] || { cat "$TEST_TMPDIR/setlate.log"; die "return set late: $n of $((NP - 1)) survivors saw one error and then correct sums"; }
echo "return set late: MPI_ERRORS_RETURN after 20 calls under the fatal handler; 3 survivors, one error each"

# ---- abort (mpirun's odls_base_sigkill_timeout, 1 s by default, is Open
# MPI's grace between SIGTERM and SIGKILL when it tears a job down: with it
# mpirun itself may exit 1-2 s after the last rank; 0 leaves only ours)
start "$TEST_TMPDIR/abort.log" "$TRAINER" auto --mca odls_base_sigkill_timeout 0
wait_until 30 file_has "$TEST_TMPDIR/abort.log" '^initial loss' || die "abort: the trainer did not start"
sleep 1
kill_victim "$TRAINER" || die "abort: no rank $VICTIM to kill"
t0=$(now_ms)
ranks_ms=
end=$(($(date +%s) + 60))
while pid_alive $JOB; do
    [ "$(date +%s)" -lt "$end" ] || die "abort: the job did not end"
    [ -n "$ranks_ms" ] || pgrep -f "^$TRAINER\$" > /dev/null || ranks_ms=$(( $(now_ms) - t0 ))
    sleep 0.02
done
ms=$(( $(now_ms) - t0 ))
file_has "$TEST_TMPDIR/abort.log" "world rank\\(s\\) $VICTIM lost; aborting the job" ||
    { cat "$TEST_TMPDIR/abort.log"; die "abort: no message naming rank $VICTIM"; }
! file_has "$TEST_TMPDIR/abort.log" '^final rank=' || die "abort: a rank finished"
echo "abort: the ranks ended ${ranks_ms:-$ms} ms and mpirun $ms ms after the kill (FTMPI_TIMEOUT_MS=$FTMPI_TIMEOUT_MS)"
[ $ms -le $((FTMPI_TIMEOUT_MS + 2000)) ] || { cat "$TEST_TMPDIR/abort.log"; die "abort: took $ms ms"; }

# ---- continue, world rank 0 killed, the lighthouse a separate process
e2e_lighthouse_start 1 0 --join-timeout-ms $((FTMPI_TIMEOUT_MS + 2000))
VICTIM=0
start "$TEST_TMPDIR/ext.log" "$TRAINER" continue -x FTMPI_LIGHTHOUSE
wait_until 30 file_has "$TEST_TMPDIR/ext.log" '^initial loss' || die "external: the trainer did not start"
file_has "$TEST_TMPDIR/lighthouse.log" 'quorum [0-9]*: 4 members' || { cat "$TEST_TMPDIR/lighthouse.log"; die "external: the first quorum did not have the 4 ranks"; }
sleep 1
kill_victim "$TRAINER" || die "external: no rank $VICTIM to kill"
wait_pid_timeout $JOB 90 || die "external: the job did not end"
continue_checks "$TEST_TMPDIR/ext.log"
echo "external lighthouse: world rank 0 killed, $(grep -c '^final rank=' "$TEST_TMPDIR/ext.log") survivors agree"
