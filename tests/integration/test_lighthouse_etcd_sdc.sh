#!/bin/sh
# test_lighthouse_etcd_sdc.sh - an open SDC verdict survives a failover
# (lighthouse/sdc.h rule 2, server_gate.c): two ftmpi-lighthouses of one
# job elected through a real etcd; three groups ask at step 5 with
# fingerprints and g3's differs from the majority's, so the leader judges
# it a minority and writes the open verdict to PREFIX/sdc under its
# leadership.  The leader SIGKILLed, the standby leads; the three ask at
# step 5 again without fingerprints (the step did not commit) and the new
# leader still names g3 a minority that heals from the majority: it took
# the verdict over from etcd (without it g3 would be a heal source again).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
. "$top_srcdir/tests/integration/etcd_lib.sh"
T=$TEST_TMPDIR
P=/ftmpi/test-sdc-$$

start_etcd e1
for n in a b; do
    start_lighthouse "lh_$n" --min-replicas 3 --join-timeout-ms 0 --heartbeat-timeout-ms 5000 \
        --etcd "$ETCD_URL" --etcd-prefix "$P" --etcd-ttl 2 --log-level info
    eval "PID_$n=\$LH_PID ADDR_$n=\$LH_ADDR"
done
ALL=$ADDR_a,$ADDR_b

leader() {
    for _n in ${1:-a b}; do
        file_has "$T/lh_$_n.err" 'etcd: elected leader' && { echo "$_n"; return 0; }
    done
    return 1
}
wait_until 60 leader >/dev/null || die "no lighthouse was elected within 60 s: $(cat "$T"/lh_*.err)"
L=$(leader)
eval "LADDR=\$ADDR_$L LPID=\$PID_$L"

# three groups (incarnations 11-13) ask at STEP, with fingerprints when
# sums are given: ask_all ROUND STEP [SUM1 SUM2 SUM3]
ask_all() {
    _r=$1
    _st=$2
    shift 2
    _i=1
    for g in g1 g2 g3; do
        _sum=
        [ $# -gt 0 ] && { _sum=$1; shift; }
        # shellcheck disable=SC2086 # _sum: no word when empty
        timeout 60 "$PROBE" quorum "$ALL" "$g" "$_st" 40000 "1$_i" $_sum >"$T/$_r.$g.out" 2>&1 &
        eval "_p$_i=\$!"
        _i=$((_i + 1))
    done
    _fail=0
    wait "$_p1" || _fail=1
    wait "$_p2" || _fail=1
    wait "$_p3" || _fail=1
    [ $_fail = 0 ] || die "round $_r: a quorum call failed: $(cat "$T/$_r".*.out)"
}
ask_all r1 5 100 100 200
grep -q '^sdc g3 verdict 1: ' "$T/r1.g1.out" ||
    die "g3 was not judged a minority: $(cat "$T"/r1.*.out) $(grep SDC "$T/lh_$L.err")"
grep -q '^sdc g[12] ' "$T/r1.g1.out" && die "a majority group has a verdict: $(cat "$T/r1.g1.out")"

# the open verdict is in etcd (written at the leader's next call)
saved() {
    "$PROBE" heartbeat "$LADDR" g1 >/dev/null 2>&1
    etcd_get "$P/sdc" | grep -q "^5	0	1	3	2	g3	g[12]	w\$"
}
wait_until 30 saved || die "g3's verdict is not in etcd: '$(etcd_get "$P/sdc")'"

# the leader SIGKILLed: the standby leads and keeps g3 a minority at step 5
kill -KILL "$LPID"
OLD=$L
S=$(for n in a b; do [ "$n" = "$OLD" ] || echo "$n"; done)
wait_until 60 leader "$S" >/dev/null || die "the standby was not elected within 60 s of the SIGKILL"
ask_all r2 5
grep -q '^sdc g3 verdict 1: step 5: group rank 0, buffer .w. differs from g[12]' "$T/r2.g1.out" ||
    die "after the failover g3 is no longer a minority: $(cat "$T"/r2.*.out)"
grep -q '^sdc g[12] ' "$T/r2.g1.out" && die "a majority group has a verdict: $(cat "$T/r2.g1.out")"
file_has "$T/lh_$S.err" '1 open SDC verdicts taken over' ||
    die "the new leader took no verdict over: $(tail -5 "$T/lh_$S.err")"

# a step further the verdict is closed, in etcd too
eval "LADDR=\$ADDR_$S"
ask_all r3 6
grep -q '^sdc ' "$T/r3.g1.out" && die "g3 is still a minority at step 6: $(cat "$T/r3.g1.out")"
closed() {
    "$PROBE" heartbeat "$LADDR" g1 >/dev/null 2>&1
    [ -z "$(etcd_get "$P/sdc")" ]
}
wait_until 30 closed || die "the closed verdict is still in etcd: '$(etcd_get "$P/sdc")'"
echo "PASS ($TEST_NAME)"
