#!/bin/sh
# test_partition.sh - real network partitions (issue 11 item 6).  As root,
# three network namespaces joined by veth pairs through a bridge:
#     L  10.77.N.1  the lighthouse (on the bridge)
#     A  10.77.N.2  groups g0 and g1 (the majority)
#     B  10.77.N.3  group g2 (the minority)
# three groups of ft_sgd (mode A, one rank each, mpirun inside the group's
# namespace; Open MPI's own traffic stays on lo, the library's servers bind
# the namespace's address).  Then:
#   1. B's link goes down (both ways): the majority keeps committing; P1,
#      the split-brain guard: from one heartbeat timeout after the cut until
#      the link is back, g2 commits no step (the two sides never both commit
#      different states at the same step);
#   2. the link comes back: g2 rejoins and heals;
#   3. B drops what it sends (a blackhole route, one way): the same holds;
#   4. back again; every group ends at the same step with bitwise equal
#      states (the majority's).
#   5. with tc netem (20 ms delay, 1% loss) on every link, a healthy run
#      still commits - when the kernel has netem (else this part is skipped,
#      and said so).
# Exit 77 when namespaces cannot be made (not root, no ip, no veth/bridge).
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
T=$TEST_TMPDIR
[ "$(id -u)" -eq 0 ] || skip "not root: network namespaces need it"
need_cmd ip
NS=ftp$$
NET=10.77.$(($$ % 250 + 1))
STEPS=${PARTITION_STEPS:-1200}
CUT_S=4        # how long each cut lasts (> the heartbeat timeout + a quorum)

# ---- the namespaces ------------------------------------------------------
for s in L A B; do
    ip netns add "$NS$s" 2>"$T/ns.err" || skip "cannot make a network namespace: $(cat "$T/ns.err")"
    at_cleanup "ip netns del $NS$s"
    ip -n "$NS$s" link set lo up
done
ip -n "${NS}L" link add br0 type bridge 2>"$T/ns.err" || skip "no bridge: $(cat "$T/ns.err")"
ip -n "${NS}L" addr add "$NET.1/24" dev br0
ip -n "${NS}L" link set br0 up
n=2
for s in A B; do
    ip link add "$NS$s" type veth peer name "$NS${s}p" 2>"$T/ns.err" ||
        skip "no veth: $(cat "$T/ns.err")"
    ip link set "$NS$s" netns "$NS$s" && ip link set "$NS${s}p" netns "${NS}L" &&
        ip -n "${NS}L" link set "$NS${s}p" master br0 up &&
        ip -n "$NS$s" addr add "$NET.$n/24" dev "$NS$s" && ip -n "$NS$s" link set "$NS$s" up ||
        e2e_fail "cannot set the link of $s up"
    n=$((n + 1))
done
e2e_log "namespaces ${NS}L/A/B on $NET.0/24"

# in NS CMD...: runs CMD in the namespace (a wrapper, for e2e_group_start)
cat >"$T/in_ns" <<EOS
#!/bin/sh
exec ip netns exec "\$PART_NS" "\$@"
EOS
chmod +x "$T/in_ns"
RUN_BIN=$E2E_RUN_BIN
cat >"$T/run_in_ns" <<EOS
#!/bin/sh
exec ip netns exec "\$PART_NS" "$RUN_BIN" "\$@"
EOS
chmod +x "$T/run_in_ns"
E2E_RUN_BIN=$T/run_in_ns

# ---- the lighthouse in L, the groups in A and B ----------------------------
(umask 077 && printf 'partition-secret-7f3a9c2e41b8d6057e1f\n' >"$T/token")
FTMPI_TOKEN_FILE=$T/token
export FTMPI_TOKEN_FILE
PART_NS=${NS}L setsid "$T/in_ns" "$E2E_LH_BIN" --bind "$NET.1:0" --min-replicas 2 \
    --heartbeat-timeout-ms "$E2E_HB_TIMEOUT_MS" --join-timeout-ms "$E2E_JOIN_TIMEOUT_MS" \
    --quorum-tick-ms 50 --token-file "$T/token" --log-level info \
    >"$T/lighthouse.log" 2>&1 </dev/null &
