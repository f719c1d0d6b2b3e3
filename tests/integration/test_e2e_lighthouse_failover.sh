#!/bin/sh
# Three lighthouses elected through a real etcd (ftmpi-lighthouse --etcd)
# and two groups given all three (FTMPI_LIGHTHOUSE=a,b,c).  Mid-training
# the leader is SIGKILLed and at once group g1 too: a standby leads, g0
# moves to it and goes on, g1 is restarted, rejoins and heals.  Then the
# new leader is SIGSTOPped beyond its lease: the last one leads, the
# groups go on, and after SIGCONT the stopped one issues no quorum.  At
# the end: equal states, every rank at the same step, and no quorum id
# issued twice (one membership per id in the groups' event logs, ids
# never going down in a log).
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
. "$top_srcdir/tests/integration/etcd_lib.sh"
T=$TEST_TMPDIR
P=/ftmpi/e2e-$$
HB=2000 # the groups' heartbeat timeout: the etcd lease (2 s, etcd's least) fits in it

start_etcd e1
ALL=
for n in a b c; do
    setsid "$E2E_LH_BIN" --bind 127.0.0.1:0 --min-replicas 1 --heartbeat-timeout-ms $HB \
        --join-timeout-ms "$E2E_JOIN_TIMEOUT_MS" --quorum-tick-ms 50 --log-level info \
        --etcd "$ETCD_URL" --etcd-prefix "$P" --etcd-ttl 2 >"$T/lh_$n.log" 2>&1 </dev/null &
    eval "PID_$n=$!"
    register_pid $!
    wait_until 60 file_has "$T/lh_$n.log" 'listening on' || e2e_fail "lighthouse $n did not start"
    addr=$(sed -n 's/.*listening on \([^ ]*\) .*/\1/p' "$T/lh_$n.log")
    ALL=${ALL:+$ALL,}$addr
done
FTMPI_LIGHTHOUSE=$ALL
export FTMPI_LIGHTHOUSE

# leader [NAMES]: the one of NAMES (default all) whose log says it was elected
leader() {
    for _n in ${1:-a b c}; do
        file_has "$T/lh_$_n.log" 'etcd: elected leader' && { echo "$_n"; return 0; }
    done
    return 1
}
others() { for _n in a b c; do case " $* " in *" $_n "*) ;; *) echo "$_n" ;; esac; done; }
wait_until 60 leader >/dev/null || e2e_fail "no lighthouse was elected within 60 s"
L1=$(leader)
e2e_log "lighthouses $ALL; leader $L1"

for g in g0 g1; do
    e2e_group_start $g 1 --steps 220 --sleep-ms 20 --print-every 5
done
e2e_wait_step g0 30 60
e2e_wait_step g1 30 60

eval "kill -KILL \$PID_$L1"
e2e_kill_group g1
at=$(e2e_step g0)
e2e_log "leader $L1 and group g1 SIGKILLed at step $at of g0"
wait_until 60 leader "$(others "$L1")" >/dev/null || e2e_fail "no standby was elected within 60 s"
L2=$(leader "$(others "$L1")")
e2e_log "leader $L2 elected"
e2e_wait_step g0 $((at + 20)) 60
e2e_wait_restart g1 2 60
e2e_wait_step g1 $((at + 20)) 90

eval "kill -STOP \$PID_$L2"
at=$(e2e_step g0)
e2e_log "leader $L2 SIGSTOPped at step $at of g0"
L3=$(others "$L1 $L2")
wait_until 60 leader "$L3" >/dev/null || e2e_fail "lighthouse $L3 was not elected within 60 s of the SIGSTOP"
e2e_log "leader $L3 elected"
e2e_wait_step g0 $((at + 20)) 90
before=$(count_lines "$T/lh_$L2.log" 'quorum [0-9]+: ')
eval "kill -CONT \$PID_$L2"
e2e_wait_step g0 $((at + 40)) 60
e2e_wait_agents 120 g0 g1
after=$(count_lines "$T/lh_$L2.log" 'quorum [0-9]+: ')
[ "$before" = "$after" ] || e2e_fail "lighthouse $L2 issued a quorum after SIGCONT: $(tail -5 "$T/lh_$L2.log")"
file_has "$T/lh_$L2.log" 'no longer the leader' || e2e_fail "lighthouse $L2 did not step down"

e2e_check_states g0 g1
e2e_check_loss g0 g1
e2e_check_final 1 g0 g1
# no quorum id twice: each id has one membership in every log, and a
# group's ids never go down
sed -n 's/.*"event":"quorum".*"quorum_id":\([0-9][0-9]*\),"members":\(\[[^]]*\]\).*/\1 \2/p' \
    "$T/g0.events" "$T/g1.events" | sort -u >"$T/ids"
[ -s "$T/ids" ] || e2e_fail "no quorum in the event logs"
dup=$(awk '{ print $1 }' "$T/ids" | uniq -d)
[ -z "$dup" ] || e2e_fail "quorum id(s) issued for two memberships: $(grep -E "^($(echo $dup | tr ' ' '|')) " "$T/ids")"
for g in g0 g1; do
    sed -n 's/.*"event":"quorum".*"quorum_id":\([0-9][0-9]*\).*/\1/p' "$T/$g.events" |
        awk -v g=$g '$1 < last { print g ": quorum id " $1 " after " last; exit 1 } { last = $1 }' ||
        e2e_fail "quorum ids went down"
done
e2e_log "$(wc -l <"$T/ids") quorum ids, each with one membership; leaders $L1, $L2, $L3"
echo "PASS ($TEST_NAME)"
