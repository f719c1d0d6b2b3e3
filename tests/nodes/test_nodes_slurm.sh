#!/bin/sh
# test_nodes_slurm.sh - `make check-nodes` (tests/nodes/Makefile.inc): Slurm
# across 3 nodes of this machine (nodes_lib.sh), the shipped scripts of
# examples/slurm as a user submits them:
#   0. the cluster: munged on every node (one key, each its own socket under
#      the node's /run), slurmctld on node0, one slurmd per node in its
#      namespaces; `srun -N 3` places a task on each node;
#   1. ft_sgd_mode_a.sbatch with --nodes=3: the batch script and the
#      lighthouse on node0, g0 on node1, g1 on node2 (mpirun reaching them
#      through Slurm, an srun of its daemons); a rank of g1 SIGKILLed on
#      node2: g1's agent (on node0) restarts it, it heals from g0 on node1;
#      the agents share the submit folder's agent marks (TMPDIR, every node
#      sees it) and restart nothing else; COMPLETED 0:0, equal final states;
#   2. ft_sgd_mode_a_srun.sbatch with --nodes=3: the same with srun as the
#      groups' launcher.
# Mode B across nodes is test_nodes.sh's scenario 4 (not passing yet, see
# there); its sbatch script is run on one node by tests/slurm/test_slurm.sh.
# Exit 77 with the reason where the machine refuses (not root, no
# namespaces, no Slurm and no apt-get to install it), and where this build's
# MPI is not Open MPI (the scripts call mpirun).
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
    skip "the mode A script launches groups with Open MPI's mpirun; this build's MPI is $FTI_MPI_IMPL's"
# the scripts find their slots themselves
unset OMPI_MCA_rmaps_base_oversubscribe
T=$TEST_TMPDIR
B=$(cd "$top_builddir" && pwd)

have_slurm() {
    command -v sbatch >/dev/null 2>&1 && command -v slurmctld >/dev/null 2>&1 &&
        command -v slurmd >/dev/null 2>&1 && command -v munged >/dev/null 2>&1
}
if ! have_slurm; then
    command -v apt-get >/dev/null 2>&1 || skip "slurm-wlm/munge missing and no apt-get"
    [ "$(id -u)" = 0 ] || skip "slurm-wlm/munge missing and not root"
    e2e_log "installing slurm-wlm munge (apt-get)"
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends slurm-wlm munge; } >"$T/apt.log" 2>&1 ||
        { tail -n 20 "$T/apt.log"; skip "apt-get install slurm-wlm munge failed"; }
    have_slurm || skip "slurm-wlm installed but sbatch/slurmctld/slurmd/munged not found"
fi
nodes_init
nodes_up 3

# ---- 0. the cluster -------------------------------------------------------
dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$T/munge.key"
mkdir -p "$T/state"
ncpu=$(nproc)
{
    echo "ClusterName=ftmpinodes"
    echo "SlurmctldHost=node0($NODES_NET.1)"
    cat <<EOF
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=/tmp/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=600
SlurmdTimeout=60
EOF
    for k in 0 1 2; do
        echo "NodeName=node$k NodeAddr=$NODES_NET.$((k + 1)) CPUs=$ncpu State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=node[0-2] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
} >"$T/slurm.conf"
SLURM_CONF=$T/slurm.conf
export SLURM_CONF
# slurmd 22.05 starts its cgroup plugin whatever the proctrack and task
# plugins: a node's /sys is its network namespace's own (ip netns exec
# mounts one), without the machine's cgroup mounts, so each node mounts
# what the machine has under /sys/fs/cgroup again (the same hierarchies)
node_cgroups() {
    grep -E '^[^ ]+ /sys/fs/cgroup(/[^ ]*)? (tmpfs|cgroup|cgroup2) ' /proc/mounts |
        while read -r _dev _mp _type _opts _rest; do
            _o=$(echo "$_opts" | tr ',' '\n' | grep -Evx 'rw|ro|relatime|nosuid|nodev|noexec|seclabel' | paste -sd,)
            case $_type,$_o in
            cgroup,name=*) _o=none,$_o ;;
            esac
            on_node "$1" mkdir -p "$_mp" &&
                on_node "$1" mount -t "$_type" ${_o:+-o "$_o"} "$_type" "$_mp" || return 1
        done
}
for k in 0 1 2; do
    node_cgroups $k 2>"$T/cgroups.err" || skip "node$k: cannot mount cgroups for slurmd: $(cat "$T/cgroups.err")"
    on_node $k mkdir -p /tmp/slurmd
    # each node its own munged at Slurm's default socket, under its own /run
    on_node $k mkdir -p /run/munge
    on_node $k munged --foreground --force --key-file="$T/munge.key" \
        --socket=/run/munge/munge.socket.2 --pid-file=/run/munge/munged.pid \
        --log-file="$T/munged-node$k.log" --seed-file=/run/munge/seed \
        >"$T/munged-node$k.out" 2>&1 </dev/null &
done
for k in 0 1 2; do
    wait_until 20 on_node $k test -S /run/munge/munge.socket.2 ||
        { cat "$T/munged-node$k.out" "$T/munged-node$k.log" 2>/dev/null; skip "munged did not start on node$k"; }
done
on_node 0 slurmctld -D -i -f "$SLURM_CONF" >"$T/slurmctld.out" 2>&1 </dev/null &
for k in 0 1 2; do
    on_node $k slurmd -D -f "$SLURM_CONF" >"$T/slurmd-node$k.out" 2>&1 </dev/null &
