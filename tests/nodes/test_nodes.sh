#!/bin/sh
# test_nodes.sh - `make check-nodes` (tests/nodes/Makefile.inc): 3 nodes on
# this machine (nodes_lib.sh) and, across them:
#   0. the harness itself: each node its own host name, /tmp and pids; mpirun
#      --hostfile starts its daemons by ssh (a rank on each node says where it
#      is);
#   1. mode A across the nodes with a shared agent folder (TMPDIR): no
#      agent restarts a healthy group for another node's marks; a rank
#      killed on another node than its agent: its group restarts and heals,
#      equal final states; in a build with UCX, FTMPI_BACKEND=auto made the
#      slices ucx across the nodes (see 1 below);
#   2. a whole node lost with everything on it: the group that had its agent
#      there is started again on other nodes and heals across nodes; equal
#      final states (see 2 below);
#   3. the drop-in across 2 nodes: a rank SIGKILLed, then SIGSTOPped, on
#      another node than the agent: the job ends naming it, restarts under
#      ftmpi-run and ends bitwise as a failure-free run; an allreduce-only
#      code under FTMPI_SHIM_ON_FAILURE=continue goes on across the nodes
#      without a killed rank (see 3 below);
#   4. (on Open MPI 5 with ULFM when ../_build_ompi5 is built, as .ci/run
#      does; FTI_NODES_MODEB=0 skips it, =1 also shows Open MPI 4.1, whose
#      mpirun does not end after a process on another node than its own
#      dies) mode B across 2 nodes: one mpirun, 4 groups of 1 rank and the lighthouse rank, a
#      rank on the other node than mpirun SIGKILLed: the 3 other groups
#      commit every step with bitwise equal states and the job ends (see 4
#      below).
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
# in this order at the exit: the nodes ended (their pids are in the run
# folder), then the folder removed
at_cleanup nodes_down
at_cleanup "rm -rf $NODES_RUN"
e2e_init
[ "$FTI_MPI_IMPL" = openmpi ] ||
    skip "the nodes are reached through Open MPI's mpirun (--host, -x, plm_rsh_agent); this build's launcher is $FTI_MPI_IMPL's"
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

# ---- helpers of the mode A scenarios ------------------------------------
# node_group K ID HOSTS [ft_sgd flags...]: group ID, one rank on each of
# HOSTS (node names, comma-separated), under its agent on node K; mpirun
# passes the FTMPI_* settings to the other nodes with -x (the agent's three
# and its folder included, as srun and hydra pass the whole environment)
node_group() {
    _k=$1
    _id=$2
    _hosts=$3
    shift 3
    _x="-x FTMPI_REPLICA_ID -x FTMPI_RESTART_COUNT -x FTMPI_RESTART_LOST_MS -x FTMPI_AGENT_DIR"
    for _v in $(env | sed -n 's/^\(FTMPI_[A-Z_]*\)=.*/\1/p'); do _x="$_x -x $_v"; done
    # shellcheck disable=SC2086
    FTMPI_EVENT_LOG=$T/$_id.events on_node "$_k" timeout -k 5 400 "$E2E_RUN_BIN" \
        --replica-id "$_id" --max-restarts 3 --backoff-ms 200 --grace-ms 2000 \
        --events "$T/$_id.agent" -- "$MPIRUN" --host "$_hosts" -np "$(echo "$_hosts" | tr ',' '\n' | wc -l)" \
        --bind-to none -x FTMPI_EVENT_LOG $_x "$E2E_SGD_BIN" --dump "$T/$_id.dump" "$@" \
        >>"$T/$_id.out" 2>>"$T/$_id.err" </dev/null &
    eval "E2E_AGENT_$_id=$!"
    e2e_log "group $_id: agent on node$_k, ranks on $_hosts"
}

