#!/bin/sh
# test_nodes.sh - `make check-nodes` (tests/nodes/Makefile.inc): 3 nodes on
# this machine (nodes_lib.sh) and, across them:
#   0. the harness itself: each node its own host name, /tmp and pids; mpirun
#      --hostfile starts its daemons by ssh (a rank on each node says where it
#      is);
#   1. ... (scenarios below)
# At the end every node is ended: no process of their pid namespaces and no
# network namespace of the run is left (counted).  Exit 77 with the reason
# where the machine refuses (not root, no namespaces, no sshd).
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
. "$top_srcdir/tests/nodes/nodes_lib.sh"
NODES_RUN=$(nodes_run_dir) || { echo "cannot make a run folder" >&2; exit 1; }
TMPDIR=$NODES_RUN
export TMPDIR
. "$top_srcdir/tests/integration/e2e_lib.sh"
at_cleanup "rm -rf $NODES_RUN"
e2e_init
T=$TEST_TMPDIR
nodes_init
nodes_up 3

# ---- 0. the harness ---------------------------------------------------------
for k in 0 1 2; do
    h=$(on_node $k hostname)
    [ "$h" = "node$k" ] || e2e_fail "node$k calls itself '$h'"
    p=$(on_node $k sh -c 'echo $$')
    [ "$p" -lt 1000 ] || e2e_fail "node$k: pids do not start at 1 (a shell there is pid $p)"
    on_node $k sh -c "echo node$k >/tmp/whose"
done
[ "$(on_node 1 cat /tmp/whose)" = node1 ] || e2e_fail "node1's /tmp is not its own"
[ ! -e /tmp/whose ] || e2e_fail "a node's /tmp is the machine's"
printf 'node0 slots=2\nnode1 slots=2\nnode2 slots=2\n' >"$T/hostfile"
on_node 0 timeout -k 5 120 "$MPIRUN" --hostfile "$T/hostfile" -np 3 --map-by node --bind-to none \
    sh -c 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname) pid $$ /tmp $(cat /tmp/whose)"' \
    >"$T/where.out" 2>"$T/where.err" || e2e_fail "mpirun --hostfile across the nodes failed: $(cat "$T/where.err")"
for k in 0 1 2; do
    file_has "$T/where.out" "^rank $k on node$k pid [0-9]+ /tmp node$k\$" ||
        e2e_fail "no rank $k on node$k: $(cat "$T/where.out" "$T/where.err")"
done
e2e_log "mpirun --hostfile: $(tr '\n' ';' <"$T/where.out")"

# ---- the end: every node ended, counted -----------------------------------
nodes_down
left=$(nodes_left)
[ -z "$left" ] || die "left after the nodes were ended: $left"
e2e_log "every node ended: no process of their pid namespaces, no network namespace left"
echo "nodes: PASS"