done
nodes_idle() {
    [ "$(on_node 0 sinfo -h -N -o '%N %T' 2>/dev/null | grep -Ec ' (idle|mixed|allocated)$')" -eq 3 ]
}
if ! wait_until 60 nodes_idle; then
    on_node 0 sinfo -N 2>&1
    tail -n 20 "$T"/slurm*.log "$T"/slurm*.out 2>/dev/null
    skip "slurmctld/slurmd did not bring the 3 nodes up (logs above)"
fi
e2e_log "$(on_node 0 sbatch --version): $(on_node 0 sinfo -h -N -o '%N %T' | tr '\n' ' ')"
on_node 0 timeout -k 5 120 srun -N 3 -n 3 --overlap sh -c 'echo "task $SLURM_PROCID on $(hostname)"' \
    >"$T/srun.out" 2>&1 || e2e_fail "0: srun -N 3 failed: $(cat "$T/srun.out")"
for k in 0 1 2; do
    file_has "$T/srun.out" "^task [0-2] on node$k\$" || e2e_fail "0: srun -N 3 put no task on node$k: $(cat "$T/srun.out")"
done
e2e_log "0: srun -N 3: $(sort "$T/srun.out" | tr '\n' ';')"

# ---- helpers ----------------------------------------------------------------
job_field() { on_node 0 scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
job_done() {
    case $(job_field "$1" JobState) in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED) return 0 ;;
    esac
    return 1
}
strip_group() { sed -n "s/^\[$2\] //p" "$1"; }
# run_mode_a NAME SCRIPT: SCRIPT with --nodes=3 from node0, a rank of g1
# SIGKILLed on node2 once g1 passed step 50, then the checks of 1 and 2
run_mode_a() {
    _n=$1
    mkdir -p "$T/$_n"
    _out=$T/$_n/out.txt
    _j=$(cd "$T/$_n" && on_node 0 sbatch --parsable --nodes=3 -o "$_out" "$top_srcdir/examples/slurm/$2") ||
        e2e_fail "$_n: sbatch $2 failed"
    at_cleanup "on_node 0 scancel $_j"
    wait_until 180 file_has "$_out" '^\[g1\] step 50 loss' ||
        e2e_fail "$_n: g1 did not reach step 50 (job $(job_field "$_j" JobState)): $(tail -n 30 "$_out")"
    for _g in 0 1; do
        [ -n "$(node_ranks $((_g + 1)) g$_g)" ] || e2e_fail "$_n: no rank of g$_g on node$((_g + 1))"
    done
    e2e_log "$_n: job $_j running on $(job_field "$_j" NodeList)"
    _v=$(node_ranks 2 g1 | head -n 1)
    [ -n "$_v" ] || e2e_fail "$_n: no rank of g1 on node2"
    kill -KILL "$_v"
    e2e_log "$_n: SIGKILL to a rank of g1 on node2 (pid $_v)"
    wait_until 300 job_done "$_j" || e2e_fail "$_n: job $_j still $(job_field "$_j" JobState) after 300 s: $(tail -n 30 "$_out")"
    _st=$(job_field "$_j" JobState) _ec=$(job_field "$_j" ExitCode)
    e2e_log "$_n: job $_j ended $_st $_ec; $(grep '^ftmpi:' "$_out" | tr '\n' ';')"
    [ "$_st" = COMPLETED ] && [ "$_ec" = 0:0 ] || e2e_fail "$_n: job $_j ended $_st $_ec: $(tail -n 40 "$_out")"
    grep -q '^ftmpi: group g1: agent exit 0, 1 restart(s)' "$_out" || e2e_fail "$_n: g1 was not restarted once"
    grep -q '^ftmpi: group g0: agent exit 0, 0 restart(s)' "$_out" ||
        e2e_fail "$_n: g0 (healthy, its ranks' marks beside g1's in the shared folder) was restarted"
    strip_group "$_out" g0 >"$T/$_n/g0.txt"
    strip_group "$_out" g1 >"$T/$_n/g1.txt"
    grep -q 'restart 1 of this group: healed step' "$T/$_n/g1.txt" || e2e_fail "$_n: g1 did not heal"
    [ "$(sgd_failures "$T/$_n/g0.txt")" -ge 1 ] || e2e_fail "$_n: g0 reports no failure survived"
    _res=$(sgd_final_check 4 "$T/$_n/g0.txt" "$T/$_n/g1.txt") || e2e_fail "$_n: $_res"
    echo "$_res" | grep -q "step $STEPS," || e2e_fail "$_n: $_res (want step $STEPS)"
    e2e_log "$_n: $_res"
}

STEPS=300
APP="$B/examples/ft_sgd --steps $STEPS --sleep-ms 20 --print-every 1"
FTMPI_BIN=$B
LH_PORT=29600
export APP FTMPI_BIN LH_PORT
# ---- 1. mode A, mpirun per group --------------------------------------------
run_mode_a modea ft_sgd_mode_a.sbatch
# ---- 2. mode A, srun per group ------------------------------------------------
run_mode_a modea_srun ft_sgd_mode_a_srun.sbatch

nodes_down
left=$(nodes_left)
[ -z "$left" ] || e2e_fail "left after the nodes were ended: $left"
e2e_log "every node ended: no process and no namespace left"
echo "PASS ($TEST_NAME)"