# ---- 1. mode A across the nodes, a shared agent folder, a rank killed -------
# The lighthouse on node0; g0's agent on node0 with ranks on node0 and node1,
# g1's on node2 with ranks on node2 and node1.  TMPDIR is the shared run
# folder, so each agent's folder is shared too and holds the marks of its
# ranks on both nodes (a shared TMPDIR is common on clusters).
# 1a. the foreign marks: until the kill neither agent restarts anything.
#     node1's and node2's pids are moved far above node0's (ns_last_pid), so
#     an agent that judged another node's mark by pid would surely find no
#     such process (pids collide across nodes otherwise, and a collision
#     would hide the bug by chance): without the fix g0 is killed and
#     restarted as soon as its rank on node1 marks itself.
# 1b. g0's rank on node1 (another node than its agent) is SIGKILLed: mpirun
#     ends, the agent restarts g0, which heals from g1; g1 never restarts;
#     both groups end with bitwise equal states.  The lighthouse wants both
#     groups (--min-replicas 2) and both wait at step 30 (--pace-file) until
#     the kill: g1 cannot finish alone before g0 is back, whatever the
#     machine's load.
(umask 077 && printf 'nodes-secret-5b1e93c07d2a4f68\n' >"$T/token")
FTMPI_TOKEN_FILE=$T/token
FTMPI_BIND_HOST=hostname
# every rank offers ucx to auto (1c below; off again after scenario 1)
FTMPI_UCX=1
export FTMPI_TOKEN_FILE FTMPI_BIND_HOST FTMPI_UCX
on_node 1 sh -c 'echo 5000 >/proc/sys/kernel/ns_last_pid' || e2e_fail "cannot move node1's pids"
on_node 2 sh -c 'echo 10000 >/proc/sys/kernel/ns_last_pid' || e2e_fail "cannot move node2's pids"
on_node 0 timeout -k 5 400 "$E2E_LH_BIN" --bind node0:29510 --token-file "$T/token" --min-replicas 2 \
    --heartbeat-timeout-ms "$E2E_HB_TIMEOUT_MS" --join-timeout-ms "$E2E_JOIN_TIMEOUT_MS" \
    --quorum-tick-ms 50 --log-level info >"$T/lighthouse.log" 2>&1 </dev/null &
_lh_up() { file_has "$T/lighthouse.log" 'listening on'; }
wait_until 60 _lh_up || e2e_fail "the lighthouse did not start on node0"
FTMPI_LIGHTHOUSE=node0:29510
export FTMPI_LIGHTHOUSE
echo 30 >"$T/pace"
node_group 0 g0 node0,node1 --steps 100 --sleep-ms 20 --print-every 5 --pace-file "$T/pace"
node_group 2 g1 node2,node1 --steps 100 --sleep-ms 20 --print-every 5 --pace-file "$T/pace"
# both at step 20, or an agent that restarted its group (then at once)
_1a() {
    [ "$(e2e_starts g0)" -gt 1 ] || [ "$(e2e_starts g1)" -gt 1 ] ||
        { [ "$(e2e_step g0)" -ge 20 ] && [ "$(e2e_step g1)" -ge 20 ]; }
}
wait_until 180 _1a || e2e_fail "1a: g0 and g1 not at step 20 in 180 s (at $(e2e_step g0), $(e2e_step g1))"
for g in g0 g1; do
    [ "$(e2e_starts $g)" -eq 1 ] && ! file_has "$T/$g.agent" '"event":"rank_died"' ||
        e2e_fail "1a: $g's agent restarted a healthy group: $(grep -h 'FT_Finalize\|restart' "$T/$g.err")"
done
# the foreign marks are there: g0's folder holds a mark of node1
victim=$(node_ranks 1 g0)
[ "$(echo "$victim" | wc -w)" -eq 1 ] || e2e_fail "want one rank of g0 on node1, found: $victim"
adir=$(tr '\0' '\n' <"/proc/$victim/environ" | sed -n 's/^FTMPI_AGENT_DIR=//p')
marks=$(ls "$adir" 2>/dev/null | tr '\n' ' ')
case $marks in
*@node0*@node1* | *@node1*@node0*) ;;
*) e2e_fail "1a: g0's agent folder '$adir' does not hold marks of node0 and node1: '$marks'" ;;
esac
e2e_log "1a: both groups at step 20 without a restart; g0's agent folder holds $marks"

