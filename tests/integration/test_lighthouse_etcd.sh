#!/bin/sh
# test_lighthouse_etcd.sh - three ftmpi-lighthouses of one job elected
# through a real etcd (lighthouse/leader.h): one leads, the standbys
# redirect (FT_ERR_NOT_LEADER naming it) and a client given the three
# follows; the leader records every new quorum id and the groups killed
# from its dashboard in etcd; SIGKILLed, a
# standby leads and issues ids above the stored one (every lighthouse
# starts its ids at 1 here and the clients report none: without the
# stored counter the new leader would issue id 1 again); SIGSTOPped beyond
# its lease, another leads and after SIGCONT the old one issues nothing.
# Every lighthouse names the job's lighthouses and their roles
# (/status.json, /metrics, the dashboard), the dead one gone with its lease.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
. "$top_srcdir/tests/integration/etcd_lib.sh"
T=$TEST_TMPDIR
P=/ftmpi/test-$$

start_etcd e1
for n in a b c; do
    start_lighthouse "lh_$n" --min-replicas 1 --join-timeout-ms 0 --initial-quorum-id 0 \
        --heartbeat-timeout-ms 2000 --etcd "$ETCD_URL" --etcd-prefix "$P" --etcd-ttl 2 \
        --log-level info --http-bind 127.0.0.1:0
    eval "PID_$n=\$LH_PID ADDR_$n=\$LH_ADDR HTTP_$n=\$LH_HTTP"
done
ALL=$ADDR_a,$ADDR_b,$ADDR_c

# the leader: the one whose log says so; etcd names it
leader() {
    for _n in ${1:-a b c}; do
        file_has "$T/lh_$_n.err" 'etcd: elected leader' && { echo "$_n"; return 0; }
    done
    return 1
}
wait_until 60 leader >/dev/null || die "no lighthouse was elected within 60 s: $(cat "$T"/lh_*.err)"
L=$(leader)
eval "LADDR=\$ADDR_$L LPID=\$PID_$L"
[ "$(etcd_get "$P/leader")" = "$LADDR" ] || die "etcd names '$(etcd_get "$P/leader")' the leader, not $LADDR"
S=$(for n in a b c; do [ "$n" = "$L" ] || echo "$n"; done | head -1)
eval "SADDR=\$ADDR_$S"

