#!/bin/sh
# The ucx backend (issue 37): a peer SIGKILLed mid-allreduce.  Of 3 groups
# (1 rank each, replica ranks g0=0, g1=1, g2=2) on FTMPI_BACKEND=ucx, g1
# sends itself SIGKILL at step 25 after its compute; g1 takes 200 ms a
# step, the others 20 ms, so g0 and g2 are surely waiting for it in the
# step's FT_Allreduce (a 256 KiB gradient: the ring).  Each survivor must
# log ONE error line naming replica g1, its replica rank and its label, with
# FT_ERR_PROC_FAILED: UCX's peer error callback ended the wait, not the
# deadline (FT_ERR_TIMEOUT), so the error came within FTMPI_TIMEOUT_MS -- a
# bound, not a timing.  The step does not commit, the next quorum (g0 and
# g2) goes on and both finish with the same step and bytes.  g1 is not
# restarted.  Twice: on UCX's choice (tcp over loopback: UCX 1.13 gives
# endpoints that report a dead peer no shared memory by default), and with
# UCX_POSIX_ERROR_HANDLING=y (shared memory: no connection closes, the
# keepalive the library sets from FTMPI_TIMEOUT_MS finds the dead peer);
# a third time as the second but on FTMPI_BACKEND=auto (which takes ucx).
# Skips (77) in a build without UCX.
. "$top_srcdir/tests/integration/e2e_lib.sh"
grep -q '^#define FTMPI_HAVE_UCX 1' "$top_builddir/ftmpi_config.h" 2>/dev/null ||
    skip "built without UCX (configure found no pkg-config ucx, or --without-ucx)"
e2e_init
FTMPI_BACKEND=ucx
export FTMPI_BACKEND

DIE_AT=25
flags="--steps 40 --print-every 5 --features 65535"
run() {
    rm -f "$TEST_TMPDIR"/g[012].*
    e2e_lighthouse_start 1
    # shellcheck disable=SC2086
    e2e_group_start g0 1 $flags --sleep-ms 20
    # shellcheck disable=SC2086
    E2E_RUN_FLAGS="--max-restarts 0" e2e_group_start g1 1 $flags --sleep-ms 200 --die-at-step "$DIE_AT"
    # shellcheck disable=SC2086
    e2e_group_start g2 1 $flags --sleep-ms 20
    e2e_wait_agents 120 g0 g2

    _g1_died() { file_has "$TEST_TMPDIR/g1.err" "SIGKILL to myself at step $DIE_AT"; }
    wait_until 5 _g1_died || e2e_fail "g1 did not kill itself at step $DIE_AT"

    line_re="FT_Allreduce: the connection to replica g1 \(replica rank 1 of 3, [^)]* pid [0-9]*\) broke in quorum [0-9]*: FT_ERR_PROC_FAILED"
    for g in g0 g2; do
        err=$TEST_TMPDIR/$g.err
        n=$(grep -Ec " error .*$line_re" "$err")
        [ "$n" -eq 1 ] || e2e_fail "$g: $n error lines naming g1 with FT_ERR_PROC_FAILED, want 1"
        ! grep -q 'FT_ERR_TIMEOUT' "$err" || e2e_fail "$g: a wait ended at its deadline: $(grep 'FT_ERR_TIMEOUT' "$err" | head -n 1)"
        n=$(grep -c "ucx allreduce" "$err")
        [ "$n" -eq 0 ] || e2e_fail "$g: the ucx backend logged the failure too ($n lines)"
        grep -q 'quorum [0-9]*: 2 groups (2 participate)' "$err" ||
            e2e_fail "$g: no quorum of the 2 survivors after g1's death"
        e2e_log "$g: $(grep -E "$line_re" "$err" | sed 's/.*\] //')"
    done
    e2e_check_final 1 g0 g2
    kill -KILL "$E2E_LH_PID" 2>/dev/null
}

unset UCX_POSIX_ERROR_HANDLING
e2e_log "UCX's choice of transports"
run
UCX_POSIX_ERROR_HANDLING=y
export UCX_POSIX_ERROR_HANDLING
e2e_log "UCX_POSIX_ERROR_HANDLING=y (shared memory, keepalive)"
run
# FTMPI_BACKEND=auto takes ucx here (every member offers it: FTMPI_UCX=1)
# and loads UCX to see that it can: the keepalive must still come from
# FTMPI_TIMEOUT_MS
unset FTMPI_BACKEND
FTMPI_UCX=1
export FTMPI_UCX
e2e_log "FTMPI_BACKEND=auto, UCX_POSIX_ERROR_HANDLING=y"
run
for g in g0 g2; do
    grep -q 'FTMPI_BACKEND=auto: ucx from quorum' "$TEST_TMPDIR/$g.err" || e2e_fail "auto: $g did not take ucx"
done
echo "PASS ($TEST_NAME)"