kill -KILL "$victim"
echo 1000000 >"$T/pace"
e2e_log "1b: g0's rank on node1 (machine pid $victim) SIGKILLed at step $(e2e_step g0)"
e2e_wait_restart g0 2 120
e2e_wait_agents 300 g0 g1
[ "$(e2e_starts g1)" -eq 1 ] || e2e_fail "1b: g1 was restarted: $(grep -h 'FT_Finalize\|restart' "$T/g1.err")"
e2e_check_states g0 g1
e2e_check_final 2 g0 g1
first=$(e2e_first_step_of_run g0 2)
[ "$(e2e_failures g1)" -ge 1 ] || e2e_fail "1b: g1 reports no failure survived"
[ -n "$first" ] && [ "$first" -gt 20 ] || e2e_fail "1b: g0's second run began at step '$first': it did not heal"
e2e_log "1b: g0 restarted, healed (its second run began at step $first), equal final states"
# 1c. FTMPI_BACKEND unset (auto) and FTMPI_UCX=1: in a build with UCX every
#     member offers ucx, so the slices across the nodes were UCX endpoints over the
#     bridge (issue 37): every rank of both groups said so, every run.
if grep -q '^#define FTMPI_HAVE_UCX 1' "$top_builddir/ftmpi_config.h" 2>/dev/null; then
    for g in g0 g1; do
        n=$(grep -c 'FTMPI_BACKEND=auto: ucx from quorum' "$T/$g.err")
        [ "$n" -ge 2 ] || e2e_fail "1c: $g: $n lines saying auto took ucx, want one per rank and run"
        ! grep -q 'FTMPI_BACKEND=auto: tcp' "$T/$g.err" || e2e_fail "1c: $g took tcp: $(grep -h 'auto: tcp' "$T/$g.err" | head -n 1)"
    done
    e2e_log "1c: on ucx across the nodes: $(grep -h 'FTMPI_BACKEND=auto: ucx' "$T/g1.err" | head -n 1 | sed 's/.*\] //')"
fi

unset FTMPI_UCX

# ---- 2. a whole node lost ---------------------------------------------------
# h0 (agent on node0, ranks on node0 and node1) and h1 (agent on node2, ranks
# on node2 and node1) wait at step 30; node2 is lost: SIGKILL to its init
# ends every process of it at once (h1's agent, mpirun and rank; h1's rank on
# node1 ends with its daemon, whose mpirun is gone).  h0 cannot go on alone
# (--min-replicas 2) and waits.  h1 is started again elsewhere, as a
# scheduler would: a new agent on node1 with its ranks on node1 and node0
# (group rank 0 on node1: Open MPI places rank 0 on mpirun's own node
# whatever the order of --host), so each of its ranks heals from a source on
# the other node (h0's group rank 0 is on node0).  Both end with bitwise equal states; no process of node2 is
# left.
echo 30 >"$T/pace"
node_group 0 h0 node0,node1 --steps 80 --sleep-ms 20 --print-every 5 --pace-file "$T/pace"
node_group 2 h1 node2,node1 --steps 80 --sleep-ms 20 --print-every 5 --pace-file "$T/pace"
_2a() { [ "$(e2e_step h0)" -ge 25 ] && [ "$(e2e_step h1)" -ge 25 ]; }
wait_until 180 _2a || e2e_fail "2: h0 and h1 not at step 25 in 180 s (at $(e2e_step h0), $(e2e_step h1))"
h1_node1=$(node_ranks 1 h1)
[ -n "$h1_node1" ] || e2e_fail "2: no rank of h1 on node1"
node_kill 2
e2e_log "2: node2 lost (every process of it SIGKILLed at once) with h1 at step $(e2e_step h1)"
_gone_h1() { for _p in $h1_node1; do ! pid_alive "$_p" || return 1; done; }
wait_until 60 _gone_h1 || e2e_fail "2: h1's rank on node1 still there after node2 was lost"
wait "$E2E_AGENT_h1" 2>/dev/null
echo 1000000 >"$T/pace"
# the same replica id, its files appended to (its second run)
node_group 1 h1 node1,node0 --steps 80 --sleep-ms 20 --print-every 5
e2e_wait_agents 300 h0 h1
e2e_check_states h0 h1
e2e_check_final 2 h0 h1
first=$(e2e_first_step_of_run h1 2)
[ -n "$first" ] && [ "$first" -gt 20 ] || e2e_fail "2: h1's new run began at step '$first': it did not heal"
# each rank of h1's new run healed from a source on the other node
for gr in 0 1; do
    own=$(sed -n "s/.* r=h1 gr=$gr .*FT_Init: replica h1, group rank $gr of 2, server \([0-9.]*\):.*/\1/p" "$T/h1.err" | tail -n 1)
    src=$(sed -n "s/.* r=h1 gr=$gr .*healed step [0-9]* from h0 (\([0-9.]*\):.*/\1/p" "$T/h1.err" | tail -n 1)
    [ -n "$own" ] && [ -n "$src" ] && [ "$own" != "$src" ] ||
        e2e_fail "2: h1's group rank $gr (at '$own') did not heal from another node (source '$src')"
    e2e_log "2: h1's group rank $gr on $own healed from h0 on $src"
