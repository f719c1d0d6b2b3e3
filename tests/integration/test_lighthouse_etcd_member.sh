#!/bin/sh
# test_lighthouse_etcd_member.sh - three lighthouses over a three-member
# etcd: one etcd member (the first of every lighthouse's list) is killed;
# the lighthouses reach etcd through the others and quorums go on being
# issued and recorded (the leader keeps its lease unless etcd's own
# election outlasts it); then the leader is killed and a standby leads,
# with ids above the recorded one.  The job has a secret: redirects and
# failovers go over authenticated connections, as every call.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
. "$top_srcdir/tests/integration/etcd_lib.sh"
T=$TEST_TMPDIR
P=/ftmpi/member-$$

start_etcd_cluster e
"$LH" --make-token "$T/token" >/dev/null || die "cannot make a job secret"
FTMPI_TOKEN_FILE=$T/token
export FTMPI_TOKEN_FILE
ETCD_URL=$ETCD_URL2 # etcd_get asks a member that stays
for n in a b c; do
    start_lighthouse "lh_$n" --min-replicas 1 --join-timeout-ms 0 --initial-quorum-id 0 \
        --heartbeat-timeout-ms 5000 --etcd "$ETCD_URLS" --etcd-prefix "$P" --log-level info \
        --token-file "$T/token"
    eval "PID_$n=\$LH_PID ADDR_$n=\$LH_ADDR"
    ALL=${ALL:+$ALL,}$LH_ADDR
done
leader() {
    for _n in ${1:-a b c}; do
        file_has "$T/lh_$_n.err" 'etcd: elected leader' && { echo "$_n"; return 0; }
    done
    return 1
}
wait_until 60 leader >/dev/null || die "no lighthouse was elected within 60 s"
L=$(leader)

quorum() { # quorum N: a quorum of a new incarnation of g1; its id in Q
    timeout 60 "$PROBE" quorum "$ALL" g1 "$1" 30000 >"$T/q$1.out" 2>&1 ||
        die "quorum $1: $(cat "$T/q$1.out")"
    Q=$(sed -n 's/^quorum \([0-9]*\) .*/\1/p' "$T/q$1.out")
    [ "$(etcd_get "$P/quorum_id")" = "$Q" ] ||
        die "quorum $1: id $Q, etcd holds '$(etcd_get "$P/quorum_id")'"
}
quorum 1
Q1=$Q
# without the secret every lighthouse refuses, standbys included
FTMPI_TOKEN_FILE= timeout 60 "$PROBE" quorum "$ALL" intruder 0 5000 >"$T/intruder.out" 2>&1 &&
    die "a client without the job secret got a quorum: $(cat "$T/intruder.out")"
grep -q 'authentication failed' "$T/intruder.out" || die "the intruder: $(cat "$T/intruder.out")"
kill -KILL "$ETCD_PID1"
# longer than the lease (2 s): the leader kept it through the other members
n=0
while [ $n -lt 4 ]; do
    n=$((n + 1))
    quorum $((n + 1))
    sleep 1
done
file_has "$T/lh_$L.err" 'no longer the leader' &&
    echo "note: $L stepped down while etcd elected a new leader of its own"
Q2=$Q
# the leader now: the one etcd names
cur=$(etcd_get "$P/leader")
L=
for n in a b c; do eval "[ \"\$ADDR_$n\" = \"$cur\" ]" && L=$n; done
[ -n "$L" ] || die "etcd names '$cur' the leader, no lighthouse of ours"
before=$(for n in a b c; do [ "$n" = "$L" ] || count_lines "$T/lh_$n.err" 'etcd: elected leader'; done | tr '\n' ' ')
[ "$Q2" -gt "$Q1" ] || die "ids did not grow: $Q1, then $Q2"

eval "kill -KILL \$PID_$L"
elected_again() {
    [ "$(for n in a b c; do [ "$n" = "$L" ] || count_lines "$T/lh_$n.err" 'etcd: elected leader'; done | tr '\n' ' ')" != "$before" ]
}
wait_until 60 elected_again || die "no standby was elected within 60 s"
quorum 9
[ "$Q" -gt "$Q2" ] || die "the new leader issued $Q, not above $Q2"
echo "ids $Q1, $Q2, $Q; leader $L killed, then $(etcd_get "$P/leader") led"
echo "PASS ($TEST_NAME)"
