#!/bin/sh
# test_nodes_nets.sh - `make check-nodes` (tests/nodes/Makefile.inc), issue
# 34 item 3: two networks, and a heal takes the one FTMPI_BIND_HOST names.
# Two nodes (nodes_lib.sh) with a fast unshaped "fabric" eth0 and a slow
# "management" eth1 (tbf, NODES_SLOW_RATE); the hosts file maps the node
# names to eth1, as a cluster's DNS names the Ethernet NIC.  Mode A, the
# lighthouse on node0, one group of one rank on each node (e2e_heal_torn:
# a registered state of NETS_MIB MiB of 7.0 on node0, of 1.0 on node1):
#   1. FTMPI_BIND_HOST names the fabric (node0 by subnet, node1 by
#      interface, "if:eth0"): g0 runs alone for a few steps, g1 joins at
#      step 0 and heals its whole state from g0 across the nodes.  The bytes
#      node1's eth0 and eth1 moved meanwhile (/sys/class/net/*/statistics,
#      read in node1's namespace): at least 95 % on eth0, and at least the
#      state's size; g1's final state is every element 7.0 (e2e_heal_torn
#      scans it); the lighthouse's status.json shows each group's fabric
#      address.
#   2. the same with FTMPI_BIND_HOST=hostname and a small state
#      (NETS_NAIVE_MIB): the names resolve to eth1 and the heal crosses the
#      slow network (at least 95 % of node1's bytes on eth1): the setting is
#      what moved case 1 to the fabric.
# No timing assert: g1 joins once g0 has committed 3 steps, so it is behind
# and heals whatever the load.  Every node ended at the end (counted).
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
. "$top_srcdir/tests/nodes/nodes_lib.sh"
NODES_RUN=$(nodes_run_dir) || { echo "cannot make a run folder" >&2; exit 1; }
TMPDIR=$NODES_RUN
export TMPDIR
. "$top_srcdir/tests/integration/e2e_lib.sh"
at_cleanup nodes_down
at_cleanup "rm -rf $NODES_RUN"
e2e_init
[ "$FTI_MPI_IMPL" = openmpi ] ||
    skip "the nodes are reached through Open MPI's mpirun; this build's launcher is $FTI_MPI_IMPL's"
TORN=$top_builddir/tests/integration/e2e_heal_torn
[ -x "$TORN" ] || die "$TORN is not built"
: "${NETS_MIB:=256}"
: "${NETS_NAIVE_MIB:=16}"
: "${NODES_SLOW_RATE:=200mbit}"
T=$TEST_TMPDIR
nodes_init
nodes_up 2 "$NODES_SLOW_RATE"
for k in 0 1; do
    for i in eth0 eth1; do
        on_node $k test -r "/sys/class/net/$i/statistics/rx_bytes" ||
            e2e_fail "node$k: no /sys/class/net/$i in its namespace"
    done
done
(umask 077 && printf 'nodes-nets-secret-c41d07e2b9a8\n' >"$T/token")
FTMPI_TOKEN_FILE=$T/token
export FTMPI_TOKEN_FILE

# lh_start PORT: the lighthouse on node0 (on node0's name: eth1), min 1
lh_start() {
    on_node 0 timeout -k 5 300 "$E2E_LH_BIN" --bind "node0:$1" --token-file "$T/token" \
        --min-replicas 1 --heartbeat-timeout-ms "$E2E_HB_TIMEOUT_MS" \
        --join-timeout-ms "$E2E_JOIN_TIMEOUT_MS" --quorum-tick-ms 50 \
        --http-bind "127.0.0.1:$(($1 + 1))" --log-level info >"$T/lh$1.log" 2>&1 </dev/null &
    _lh_up() { file_has "$T/lh$1.log" 'listening on'; }
    wait_until 60 _lh_up "$1" || e2e_fail "the lighthouse did not start on node0: $(cat "$T/lh$1.log")"
    FTMPI_LIGHTHOUSE=node0:$1
    export FTMPI_LIGHTHOUSE
}
# net_group K ID BIND MIB VALUE STEPS: group ID, one rank on node K, under
# its agent there (no restart), e2e_heal_torn's state MIB MiB of VALUE
net_group() {
    FTMPI_BIND_HOST=$3 on_node "$1" timeout -k 5 300 "$E2E_RUN_BIN" --replica-id "$2" \
        --max-restarts 0 --events "$T/$2.agent" -- "$MPIRUN" -np 1 --bind-to none \
        -x FTMPI_BIND_HOST "$TORN" --mib "$4" --value "$5" --steps "$6" --sleep-ms 20 \
        >>"$T/$2.out" 2>>"$T/$2.err" </dev/null &
    eval "NETS_AGENT_$2=$!"
    e2e_log "group $2 on node$1, FTMPI_BIND_HOST=$3, $4 MiB of $5"
}
commits() { grep -c '^commit step' "$T/$1.out" 2>/dev/null || true; }
# node_end K WORD: SIGKILL to node K's processes whose command line holds WORD
node_end() {
    for _p in $(node_procs "$1"); do
        tr '\0' ' ' <"/proc/$_p/cmdline" 2>/dev/null | grep -q -- "$2" && kill -KILL "$_p" 2>/dev/null
    done
    return 0
}
# heal_case NAME BIND0 BIND1 MIB: g0 (node0) alone 3 steps, then g1 (node1)
# joins and heals MIB MiB from it; sets FAST and SLOW, node1's eth0 and
# eth1 bytes meanwhile
heal_case() {
    _g0=${1}0
    _g1=${1}1
    net_group 0 "$_g0" "$2" "$4" 7 1000000
    _going() { [ "$(commits "$_g0")" -ge 3 ]; }
    wait_until 120 _going || e2e_fail "$1: $_g0 did not commit 3 steps: $(tail -n 5 "$T/$_g0.err")"
    _f0=$(node_bytes 1 eth0)
    _s0=$(node_bytes 1 eth1)
    net_group 1 "$_g1" "$3" "$4" 1 4
    _v=NETS_AGENT_$_g1
    wait_pid_timeout "$(eval "echo \$$_v")" 240 || e2e_fail "$1: $_g1 did not end: $(tail -n 5 "$T/$_g1.err")"
    FAST=$(($(node_bytes 1 eth0) - _f0))
    SLOW=$(($(node_bytes 1 eth1) - _s0))
    file_has "$T/$_g1.err" "healed step [0-9]+ from $_g0" ||
        e2e_fail "$1: $_g1 did not heal from $_g0: $(tail -n 10 "$T/$_g1.err")"
    _elems=$(($4 * 262144 + 262144))
    file_has "$T/$_g1.out" "^final step [0-9]+ rank 0 ones 0 sevens $_elems other 0 " ||
        e2e_fail "$1: $_g1's final state is not g0's: $(grep final "$T/$_g1.out")"
    e2e_log "$1: $(grep -h -o "healed step [0-9]* from $_g0 ([^)]*)" "$T/$_g1.err" | head -n 1); node1 moved $FAST bytes on eth0, $SLOW on eth1"
}