done
[ -z "$(node_procs 2)" ] || e2e_fail "2: node2 has processes left: $(node_procs 2)"
e2e_log "2: h1 started again on node1/node0, healed across nodes (first step $first), equal final states"

# ---- 3. the drop-in across 2 nodes -------------------------------------------
# examples/shim_stencil (a plain MPI code: halo exchange, an allreduce of the
# residual, its own restart files in the shared folder) under
# LD_PRELOAD=libftmpi_pmpi.so, 4 ranks: world ranks 0, 1 on node0 (with
# ftmpi-run and mpirun --enable-recovery), 2, 3 on node1.  World rank 2 is
# SIGKILLed, then in another run SIGSTOPped, once its restart files exist:
# the job ends non-zero naming rank 2, ftmpi-run starts it again, the code
# resumes from its files and ends bitwise as a failure-free run across the
# same nodes.  Only the launcher's exit and the drop-in's own detector can
# see rank 2 here (its mark is node1's, never judged by node0's agent).
# Every rank's watchdog must start: with FTMPI_BIND_HOST=hostname its hub
# bound the word "hostname" until the nodes found it (every rank "runs
# without its watchdog", and a SIGKILLed rank left the job blocked).
SHIM=$top_builddir/.libs/libftmpi_pmpi.so
STENCIL=$top_builddir/examples/shim_stencil
if [ "$FTI_MPI_IMPL" != openmpi ] || [ ! -f "$SHIM" ] || [ ! -x "$STENCIL" ]; then
    e2e_log "3: skipped (needs Open MPI's --enable-recovery, $SHIM and $STENCIL)"