# /metrics and /status.json name the roles and the leader
eval "LH_HTTP=\$HTTP_$L"
[ "$(metric ftmpi_lighthouse_leader)" = 1 ] || die "the leader's ftmpi_lighthouse_leader is not 1"
eval "LH_HTTP=\$HTTP_$S"
leader_named() { [ "$(metric "ftmpi_lighthouse_leader_info{leader=\"$LADDR\"}")" = 1 ]; }
wait_until 30 leader_named || die "the standby's /metrics does not name $LADDR: $(grep leader "$HTTP_BODY")"
[ "$(metric ftmpi_lighthouse_leader)" = 0 ] || die "a standby's ftmpi_lighthouse_leader is not 0"
http GET /status.json
grep -q "\"role\":\"standby\",\"leader\":\"$LADDR\"" "$HTTP_BODY" ||
    die "the standby's status.json: $(head -c 300 "$HTTP_BODY")"

# every lighthouse names the three (each keeps PREFIX/lighthouses/ADDR on
# a lease of its own) with their roles: /status.json "lighthouses",
# /metrics ftmpi_lighthouse_members_info, the dashboard
role_of() { [ "$1" = "$LADDR" ] && echo leader || echo standby; }
names_all() {
    http GET /status.json
    for _a in $ADDR_a $ADDR_b $ADDR_c; do
        grep -q "{\"address\":\"$_a\",\"role\":\"$(role_of "$_a")\"}" "$HTTP_BODY" || return 1
    done
    http GET /metrics
    for _a in $ADDR_a $ADDR_b $ADDR_c; do
        grep -q "^ftmpi_lighthouse_members_info{address=\"$_a\",role=\"$(role_of "$_a")\"} 1\$" \
            "$HTTP_BODY" || return 1
    done
    [ "$(grep -c '^ftmpi_lighthouse_members_info{' "$HTTP_BODY")" = 3 ] || return 1
    http GET /
    grep -q "<li>$LADDR leader</li>" "$HTTP_BODY"
}
for n in a b c; do
    eval "LH_HTTP=\$HTTP_$n"
    wait_until 30 names_all || die "lighthouse $n does not name the three lighthouses: $(grep -o '"lighthouses":[^]]*]' "$T/http.body.raw" || head -c 400 "$HTTP_BODY")"
done
eval "LH_HTTP=\$HTTP_$S"

# a standby names the leader; the client follows it
timeout 30 "$PROBE" quorum "$SADDR" g1 0 10000 77 >"$T/q1.out" 2>&1 ||
    die "a quorum through the standby $SADDR: $(cat "$T/q1.out")"
Q1=$(sed -n 's/^quorum \([0-9]*\) .*/\1/p' "$T/q1.out")
[ "$Q1" = 1 ] || die "first quorum: want id 1, got: $(cat "$T/q1.out")"
[ "$(etcd_get "$P/quorum_id")" = 1 ] || die "etcd's quorum id: '$(etcd_get "$P/quorum_id")', want 1"
etcd_get "$P/last_quorum" | grep -q '"replica_id":"g1"' ||
    die "etcd's last quorum: $(etcd_get "$P/last_quorum")"
etcd_get "$P/settings" | grep -q '^job=ftmpi min_replicas=1 join_timeout_ms=0 heartbeat_timeout_ms=2000 ' ||
    die "etcd's settings: $(etcd_get "$P/settings")"
file_has "$T/lh_$S.err" 'quorum 1:' && die "the standby issued a quorum: $(cat "$T/lh_$S.err")"

# g1 (incarnation 77) killed from the leader's dashboard stays killed under
# the next leader (the killed groups are in etcd)
eval "LH_HTTP=\$HTTP_$L"
http POST /replica/g1/kill
[ "$HTTP_CODE" = 200 ] || die "kill g1: HTTP $HTTP_CODE $(cat "$HTTP_BODY")"
saved() { etcd_get "$P/killed" | grep -q '^77 g1$'; }
wait_until 30 saved || die "the kill of g1 is not in etcd: '$(etcd_get "$P/killed")'"

# the leader SIGKILLed: a standby leads, above the stored id
kill -KILL "$LPID"
OLD=$L
wait_until 60 leader "$(for n in a b c; do [ "$n" = "$OLD" ] || echo "$n"; done)" >/dev/null ||
    die "no standby was elected within 60 s of the leader's SIGKILL"
L=$(leader "$(for n in a b c; do [ "$n" = "$OLD" ] || echo "$n"; done)")
eval "LADDR=\$ADDR_$L LPID=\$PID_$L"
timeout 30 "$PROBE" quorum "$ALL" g1 1 20000 77 >"$T/k2.out" 2>&1 &&
    die "the killed g1 was let in by the new leader: $(cat "$T/k2.out")"
grep -q 'asked this group to stop' "$T/k2.out" || die "the killed g1 under the new leader: $(cat "$T/k2.out")"
# a new incarnation of g1 (a restart) is an ordinary group again
timeout 30 "$PROBE" quorum "$ALL" g1 1 20000 >"$T/q2.out" 2>&1 ||
    die "a quorum after the failover: $(cat "$T/q2.out")"
Q2=$(sed -n 's/^quorum \([0-9]*\) .*/\1/p' "$T/q2.out")
[ -n "$Q2" ] && [ "$Q2" -gt "$Q1" ] || die "the new leader issued id '$Q2', not above $Q1"
[ "$(etcd_get "$P/quorum_id")" = "$Q2" ] || die "etcd's quorum id: '$(etcd_get "$P/quorum_id")', want $Q2"
# the killed leader's key went with its lease: the two left name each other
eval "LH_HTTP=\$HTTP_$L"
two_left() {
    http GET /status.json
    grep -q "{\"address\":\"$LADDR\",\"role\":\"leader\"}" "$HTTP_BODY" &&
        [ "$(grep -o '"address":"[^"]*","role":"[a-z]*"}' "$HTTP_BODY" | grep -c .)" = 2 ]
}
wait_until 30 two_left || die "after the SIGKILL the new leader names: $(grep -o '"lighthouses":[^]]*]' "$HTTP_BODY")"

# the leader SIGSTOPped beyond its lease: the last one leads; after
# SIGCONT the stopped one issues nothing and sends the group on
kill -STOP "$LPID"
STOPPED=$L
LAST=$(for n in a b c; do [ "$n" = "$OLD" ] || [ "$n" = "$STOPPED" ] || echo "$n"; done)
wait_until 60 leader "$LAST" >/dev/null || die "the last standby was not elected within 60 s of SIGSTOP"
kill -CONT "$LPID"
before=$(count_lines "$T/lh_$STOPPED.err" 'quorum [0-9]+: ')
timeout 30 "$PROBE" quorum "$LADDR" g1 2 20000 >"$T/q3.out" 2>&1 ||
    die "a quorum asked of the woken leader: $(cat "$T/q3.out")"
Q3=$(sed -n 's/^quorum \([0-9]*\) .*/\1/p' "$T/q3.out")
[ -n "$Q3" ] && [ "$Q3" -gt "$Q2" ] || die "id '$Q3' after the SIGSTOP, not above $Q2"
after=$(count_lines "$T/lh_$STOPPED.err" 'quorum [0-9]+: ')
[ "$before" = "$after" ] || die "the woken lighthouse issued a quorum: $(tail -5 "$T/lh_$STOPPED.err")"
file_has "$T/lh_$LAST.err" "quorum $Q3: " || die "quorum $Q3 is not the new leader's: $(tail -5 "$T/lh_$LAST.err")"
echo "ids $Q1 $Q2 $Q3; leaders $OLD, $STOPPED, $LAST"
echo "PASS ($TEST_NAME)"
