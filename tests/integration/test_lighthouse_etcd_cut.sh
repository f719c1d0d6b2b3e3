#!/bin/sh
# test_lighthouse_etcd_cut.sh - the leader cut from etcd but not from the
# groups: lighthouse a talks to etcd through a relay (etcd_probe relay) and
# leads; the relay is SIGSTOPped (a's etcd calls hang, its groups still
# reach it).  a's lease runs out: it steps down and issues nothing, a
# standby leads, and a group that asks a first is sent on and gets an id
# above the last one.  After SIGCONT a stands by, naming the new leader.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
. "$top_srcdir/tests/integration/etcd_lib.sh"
T=$TEST_TMPDIR
P=/ftmpi/cut-$$

start_etcd e1
setsid "$ETCD_PROBE" relay "${ETCD_URL#http://}" >"$T/relay.out" 2>&1 </dev/null &
RELAY=$!
register_pgid $RELAY
wait_until 30 file_has "$T/relay.out" '^relay listening on ' || die "the relay did not start"
RELAY_URL=http://$(sed -n 's/^relay listening on //p' "$T/relay.out")

lh() { # lh NAME URL
    start_lighthouse "lh_$1" --min-replicas 1 --join-timeout-ms 0 --initial-quorum-id 0 \
        --heartbeat-timeout-ms 5000 --etcd "$2" --etcd-prefix "$P" --log-level info
    eval "PID_$1=\$LH_PID ADDR_$1=\$LH_ADDR"
}
lh a "$RELAY_URL"
wait_until 60 file_has "$T/lh_a.err" 'etcd: elected leader' || die "a was not elected: $(cat "$T/lh_a.err")"
lh b "$ETCD_URL"
lh c "$ETCD_URL"
ALL=$ADDR_a,$ADDR_b,$ADDR_c

timeout 60 "$PROBE" quorum "$ALL" g1 0 30000 >"$T/q1.out" 2>&1 || die "quorum 1: $(cat "$T/q1.out")"
Q1=$(sed -n 's/^quorum \([0-9]*\) .*/\1/p' "$T/q1.out")
file_has "$T/lh_a.err" "quorum $Q1: " || die "quorum $Q1 was not a's"

kill -STOP "-$RELAY"
wait_until 60 file_has "$T/lh_a.err" 'no longer the leader' ||
    die "a did not step down when cut from etcd: $(tail -5 "$T/lh_a.err")"
before=$(count_lines "$T/lh_a.err" 'quorum [0-9]+: ')
other_elected() { file_has "$T/lh_b.err" 'etcd: elected leader' || file_has "$T/lh_c.err" 'etcd: elected leader'; }
wait_until 60 other_elected || die "no standby was elected within 60 s of the cut"
# a first: it is reachable but no longer leads
timeout 60 "$PROBE" quorum "$ALL" g1 1 30000 >"$T/q2.out" 2>&1 || die "quorum 2: $(cat "$T/q2.out")"
Q2=$(sed -n 's/^quorum \([0-9]*\) .*/\1/p' "$T/q2.out")
[ -n "$Q2" ] && [ "$Q2" -gt "$Q1" ] || die "id '$Q2' after the cut, not above $Q1"
[ "$(count_lines "$T/lh_a.err" 'quorum [0-9]+: ')" = "$before" ] ||
    die "a issued a quorum while cut from etcd: $(tail -5 "$T/lh_a.err")"
[ "$(etcd_get "$P/quorum_id")" = "$Q2" ] || die "etcd holds '$(etcd_get "$P/quorum_id")', want $Q2"

kill -CONT "-$RELAY"
new=$(etcd_get "$P/leader")
wait_until 60 file_has "$T/lh_a.err" "standby; the leader is $new" ||
    die "a does not name the leader $new after the cut healed: $(tail -5 "$T/lh_a.err")"
echo "ids $Q1, $Q2; the leader after the cut: $new"
echo "PASS ($TEST_NAME)"