else
    unset FTMPI_LIGHTHOUSE
    # shim_run NAME [agent flags]: the stencil across node0 and node1, under
    # ftmpi-run on node0 when flags are given
    shim_run() {
        _n=$1
        shift
        mkdir -p "$T/$_n"
        _cmd="$MPIRUN --enable-recovery --host node0:2,node1:2 -np 4 --bind-to none
            -x LD_PRELOAD=$SHIM -x SHIM_STENCIL_SLEEP_MS=10 -x FTMPI_BIND_HOST -x FTMPI_TOKEN_FILE
            -x FTMPI_REPLICA_ID -x FTMPI_RESTART_COUNT -x FTMPI_AGENT_DIR $STENCIL 300 20 $T/$_n"
        if [ $# -eq 0 ]; then
            # shellcheck disable=SC2086
            on_node 0 timeout -k 5 200 $_cmd >"$T/$_n.log" 2>&1
        else
            # shellcheck disable=SC2086
            on_node 0 timeout -k 5 300 "$E2E_RUN_BIN" --replica-id stencil "$@" --events "$T/$_n.events" \
                -- $_cmd >"$T/$_n.log" 2>&1 &
        fi
    }
    shim_run ff || e2e_fail "3: the failure-free drop-in run across node0 and node1 failed: $(tail -n 20 "$T/ff.log")"
    ref=$(grep '^stencil done' "$T/ff.log")
    [ -n "$ref" ] || e2e_fail "3: the failure-free run printed no final line: $(tail -n 20 "$T/ff.log")"
    e2e_log "3: failure-free across node0 and node1: $ref"
    for sig in KILL STOP; do
        shim_run "s$sig" --max-restarts 3 --backoff-ms 200
        job=$!
        _files() { [ -f "$T/s$sig/stencil.2.0" ] && [ -f "$T/s$sig/stencil.2.1" ]; }
        wait_until 120 _files || e2e_fail "3 $sig: rank 2 wrote no second restart file: $(tail -n 20 "$T/s$sig.log")"
        ! file_has "$T/s$sig.log" 'runs without its watchdog' ||
            e2e_fail "3 $sig: $(grep -m 1 'runs without its watchdog' "$T/s$sig.log")"
        victim=
        for p in $(node_procs 1); do
            tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=2' && victim=$p
        done
        [ -n "$victim" ] || e2e_fail "3 $sig: no world rank 2 on node1"
        kill -$sig "$victim"
        e2e_log "3: world rank 2 on node1 (machine pid $victim) SIG$sig"
        wait_pid_timeout $job 240 || e2e_fail "3 $sig: ftmpi-run did not end: $(tail -n 20 "$T/s$sig.log")"
        wait $job
        rc=$?
        [ $rc -eq 0 ] || e2e_fail "3 $sig: ftmpi-run exited $rc: $(tail -n 30 "$T/s$sig.log")"
        grep -q '"event":"restart"' "$T/s$sig.events" || e2e_fail "3 $sig: no restart"
        named=$(grep -m 1 'world rank(s) 2 lost; aborting the job' "$T/s$sig.log")
        [ -n "$named" ] || e2e_fail "3 $sig: no line naming world rank 2: $(tail -n 30 "$T/s$sig.log")"
        e2e_log "3: ${named#*] }"
        resumed=$(sed -n 's/^stencil resume it=\([1-9][0-9]*\)$/\1/p' "$T/s$sig.log" | head -n 1)
        [ -n "$resumed" ] || e2e_fail "3 $sig: the restarted job did not resume from its files"
        got=$(grep '^stencil done' "$T/s$sig.log")
        [ "$got" = "$ref" ] || e2e_fail "3 $sig: '$got' is not the failure-free '$ref'"
        e2e_log "3: SIG$sig: the job ended naming rank 2, restarted, resumed at iteration $resumed, final line bitwise the failure-free one"
    done
    # an allreduce-only code (examples/shim_pi) under FTMPI_SHIM_ON_FAILURE=
    # continue across the same nodes: world rank 1 (node0) SIGKILLed after
    # the first batch; the three others, two of them on node1, go on without
    # it to the last batch (fewer throws than 4 ranks' worth), estimates
    # within 6 sigma, and mpirun ends 0 (FTMPI_SHIM_SUCCESS_AFTER_LOSS=1: the
    # program's status after a dead rank).  Not a rank of node1: Open MPI 4.1's
    # mpirun --enable-recovery never ends after a process on another node
    # than its own died (scenario 4 below shows it without libftmpi); the
    # survivors end all the same (seen: the three "ok" lines, mpirun left)
    PI_BIN=$top_builddir/examples/shim_pi
    BATCHES=1500 SAMPLES=20000
    # shellcheck disable=SC2086
    on_node 0 timeout -k 5 300 $MPIRUN --enable-recovery --host node0:2,node1:2 -np 4 --bind-to none \
        -x LD_PRELOAD=$SHIM -x FTMPI_SHIM_ON_FAILURE=continue -x FTMPI_SHIM_SUCCESS_AFTER_LOSS=1 -x SHIM_PI_SLEEP_MS=10 \
        -x SHIM_PI_BATCHES=$BATCHES -x SHIM_PI_SAMPLES=$SAMPLES -x FTMPI_BIND_HOST -x FTMPI_TOKEN_FILE \
        "$PI_BIN" >"$T/pi.log" 2>&1 &
    job=$!
    wait_until 120 file_has "$T/pi.log" '^pi started on 4 ranks' ||
        e2e_fail "3 pi: no first batch: $(tail -n 20 "$T/pi.log")"
    victim=
    for p in $(node_procs 0); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = shim_pi ] &&
            tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
    done
    [ -n "$victim" ] || e2e_fail "3 pi: no world rank 1 on node0"
    kill -KILL "$victim"
    e2e_log "3: pi: world rank 1 on node0 (machine pid $victim) SIGKILL after the first batch"
    wait_pid_timeout $job 280 || e2e_fail "3 pi: mpirun did not end: $(tail -n 20 "$T/pi.log")"
    wait $job
    rc=$?
    full=$((4 * BATCHES * SAMPLES))
    for r in 0 2 3; do
        line=$(grep "^pi rank=$r batches=$BATCHES " "$T/pi.log")
        [ -n "$line" ] || e2e_fail "3 pi: world rank $r did not end its $BATCHES batches (mpirun $rc): $(tail -n 20 "$T/pi.log")"
        case $line in *" ok") ;; *) e2e_fail "3 pi: $line" ;; esac
        th=$(echo "$line" | sed -n 's/.* throws=\([0-9]*\) .*/\1/p')
        [ "$th" -lt "$full" ] || e2e_fail "3 pi: world rank $r counted $th throws, 4 ranks' worth: rank 1 was not lost"
    done
    ! grep -q '^pi rank=1 ' "$T/pi.log" || e2e_fail "3 pi: the killed rank 1 printed a result"
    [ "$rc" -eq 0 ] || e2e_fail "3 pi: mpirun exited $rc (FTMPI_SHIM_SUCCESS_AFTER_LOSS=1: the survivors' status, 0)"
    e2e_log "3: pi: ranks 0, 2, 3 ended their $BATCHES batches without rank 1 (mpirun exit $rc): $(grep -m 1 '^pi rank=0' "$T/pi.log")"
