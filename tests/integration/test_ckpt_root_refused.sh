#!/bin/sh
# Issue 23 item 2, through FT_Init: a checkpoint folder others can write
# (mode 1777, as /tmp) is refused when the job starts (ft_sgd under
# mpirun and the lighthouse), with a message that says why and how to fix
# it, and nothing is written there; a folder of this user (created by the
# library with mode 0700 when missing) is taken.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
T=$TEST_TMPDIR
E2E_RUN_FLAGS="--max-restarts 0"
e2e_lighthouse_start 1
mkdir -m 1777 "$T/shared"
FTMPI_CKPT_DIR=$T/shared FTMPI_CKPT_EVERY=2 e2e_group_start bad 1 --steps 20 --sleep-ms 10
wait_pid_timeout "$(e2e_agent_pid bad)" 120 || e2e_fail "the job with a shared checkpoint folder did not end"
file_has "$T/bad.err" "FTMPI_CKPT_DIR refused: checkpoint folder $T/shared can be written by its group or others \(mode 777\)" ||
    e2e_fail "no clear refusal of a folder others can write"
! grep -q '^step [0-9]* loss' "$T/bad.out" || e2e_fail "the job trained with a refused checkpoint folder"
[ -z "$(ls -A "$T/shared")" ] || e2e_fail "something was written to the refused folder: $(ls "$T/shared")"
FTMPI_CKPT_DIR=$T/mine FTMPI_CKPT_EVERY=2 e2e_group_start good 1 --steps 20 --sleep-ms 10
e2e_wait_agents 120 good
[ "$(stat -c %a "$T/mine")" = 700 ] || e2e_fail "the checkpoint folder was created with mode $(stat -c %a "$T/mine")"
ls -d "$T"/mine/step-* >/dev/null 2>&1 || e2e_fail "no checkpoint written to a folder of this user"
echo "PASS ($TEST_NAME)"