# ---- 1. the fabric named: the heal crosses eth0 -------------------------
lh_start 29610
heal_case fab "$NODES_NET.0/24" if:eth0 "$NETS_MIB"
on_node 0 curl -s -H "Authorization: Bearer $(cat "$T/token")" http://127.0.0.1:29611/status.json \
    >"$T/status.json" || e2e_fail "1: no status.json from the lighthouse"
# fab1 has ended (a finalized group leaves the members); fab0 still runs
grep -q "\"replica_id\":\"fab0\",\"address\":\"$NODES_NET.1:" "$T/status.json" ||
    e2e_fail "1: status.json does not show fab0 at its fabric address $NODES_NET.1: $(cat "$T/status.json")"
own=$(sed -n 's/.*FT_Init: replica fab1, .*server \([0-9.]*\):.*/\1/p' "$T/fab1.err" | head -n 1)
[ "$own" = "$NODES_NET.2" ] || e2e_fail "1: fab1 advertised '$own', not its fabric address $NODES_NET.2"
e2e_log "1: status.json shows fab0 at $NODES_NET.1; fab1 advertised $own (both the fabric)"
heal_bytes=$((NETS_MIB * 1048576))
[ "$FAST" -ge "$heal_bytes" ] || e2e_fail "1: eth0 moved $FAST bytes, less than the $NETS_MIB MiB healed"
[ $((FAST * 100)) -ge $((95 * (FAST + SLOW))) ] ||
    e2e_fail "1: only $((FAST * 100 / (FAST + SLOW))) % of the heal's bytes on the fabric (eth0 $FAST, eth1 $SLOW)"
pm=$((FAST * 100000 / (FAST + SLOW)))
e2e_log "1: $NETS_MIB MiB healed across nodes, $((pm / 1000)).$(printf %03d $((pm % 1000))) % of node1's bytes on the fabric eth0 (must be >= 95 %)"
node_end 0 fab0
node_end 0 "$E2E_LH_BIN"
wait "$(eval "echo \$NETS_AGENT_fab0")" 2>/dev/null

# ---- 2. the naive setting: the names' network, the slow one ---------------
lh_start 29620
heal_case naive hostname hostname "$NETS_NAIVE_MIB"
if [ "$SLOW" -lt $((NETS_NAIVE_MIB * 1048576)) ] || [ $((SLOW * 100)) -lt $((95 * (FAST + SLOW))) ]; then
    e2e_fail "2: FTMPI_BIND_HOST=hostname did not take the names' network eth1 (eth0 $FAST, eth1 $SLOW)"
fi
pm=$((SLOW * 100000 / (FAST + SLOW)))
e2e_log "2: with FTMPI_BIND_HOST=hostname $((pm / 1000)).$(printf %03d $((pm % 1000))) % of node1's bytes on the slow eth1"
node_end 0 naive0
node_end 0 "$E2E_LH_BIN"
wait "$(eval "echo \$NETS_AGENT_naive0")" 2>/dev/null

# ---- 3. a value that matches nothing: FT_Init fails naming it -------------
FTMPI_BIND_HOST=if:ib0 FTMPI_REPLICA_ID=bad on_node 1 timeout -k 5 60 "$MPIRUN" -np 1 --bind-to none \
    -x FTMPI_BIND_HOST -x FTMPI_REPLICA_ID "$TORN" --mib 1 --value 1 --steps 1 >"$T/bad.out" 2>&1 &&
    e2e_fail "3: FT_Init succeeded with FTMPI_BIND_HOST=if:ib0 on a node without ib0"
file_has "$T/bad.out" "FTMPI_BIND_HOST=if:ib0: no interface" ||
    e2e_fail "3: no error naming FTMPI_BIND_HOST=if:ib0: $(cat "$T/bad.out")"
e2e_log "3: $(grep -h -o 'FTMPI_BIND_HOST=if:ib0: no interface.*' "$T/bad.out" | head -n 1)"

nodes_down
left=$(nodes_left)
[ -z "$left" ] || die "left after the nodes were ended: $left"
e2e_log "every node ended: no process of their pid namespaces, no network namespace left"
echo "nodes-nets: PASS"