fi

# ---- 4. mode B across 2 nodes -----------------------------------------------
# One mpirun on node0, FTMPI_GROUP_SIZE=1: world ranks 0-2 on node0, 3 and
# 4 (the lighthouse rank) on node1, every rank advertising its node's name.
# World rank 3 (group g3, on node1) SIGKILLs itself before step 20's
# allreduce (ft_sgd --die-at-step, whatever the load): the groups on both
# nodes go on without it, the 3 survivors commit every step with bitwise
# equal states, and mpirun ends 0.
# Only with FTI_NODES_MODEB=1: on Open MPI 5 with ULFM (mpirun --with-ft
# ulfm, through the tests' mpirun_prte.sh) when this tree has a build
# against it beside this one (../_build_ompi5, what ./quickstart.sh
# check-ompi5 makes), it passed 4 times in 6 on a loaded machine
# (2026-11-29); in the 2 others a survivor on mpirun's node (world rank 0,
# then 1) vanished after the death on node1, killed by a signal with no
# line in its stderr, and mpirun exited 0.  That signal was SIGPIPE
# (mpirun's PRTE_MCA_odls_base_verbose=5: "child process [...,2]
# terminated with signal Broken pipe", then [...,0]): Open MPI's tcp BTL,
# which carries the slices between node0 and node1, writev()s to the dead
# rank's socket and Linux raises SIGPIPE.  Mode B now ignores SIGPIPE
# (DESIGN section 2, "Mode B on ULFM"): 10 runs in 10 passed after it, the
# same day (before it 3 of 8 failed), so it runs in check-nodes whenever
# ../_build_ompi5 is there (FTI_NODES_MODEB=0 skips it).  Not on Open MPI 4.1.4 at all: its mpirun --enable-recovery never ends once a process on another
# node than its own died, whatever the program: `mpirun --enable-recovery
# --host node0:3,node1:2 -np 5 sh -c ...` where rank 3's process (node1)
# kills itself and the 4 others exit 0 never ends (124 at a 60 s timeout),
# while the same with the killed process on mpirun's node ends 0.
# FTI_NODES_MODEB=1 shows that (and then tries mode B on 4.1 too).
B5=${FTI_NODES_OMPI5_BUILD:-$(cd "$top_builddir/.." && pwd)/_build_ompi5}
O5=$(sed -n "s|^MPICC='\(.*\)/bin/mpicc'\$|\1|p" "$B5/config.log" 2>/dev/null | head -n 1)
modeb_nodes() { # MPIRUN SGD: the run and its checks
    unset FTMPI_LIGHTHOUSE
    MB=$T/modeb.$3
    _x=""
    for _v in $(env | sed -n 's/^\(FTMPI_[A-Z_]*\)=.*/\1/p'); do _x="$_x -x $_v"; done
    # shellcheck disable=SC2086
    FTMPI_GROUP_SIZE=1 on_node 0 timeout -k 5 300 $1 --enable-recovery --host node0:3,node1:2 \
        -np 5 --bind-to none -x FTMPI_GROUP_SIZE $_x --output-filename "$MB" "$2" \
        --steps 60 --sleep-ms 20 --print-every 1 --die-at-step 20 --die-rank 3 --dump "$MB.state" \
        >"$T/modeb.$3.log" 2>&1 </dev/null
    rc=$?
    [ $rc -eq 0 ] || e2e_fail "4 ($3): mpirun exited $rc: $(tail -n 20 "$T/modeb.$3.log")"
    grep -q 'SIGKILL to myself at step 20' "$MB/1/rank.3/stderr" ||
        e2e_fail "4 ($3): world rank 3 did not die at step 20: $(tail -n 5 "$MB/1/rank.3/stderr")"
    ref=
    for w in 0 1 2; do
        o=$MB/1/rank.$w/stdout
        grep -q '^steps committed 60 ' "$o" || e2e_fail "4 ($3): world rank $w did not commit 60 steps: $(tail -n 5 "$o")"
        [ "$(sgd_failures "$o")" -ge 1 ] || e2e_fail "4 ($3): world rank $w reports no failure survived"
        id=$(sed -n 's/^initial loss [^ ]* replica \([^ ]*\) .*/\1/p' "$o" | head -n 1)
        [ -s "$MB.state.$id" ] || e2e_fail "4 ($3): no state dump of group '$id'"
        [ -n "$ref" ] || ref=$MB.state.$id
        cmp -s "$ref" "$MB.state.$id" || e2e_fail "4 ($3): the state of $id differs from $(basename "$ref")"
    done
    msg=$(sgd_final_check 3 "$MB"/1/rank.0/stdout "$MB"/1/rank.1/stdout "$MB"/1/rank.2/stdout) ||
        e2e_fail "4 ($3): $msg"
    grep -q 'every group is done' "$MB/1/rank.4/stderr" || e2e_fail "4 ($3): the lighthouse rank on node1 did not end"
    e2e_log "4: mode B across node0 and node1 on $3: g3 on node1 died at step 20, the 3 other groups ended equal ($msg), mpirun exited 0"
}
if [ "${FTI_NODES_MODEB:-}" = 0 ]; then
    e2e_log "4: mode B across nodes skipped (FTI_NODES_MODEB=0)"
