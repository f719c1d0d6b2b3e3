#!/bin/sh
# Mode B under MPICH's launcher (mpiexec.hydra -disable-auto-cleanup),
# 4 groups of 1 rank and the lighthouse rank (-n 5); world rank 1 (g1) is
# killed with SIGKILL from outside in the middle of training.
#
# Where the MPI can keep the survivors going (its MPIX_Comm_revoke/shrink/
# agree work: comm/ulfm.h), the other groups g0, g2 and g3 must commit every
# step and end with bitwise equal states, the lighthouse rank seeing g1 go.
#
# Where it cannot (MPICH 4.0.2, Debian's, ch4:ucx: measured in
# doc/USER_GUIDE.md, "Mode B and MPICH"), FT_Init must refuse mode B on every
# rank (FT_ERR_UNSUPPORTED: ft_sgd exits 2, no rank trains) with a message
# naming what is needed (Open MPI's --enable-recovery, --with-ft ulfm, mode
# A); then the kill part cannot run here and the test is skipped, saying so.
# Before FT_Init refused, the job started and the SIGKILL ended every rank
# (hydra's proxy kills a dead rank's siblings): the kill part failed.
#
# Open MPI's counterpart is test_modeb_kill.sh (mpirun --enable-recovery).
. "$top_srcdir/tests/integration/modeb_lib.sh"
mb_init
need_mpi_impl mpich "mode B under mpiexec.hydra -disable-auto-cleanup (Open MPI's mpirun --enable-recovery case is test_modeb_kill.sh)"
# the refusal is what is tested: not the healthy tests' opt-out (common.sh)
FTMPI_MODEB_ALLOW_NO_RECOVERY=0
export FTMPI_MODEB_ALLOW_NO_RECOVERY
STEPS=150

# the run holds before step 40's allreduce until g1 is killed (mb_pace)
mb_pace 40
mb_start 5 1 "$MB_SGD" --steps $STEPS --sleep-ms 20 --print-every 1 --dump "$TEST_TMPDIR/state" \
    --pace-file "$MB_PACE"

# 1. either FT_Init refused (every rank exits 2 before training) or rank 0 trains
_refused_or_training() {
    file_has "$(mb_err 0)" 'FT_Init: mode B cannot keep the other groups going' ||
        [ "$(mb_step 0)" -ge 10 ]
}
wait_until 60 _refused_or_training || mb_fail "world rank 0 neither refused mode B nor reached step 10"
if file_has "$(mb_err 0)" 'FT_Init: mode B cannot keep the other groups going'; then
    mb_wait_end 60
    msg=$(grep -h 'mode B cannot keep' "$(mb_err 0)" | head -n 1)
    for want in 'mpirun --enable-recovery' 'mpirun --with-ft ulfm' 'mode A' \
        'FTMPI_MODEB_ALLOW_NO_RECOVERY=1'; do
        case $msg in *"$want"*) ;; *) mb_fail "the refusal does not name '$want': $msg" ;; esac
    done
    for w in 0 1 2 3 4; do
        file_has "$(mb_err $w)" '^ft_sgd: FT_Init failed: datatype, op or feature not supported$' ||
            mb_fail "world rank $w did not fail FT_Init with FT_ERR_UNSUPPORTED"
        [ "$(mb_step $w)" -eq 0 ] || mb_fail "world rank $w trained although FT_Init refused"
    done
    [ "$MB_RC" -ne 0 ] || mb_fail "the launcher exited 0 although every rank failed FT_Init"
    mb_log "FT_Init refused mode B on every rank: ${msg#*FT_Init: }"
    skip "mode B cannot survive a SIGKILL on this MPI (FT_Init refuses it, checked above): $(sed -n 's/.*on this MPI: \([^,]*\),.*/\1/p' "$(mb_err 0)" | head -n 1)"
fi

# 2. the MPI keeps survivors: kill g1 from outside, the others go on
mb_wait_step 0 30 60
mb_kill 1
mb_pace $((STEPS + 1))
for w in 0 2 3; do
    mb_wait_line $w '^step [0-9]+ loss .* participants 3$' 60
done
mb_log "next quorum without g1: $(grep -m 1 'participants 3$' "$(mb_out 0)")"
mb_wait_end 120
for w in 0 2 3; do
    file_has "$(mb_out $w)" "^steps committed $STEPS " || mb_fail "world rank $w did not commit $STEPS steps"
done
mb_check_states "$TEST_TMPDIR/state" 0 2 3
mb_check_final 0 2 3
grep -q 'group g1 gone' "$(mb_err 4)" || mb_fail "the lighthouse rank did not see g1 go"
echo "PASS ($TEST_NAME)"
