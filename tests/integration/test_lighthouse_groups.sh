#!/bin/sh
# test_lighthouse_groups.sh - 64 simulated groups, each with its own
# connection, heartbeating every 100 ms and asking for quorums:
#  1. for 20+ rounds every group receives the same quorum (id and member
#     list) and every quorum of 64 reaches all 64;
#  2. 8 groups (separate processes) are SIGKILLed: the next quorum excludes
#     them, with a new id (the simulated groups send no incarnation, so the
#     heartbeat timeout drops them; the time from the kill to a survivor
#     receiving the quorum is logged, not asserted: a loaded machine must
#     not fail the test);
#  3. restarted, the 8 are members of a later quorum of 64.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
T=$TEST_TMPDIR
HB_TIMEOUT=1000
TICK=100

start_lighthouse lh --min-replicas 2 --join-timeout-ms 300 --heartbeat-timeout-ms $HB_TIMEOUT \
    --quorum-tick-ms $TICK --initial-quorum-id 0
SIMARGS="--step-ms 50 --heartbeat-ms 100 --timestamps --timeout-ms 20000"
start_sim a --groups 56 $SIMARGS
start_b() { # ROUND: the 8 single-group processes g56..g63
    B_PIDS=""
    for i in 0 1 2 3 4 5 6 7; do
        start_sim "b$i.$1" --groups 1 --first $((56 + i)) $SIMARGS
        B_PIDS="$B_PIDS $SIM_PID"
    done
}
start_b 1

# ---- 1. rounds of 64 -----------------------------------------------------
# min over the 64 groups of the number of 64-member quorums received
min_full() {
    cat "$T"/a.out "$T"/b?.1.out 2>/dev/null | awk '
        $7 == "members" && $8 == 64 { n[$2]++ }
        END { m = -1; c = 0; for (g in n) { c++; if (m < 0 || n[g] < m) m = n[g] }
              print (c == 64 ? m : 0) }'
}
full20() { [ "$(min_full)" -ge 20 ]; }
wait_until 180 full20 || die "not every group got 20 quorums of 64 (min $(min_full))"
cat "$T"/a.out "$T"/b?.1.out >"$T/phase1.txt"
# per quorum (id, created): one member list, 64 distinct receivers (the last
# one may still be in flight), one id for all of them
awk '
    $7 != "members" || $8 != 64 { next }
    { key = $4 " " $NF; list = $0; sub(/^.*members 64 /, "", list); sub(/ created .*$/, "", list) }
    !(key in lists) { lists[key] = list; order[++nk] = key; ids[$4] = 1 }
    lists[key] != list { print "different member lists for quorum " key; bad = 1 }
    (key SUBSEP $2) in got { print $2 " got quorum " key " twice"; bad = 1 }
    { got[key, $2] = 1; recv[key]++ }
    END {
        last = 0
        for (i = 1; i <= nk; i++) { split(order[i], kc, " "); if (kc[2] + 0 > last) last = kc[2] + 0 }
        full = 0
        for (i = 1; i <= nk; i++) {
            split(order[i], kc, " ")
            if (recv[order[i]] == 64) full++
            else if (kc[2] + 0 != last) { print "quorum " order[i] " reached " recv[order[i]] " groups"; bad = 1 }
        }
        nid = 0; for (q in ids) nid++
        if (nid != 1) { print nid " different ids for the same 64 members"; bad = 1 }
        if (full < 20) { print "only " full " quorums reached all 64"; bad = 1 }
        if (lists[order[1]] !~ /^\[g00 g01 .* g62 g63\]$/) { print "member list " lists[order[1]]; bad = 1 }
        exit bad
    }' "$T/phase1.txt" >"$T/check1.txt" || die "phase 1: $(head -5 "$T/check1.txt")"
ID64=$(awk '$7 == "members" && $8 == 64 { print $4; exit }' "$T/phase1.txt")
grep -q ' error' "$T/phase1.txt" && die "errors in phase 1: $(grep ' error' "$T/phase1.txt" | head -3)"

# ---- 2. SIGKILL 8 groups -------------------------------------------------
T0=$(now_ms)
kill -KILL $B_PIDS
first56() { # timestamp of the first quorum of 56 received by g00 after the kill
    awk -v t0="$T0" '{ ts = substr($1, 2, length($1) - 2) + 0 }
        ts >= t0 && $2 == "g00" && $7 == "members" && $8 == 56 { printf "%.0f %s\n", ts, $4; exit }' "$T/a.out"
}
have56() { [ -n "$(first56)" ]; }
wait_until 60 have56 || die "no quorum of 56 within 60 s after the kill: $(tail -2 "$T/a.out")"
set -- $(first56)
T1=$1
ID56=$2
DT=$((T1 - T0))
echo "quorum $ID56 without the 8 killed groups reached g00 $DT ms after the kill"
[ "$ID56" -gt "$ID64" ] || die "quorum id $ID56 after the kill is not above $ID64"
grep "quorum $ID56 .* members 56 " "$T/a.out" | grep -q 'g5[6-9]\|g6[0-3]' &&
    die "quorum $ID56 still lists a killed group"
survivors_got() { [ "$(grep -c "quorum $ID56 .* members 56 \[g00 .* g55\]" "$T/a.out")" -ge 56 ]; }
wait_until 60 survivors_got || die "not every survivor received quorum $ID56"

# ---- 3. restart the 8 ------------------------------------------------------
T2=$(now_ms)
start_b 2
rejoined() {
    for i in 0 1 2 3 4 5 6 7; do
        file_has "$T/b$i.2.out" " members 64 \\[g00 .* g63\\]" || return 1
    done
    awk -v t2="$T2" '{ ts = substr($1, 2, length($1) - 2) + 0 }
        ts >= t2 && $2 == "g00" && $7 == "members" && $8 == 64 { f = 1 } END { exit !f }' "$T/a.out"
}
wait_until 60 rejoined || die "the restarted groups are not in a quorum of 64: $(tail -1 "$T/b0.2.out")"
ID64B=$(awk '$7 == "members" && $8 == 64 { print $4; exit }' "$T/b0.2.out")
[ "$ID64B" -gt "$ID56" ] || die "quorum id $ID64B after the restart is not above $ID56"
pid_alive "$LH_PID" || die "lighthouse died"
exit 0