elif [ -n "$O5" ] && [ -x "$O5/bin/mpirun" ] && [ -x "$B5/examples/ft_sgd" ]; then
    (
        OPAL_PREFIX=$O5 PATH=$O5/bin:$PATH LD_LIBRARY_PATH=$O5/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        FTI_REAL_MPIRUN=$O5/bin/mpirun FTI_PRTE_RECOVERY=ulfm
        PRTE_MCA_plm_ssh_agent=$OMPI_MCA_plm_rsh_agent PRTE_MCA_prte_if_include=eth0
        export OPAL_PREFIX PATH LD_LIBRARY_PATH FTI_REAL_MPIRUN FTI_PRTE_RECOVERY PRTE_MCA_plm_ssh_agent \
            PRTE_MCA_prte_if_include
        modeb_nodes "sh $top_srcdir/tests/integration/mpirun_prte.sh" "$B5/examples/ft_sgd" ompi5
    ) || exit 1
else
    e2e_log "4: mode B across nodes skipped: no Open MPI 5 build beside this one ($B5 with examples/ft_sgd; ./quickstart.sh check-ompi5 makes it); Open MPI 4.1's mpirun cannot end such a run (above)"
fi
if [ "${FTI_NODES_MODEB:-0}" = 1 ]; then
    on_node 0 timeout -k 5 60 "$MPIRUN" --enable-recovery --host node0:3,node1:2 -np 5 --bind-to none \
        sh -c 'sleep 2; [ "$OMPI_COMM_WORLD_RANK" = 3 ] && kill -KILL $$; sleep 3' >"$T/plain.log" 2>&1 </dev/null
    rc=$?
    e2e_log "4: Open MPI 4.1, plain processes, rank 3 on node1 killed: mpirun $([ $rc = 124 ] && echo 'did not end in 60 s (the launcher bug)' || echo "exited $rc")"
    modeb_nodes "$MPIRUN" "$E2E_SGD_BIN" ompi41
fi

# ---- the end: every node ended, counted -----------------------------------
nodes_down
left=$(nodes_left)
[ -z "$left" ] || die "left after the nodes were ended: $left"
e2e_log "every node ended: no process of their pid namespaces, no network namespace left"
echo "nodes: PASS"
