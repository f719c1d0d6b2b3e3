#!/bin/sh
# S2 (DESIGN section 10): a rank of an unmodified program SIGKILLed mid-run
# under libftmpi_pmpi.
#  continue: the plain trainer (examples/shim_trainer) finishes on the 3
#    survivors with equal parameters and a loss below the initial one;
#  return: shim_return's survivors get the error once, and their next
#    calls succeed over the survivors (the sum of ones is 3);
#  abort: the job ends within FTMPI_TIMEOUT_MS + 2 s (+ slack for mpirun's
#    teardown under load) with a message naming the lost world rank.
. "$top_srcdir/tests/integration/common.sh"
need_mpirun
lib_test_env
SHIM="$top_builddir/.libs/libftmpi_pmpi.so"
[ -f "$SHIM" ] || skip "no $SHIM (shared libraries disabled?)"
TRAINER="$top_builddir/examples/shim_trainer"
RET="$top_builddir/tests/shim/shim_return"
NP=4
VICTIM=2

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

start() { # LOG PROGRAM MODE: starts the job in the background, pid in $JOB
    setsid "$MPIRUN" --enable-recovery -np $NP -x LD_PRELOAD="$SHIM" \
        -x FTMPI_SHIM_ON_FAILURE="$3" -x FTMPI_SHIM_RESCALE=1 -x SHIM_TRAINER_STEPS=400 \
        -x SHIM_TRAINER_SLEEP_MS=10 "$2" > "$1" 2>&1 &
    JOB=$!
    register_pgid $JOB
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
n=$(grep -c '^final rank=' "$TEST_TMPDIR/cont.log")
[ "$n" -eq $((NP - 1)) ] || { cat "$TEST_TMPDIR/cont.log"; die "continue: $n survivors finished, expected $((NP - 1))"; }
[ "$(grep '^final rank=' "$TEST_TMPDIR/cont.log" | sed 's/.*steps=//' | sort -u | wc -l)" -eq 1 ] ||
    { grep '^final' "$TEST_TMPDIR/cont.log"; die "continue: the survivors' parameters differ"; }
l0=$(sed -n 's/^initial loss //p' "$TEST_TMPDIR/cont.log")
l1=$(sed -n 's/^final rank=[0-9]* steps=[0-9]* loss=\([0-9.]*\) .*/\1/p' "$TEST_TMPDIR/cont.log" | head -n 1)
awk -v a="$l1" -v b="$l0" 'BEGIN { exit !(a < b) }' || die "continue: final loss $l1 not below $l0"
file_has "$TEST_TMPDIR/cont.log" "world rank\\(s\\) $VICTIM lost; MPI_Allreduce goes on over 3 of 4" ||
    die "continue: no message naming rank $VICTIM"
echo "continue: $n survivors agree ($(grep '^final' "$TEST_TMPDIR/cont.log" | head -n 1)), loss $l0 -> $l1"

# ---- return
start "$TEST_TMPDIR/ret.log" "$RET" auto
wait_until 30 file_has "$TEST_TMPDIR/ret.log" '^shim_return started' || die "return: did not start"
sleep 1
kill_victim "$RET" || die "return: no rank $VICTIM to kill"
wait_pid_timeout $JOB 90 || die "return: the job did not end"
n=$(grep -c '^shim_return rank=[0-9]* errors=1 after=ok' "$TEST_TMPDIR/ret.log")
[ "$n" -eq $((NP - 1)) ] || { cat "$TEST_TMPDIR/ret.log"; die "return: $n of $((NP - 1)) survivors saw one error and then correct sums"; }
echo "return: $n survivors got the error once, then sums over 3 ranks"

# ---- abort
start "$TEST_TMPDIR/abort.log" "$TRAINER" auto
wait_until 30 file_has "$TEST_TMPDIR/abort.log" '^initial loss' || die "abort: the trainer did not start"
sleep 1
kill_victim "$TRAINER" || die "abort: no rank $VICTIM to kill"
t0=$(now_ms)
wait_pid_timeout $JOB 60 || die "abort: the job did not end"
ms=$(( $(now_ms) - t0 ))
file_has "$TEST_TMPDIR/abort.log" "world rank\\(s\\) $VICTIM lost; aborting the job" ||
    { cat "$TEST_TMPDIR/abort.log"; die "abort: no message naming rank $VICTIM"; }
! file_has "$TEST_TMPDIR/abort.log" '^final rank=' || die "abort: a rank finished"
echo "abort: the job ended $ms ms after the kill (FTMPI_TIMEOUT_MS=$FTMPI_TIMEOUT_MS)"
[ $ms -le $((FTMPI_TIMEOUT_MS + 2000 + 3000)) ] || die "abort: took $ms ms"