LHP=$!
register_pgid $LHP
wait_until 10 file_has "$T/lighthouse.log" 'listening on' || e2e_fail "no lighthouse: $(cat "$T/lighthouse.log")"
FTMPI_LIGHTHOUSE=$(sed -n 's/.*listening on \([^ ]*\) .*/\1/p' "$T/lighthouse.log")
export FTMPI_LIGHTHOUSE
e2e_log "lighthouse in ${NS}L on $FTMPI_LIGHTHOUSE"

start_in() { # NS_SUFFIX ADDR ID
    PART_NS=$NS$1 FTMPI_BIND_HOST=$2
    export PART_NS FTMPI_BIND_HOST
    e2e_group_start "$3" 1 --steps "$STEPS" --sleep-ms 10 --print-every 1
}
start_in A "$NET.2" g0
start_in A "$NET.2" g1
start_in B "$NET.3" g2
e2e_wait_step g2 20 60

# commits_between ID FROM_MS TO_MS: committed steps of ID in the window
commits_between() {
    cat "$T/$1.events"* 2>/dev/null | grep '"event":"commit"' | grep '"committed":true' |
        sed -n 's/^{"ts_ms":\([0-9]*\),.*/\1/p' | awk -v a="$2" -v b="$3" '$1 >= a && $1 <= b' |
        wc -l
}
now() { echo $(($(date +%s%N) / 1000000)); }

# cut WHAT: WHAT = down (the link, both ways) or blackhole (B's sends)
cut() {
    [ "$(e2e_step g0)" -lt $((STEPS - 200)) ] || e2e_fail "the run is too short for the cuts"
    case $1 in
    down) ip -n "${NS}B" link set "${NS}B" down ;;
    blackhole) ip -n "${NS}B" route add blackhole "$NET.1/32" &&
        ip -n "${NS}B" route add blackhole "$NET.2/32" ;;
    esac || e2e_fail "cannot cut ($1)"
    t_cut=$(now)
    s0=$(e2e_step g0)
    sleep "$CUT_S"
    t_heal=$(now)
    case $1 in
    down) ip -n "${NS}B" link set "${NS}B" up ;;
    blackhole) ip -n "${NS}B" route del blackhole "$NET.1/32" &&
        ip -n "${NS}B" route del blackhole "$NET.2/32" ;;
    esac || e2e_fail "cannot heal ($1)"
    s1=$(e2e_step g0)
    minority=$(commits_between g2 $((t_cut + E2E_HB_TIMEOUT_MS)) "$t_heal")
    majority=$(commits_between g0 $((t_cut + E2E_HB_TIMEOUT_MS)) "$t_heal")
    e2e_log "cut '$1' for ${CUT_S}s: g0 $s0 -> $s1; commits after the heartbeat timeout: majority $majority, minority $minority"
    [ "$minority" -eq 0 ] || e2e_fail "P1: the minority committed $minority steps while cut ($1)"
    [ "$majority" -ge 5 ] || e2e_fail "the majority committed only $majority steps while B was cut ($1)"
    # g2 is back in a quorum and commits again
    _c0=$(commits_between g2 "$t_heal" 99999999999999)
    _g2_back() { [ "$(commits_between g2 "$t_heal" 99999999999999)" -ge 3 ]; }
    wait_until 30 _g2_back || e2e_fail "g2 did not commit again within 30 s of the heal ($1)"
    e2e_log "g2 commits again after the heal ($1)"
}
cut down
cut blackhole

e2e_wait_agents 180 g0 g1 g2
e2e_check_states g0 g1 g2
e2e_check_final 1 g0 g1 g2

# ---- latency and loss ---------------------------------------------------------
if ip netns exec "${NS}A" tc qdisc add dev "${NS}A" root netem delay 20ms loss 1% 2>"$T/tc.err"; then
    ip netns exec "${NS}B" tc qdisc add dev "${NS}B" root netem delay 20ms loss 1% ||
        e2e_fail "netem on B"
    for g in g0 g1 g2; do : >"$T/$g.out"; rm -f "$T/$g.dump"* "$T/$g.events"*; done
    STEPS=60
    start_in A "$NET.2" g0
    start_in A "$NET.2" g1
    start_in B "$NET.3" g2
    e2e_wait_agents 180 g0 g1 g2
    e2e_check_states g0 g1 g2
    e2e_check_final 1 g0 g1 g2
    e2e_log "netem 20 ms delay, 1% loss: $STEPS steps committed"
else
    e2e_log "SKIPPED the netem part: this kernel has no netem qdisc ($(cat "$T/tc.err"))"
fi
echo "PASS ($TEST_NAME)"
