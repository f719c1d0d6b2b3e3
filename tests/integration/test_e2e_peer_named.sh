#!/bin/sh
# Issue 16 item 4: a failed cross-group collective names the failed peer.
# Of 3 groups (1 rank each; replica ranks g0=0, g1=1, g2=2 in the tcp
# ring g0 -> g1 -> g2 -> g0), g1 sends itself SIGKILL at step 25 after its
# compute; g1 takes 200 ms a step, the others 20 ms, so g0 and g2 are
# surely waiting for it in the step's FT_Allreduce.  Both
# survivors are g1's neighbours (g0 its previous rank, g2 its next): each
# must log ONE error line naming replica g1, its replica rank and its slice
# address, and write a collective_failed event with peer "g1" and that
# address; both must name the same address (g0 knows it as the address it
# connected to, g2 from the store), and the tcp ring's own line stays at
# debug level.  g1 is not restarted (--max-restarts 0); the survivors
# finish without it.  FTMPI_BACKEND=tcp: the tcp ring's address and its
# own log line are what is checked (auto takes ucx in a build with UCX;
# test_e2e_ucx_kill.sh checks ucx's named peer).
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
FTMPI_BACKEND=tcp
export FTMPI_BACKEND

DIE_AT=25
e2e_lighthouse_start 1
e2e_group_start g0 1 --steps 40 --sleep-ms 20 --print-every 5
E2E_RUN_FLAGS="--max-restarts 0" e2e_group_start g1 1 --steps 40 --sleep-ms 200 --print-every 5 \
    --die-at-step "$DIE_AT"
e2e_group_start g2 1 --steps 40 --sleep-ms 20 --print-every 5
e2e_wait_agents 90 g0 g2

_g1_died() { file_has "$TEST_TMPDIR/g1.err" "SIGKILL to myself at step $DIE_AT"; }
wait_until 5 _g1_died || e2e_fail "g1 did not kill itself at step $DIE_AT"

line_re="FT_Allreduce: the connection to replica g1 (replica rank 1 of 3, 127\.0\.0\.1:[0-9][0-9]*) broke in quorum [0-9]*: FT_ERR_PROC_FAILED"
addrs=
for g in g0 g2; do
    err=$TEST_TMPDIR/$g.err ev=$TEST_TMPDIR/$g.events
    n=$(grep -c " error .*$line_re" "$err")
    [ "$n" -eq 1 ] || e2e_fail "$g: $n error lines naming g1 and its address, want 1"
    # log once: the ring's own line is debug, so no other error or warning
    # about the collective
    n=$(grep -c "tcp ring allreduce" "$err")
    [ "$n" -eq 0 ] || e2e_fail "$g: the tcp ring logged the failure too ($n lines)"
    log_addr=$(grep "$line_re" "$err" | sed -n 's/.*replica rank 1 of 3, \([^)]*\)).*/\1/p')
    ev_line=$(grep '"event":"collective_failed"' "$ev" | head -n 1)
    [ -n "$ev_line" ] || e2e_fail "$g: no collective_failed event in $ev"
    echo "$ev_line" | grep -q '"peer":"g1","peer_replica_rank":1,' ||
        e2e_fail "$g: the event does not name g1: $ev_line"
    echo "$ev_line" | grep -q '"error_name":"FT_ERR_PROC_FAILED"' ||
        e2e_fail "$g: the event's error is not FT_ERR_PROC_FAILED: $ev_line"
    ev_addr=$(echo "$ev_line" | sed -n 's/.*"peer_address":"\([^"]*\)".*/\1/p')
    [ "$ev_addr" = "$log_addr" ] ||
        e2e_fail "$g: the event names address '$ev_addr', the log '$log_addr'"
    e2e_log "$g names g1 at $log_addr: $ev_line"
    addrs="$addrs $log_addr"
done
set -- $addrs
[ "$1" = "$2" ] || e2e_fail "g0 and g2 name different addresses for g1: $1, $2"
echo "PASS ($TEST_NAME)"
