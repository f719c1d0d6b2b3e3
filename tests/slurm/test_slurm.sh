#!/bin/sh
# tests/slurm/test_slurm.sh - both Slurm scripts of examples/slurm, as
# shipped, under a real slurmctld and slurmd on this machine, with a kill.
# Run by `make check-slurm` (not part of make check: it installs Debian
# packages and starts daemons).
#
#  1. Debian's slurm-wlm and munge are installed when missing (as root, with
#     apt-get); exit 77 with the reason when not root, no apt-get, or the
#     install or a daemon fails.
#  2. A one-node cluster in a temporary folder: munged with its own key and
#     socket, slurm.conf (NodeName=localhost, CPUs = nproc, OverSubscribe=
#     FORCE, select/cons_tres, proctrack/linuxproc, task/none: no cgroups,
#     MpiDefault=none, no accounting), slurmctld and slurmd in the foreground
#     (all killed by PID at the end).
#  3. Mode A (ft_sgd_mode_a.sbatch, 2 groups of 2 ranks): one rank of g1
#     killed by SIGKILL mid-run; the agent restarts g1, it heals; the job
#     ends COMPLETED 0:0 and the 4 ranks' final states agree.
#  4. Mode B (ft_sgd_mode_b.sbatch, 4 groups of 2 + the lighthouse rank):
#     world rank 3 (g1) killed; the job ends COMPLETED 0:0, the script
#     reports 3 of 4 groups finished, the 6 survivors' final states agree.
#  5. Mode A with srun as the launcher (ft_sgd_mode_a_srun.sbatch, 2 groups
#     of 2, srun --mpi=pmix for Open MPI, pmi2 for MPICH: the script picks
#     it from the program's MPI): as 3, one rank of g1 SIGKILLed, g1
#     restarted by its agent and healed, COMPLETED 0:0, the 4 ranks agree.
#     Under MPICH also srun --mpi=pmix (a plugin MPICH does not speak): each
#     rank, a singleton, is refused by FT_Init naming SLURM_STEP_NUM_TASKS.
# 3 and 4 launch with mpirun, which is Open MPI's (Debian's default); in a
# build against MPICH they are skipped (with the reason) and 5 runs alone.
# Nothing is given to sbatch but the build's paths (FTMPI_BIN, APP), the
# output file and the test's small FTMPI_* deadlines.
. "$top_srcdir/tests/integration/common.sh"
lib_test_env
# the scripts must find their slots themselves: no oversubscription from here
unset OMPI_MCA_rmaps_base_oversubscribe

log() { echo "test_slurm: $*"; }
B=$(cd "$top_builddir" && pwd)
for f in ftmpi-lighthouse ftmpi-run examples/ft_sgd; do
    [ -x "$B/$f" ] || die "$B/$f is not built"
done
need_mpirun
# the sbatch scripts of 3 and 4 call `mpirun` from the PATH: Open MPI's
with_mpirun=1
[ "$FTI_MPI_IMPL" = mpich ] && with_mpirun=

# ---- 1. packages ------------------------------------------------------------
have_slurm() {
    command -v sbatch >/dev/null 2>&1 && command -v slurmctld >/dev/null 2>&1 &&
        command -v slurmd >/dev/null 2>&1 && command -v munged >/dev/null 2>&1
}
if ! have_slurm; then
    [ "$(id -u)" = 0 ] || skip "slurm-wlm/munge missing and not root: cannot install them"
    command -v apt-get >/dev/null 2>&1 || skip "slurm-wlm/munge missing and no apt-get"
    log "installing slurm-wlm munge (apt-get)"
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends slurm-wlm munge; } >"$TEST_TMPDIR/apt.log" 2>&1 ||
        { tail -n 20 "$TEST_TMPDIR/apt.log"; skip "apt-get install slurm-wlm munge failed"; }
    have_slurm || skip "slurm-wlm installed but sbatch/slurmctld/slurmd/munged not found"
fi
[ "$(id -u)" = 0 ] || skip "slurmd must run as root (it starts jobs as their user)"

# ---- 2. a one-node cluster ------------------------------------------------
T=$TEST_TMPDIR
mkdir -p "$T/state" "$T/spool" "$T/a" "$T/b" "$T/munge"
chmod 700 "$T/munge"
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$T/munge/munge.key"
munged --foreground --force --key-file="$T/munge/munge.key" --socket="$T/munge/munge.sock" \
    --pid-file="$T/munge/munged.pid" --log-file="$T/munge/munged.log" \
    --seed-file="$T/munge/munged.seed" >"$T/munge/munged.out" 2>&1 &
register_pid $!
wait_until 10 test -S "$T/munge/munge.sock" ||
    { cat "$T/munge/munged.out" "$T/munge/munged.log" 2>/dev/null; skip "munged did not start"; }

# slurmctld, slurmd, and the lighthouses at +2 and +4: below Linux's
# ephemeral ports (32768 and up), which other tests' connections take (two
# runs here skipped: "slurm_init_msg_engine_port error Address already in use")
port=$((20000 + $$ % 12000))
ncpu=$(nproc)
cat >"$T/slurm.conf" <<EOF
ClusterName=ftmpitest
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.sock
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
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
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$ncpu State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
SLURM_CONF=$T/slurm.conf
export SLURM_CONF
log "$(sbatch --version)"
slurmctld -D -i -f "$SLURM_CONF" >"$T/slurmctld.out" 2>&1 &
register_pid $!
slurmd -D -N localhost -f "$SLURM_CONF" >"$T/slurmd.out" 2>&1 &
register_pid $!
node_up() { sinfo -h -N -o '%T' 2>/dev/null | grep -Eq '^(idle|mixed|allocated)'; }
if ! wait_until 30 node_up; then
    sinfo -N 2>&1
    tail -n 20 "$T/slurmctld.log" "$T/slurmd.log" "$T/slurmctld.out" "$T/slurmd.out" 2>/dev/null
    skip "slurmctld/slurmd did not bring the node up (logs above)"
fi
log "node up: $(sinfo -h -N -o '%N %T cpus=%c')"

# ---- helpers ----------------------------------------------------------------
# job_field ID NAME: NAME=VALUE of `scontrol show job ID`
job_field() { scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
job_done() {
    case $(job_field "$1" JobState) in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED) return 0 ;;
    esac
    return 1
}
# pid_of ENVVAR=VALUE: the pid of a running ft_sgd of this test (its
# FTI_TEST_TAG: other tests on the machine run ft_sgd too) with that variable
pid_of() {
    for _e in $(grep -lzx "FTI_TEST_TAG=$FTI_TEST_TAG" /proc/[0-9]*/environ 2>/dev/null); do
        _p=${_e#/proc/}
        _p=${_p%/environ}
        [ "$(cat "/proc/$_p/comm" 2>/dev/null)" = ft_sgd ] || continue
        grep -qzx "$1" "$_e" 2>/dev/null && { echo "$_p"; return 0; }
    done
    return 1
}
# strip_group OUT TAG: the lines of OUT prefixed "[TAG] ", without it
strip_group() { sed -n "s/^\[$2\] //p" "$1"; }
# end_of ID OUT WHAT: wait for job ID, show its state and output's end
end_of() {
    wait_until 180 job_done "$1" || { cat "$2"; die "$3: job $1 still $(job_field "$1" JobState) after 180 s"; }
    _st=$(job_field "$1" JobState) _ec=$(job_field "$1" ExitCode)
    log "$3: job $1 ended $_st $_ec"
    grep '^ftmpi:' "$2"
    [ "$_st" = COMPLETED ] && [ "$_ec" = 0:0 ] || { tail -n 40 "$2"; die "$3: job $1 ended $_st $_ec"; }
}

STEPS=300
export FTMPI_BIN="$B"

if [ -z "$with_mpirun" ]; then
    log "modes A and B with mpirun: skipped: this build is MPICH's, the scripts call mpirun" \
        "(on the PATH: Open MPI's, which starts MPICH programs as singletons)"
else
    # ---- 3. mode A ------------------------------------------------------------
    APP="$B/examples/ft_sgd --steps $STEPS --sleep-ms 20 --print-every 1"
    LH_PORT=$((port + 2))
    export APP LH_PORT
    OUT=$T/a/out.txt
    ja=$(cd "$T/a" && sbatch --parsable -o "$OUT" "$top_srcdir/examples/slurm/ft_sgd_mode_a.sbatch") ||
        die "sbatch mode A failed"
    at_cleanup "scancel $ja"
    log "mode A: job $ja"
    wait_until 120 file_has "$OUT" '^\[g1\] step 50 loss' ||
        { cat "$OUT"; die "mode A: g1 did not reach step 50 (job $(job_field "$ja" JobState))"; }
    victim=$(pid_of FTMPI_REPLICA_ID=g1) || die "mode A: no rank of g1 found"
    log "mode A: SIGKILL to a rank of g1 (pid $victim: $(tr '\0' ' ' <"/proc/$victim/cmdline"))"
    kill -KILL "$victim"
    end_of "$ja" "$OUT" "mode A"
    strip_group "$OUT" g0 >"$T/a/g0.txt"
    strip_group "$OUT" g1 >"$T/a/g1.txt"
    grep -q '^ftmpi: group g1: agent exit 0, 1 restart(s)' "$OUT" || die "mode A: g1 was not restarted once"
    [ "$(sgd_failures "$T/a/g0.txt")" -ge 1 ] || die "mode A: g0 reports no failure survived"
    res=$(sgd_final_check 4 "$T/a/g0.txt" "$T/a/g1.txt") || die "mode A: $res"
    echo "$res" | grep -q "step $STEPS," || die "mode A: $res (want step $STEPS)"
    log "mode A: $res"
    n=$(count_lines "$OUT" '^\[lighthouse\]')
    log "mode A: $(wc -l <"$OUT") output lines, $n of them the lighthouse's"
    [ "$n" -lt 50 ] || die "mode A: the lighthouse wrote $n lines (per-step logging?)"

    # ---- 4. mode B ------------------------------------------------------------
    APP="$B/examples/ft_sgd --steps $STEPS --sleep-ms 20 --print-every 1"
    export APP
    OUT=$T/b/out.txt
    jb=$(cd "$T/b" && sbatch --parsable -o "$OUT" "$top_srcdir/examples/slurm/ft_sgd_mode_b.sbatch") ||
        die "sbatch mode B failed"
    at_cleanup "scancel $jb"
    log "mode B: job $jb"
    wait_until 120 file_has "$OUT" '^\[g1\.0\] step 50 loss' ||
        { cat "$OUT"; die "mode B: g1 did not reach step 50 (job $(job_field "$jb" JobState))"; }
    victim=$(pid_of OMPI_COMM_WORLD_RANK=3) || die "mode B: world rank 3 not found"
    kill -KILL "$victim"
    log "mode B: SIGKILL to world rank 3 (g1, pid $victim)"
    end_of "$jb" "$OUT" "mode B"
    grep -q '^ftmpi: 3 of 4 groups finished' "$OUT" || die "mode B: not 3 of 4 groups finished"
    grep -q '^ftmpi: group 1 lost' "$OUT" || die "mode B: group 1 not reported lost"
    sed 's/^\[[a-z0-9.]*\] //' "$OUT" >"$T/b/all.txt"
    res=$(sgd_final_check 6 "$T/b/all.txt") || die "mode B: $res"
    echo "$res" | grep -q "step $STEPS," || die "mode B: $res (want step $STEPS)"
    log "mode B: $res"
    grep -q 'PMIX ERROR' "$OUT" && die "mode B: PMIx errors in the output"
fi

# ---- 5. mode A, srun as the launcher -----------------------------------------
APP="$B/examples/ft_sgd --steps $STEPS --sleep-ms 20 --print-every 1"
LH_PORT=$((port + 4))
export APP LH_PORT
mkdir -p "$T/s"
OUT=$T/s/out.txt
js=$(cd "$T/s" && sbatch --parsable -o "$OUT" "$top_srcdir/examples/slurm/ft_sgd_mode_a_srun.sbatch") ||
    die "sbatch mode A (srun) failed"
at_cleanup "scancel $js"
log "mode A (srun): job $js"
wait_until 120 file_has "$OUT" '^\[g1\] step 50 loss' ||
    { cat "$OUT"; die "mode A (srun): g1 did not reach step 50 (job $(job_field "$js" JobState))"; }
head -n 1 "$OUT"
victim=$(pid_of FTMPI_REPLICA_ID=g1) || die "mode A (srun): no rank of g1 found"
grep -qzx "SLURM_JOB_ID=$js" "/proc/$victim/environ" || die "mode A (srun): pid $victim is not of job $js"
log "mode A (srun): SIGKILL to a rank of g1 (pid $victim, step $(tr '\0' '\n' <"/proc/$victim/environ" |
    sed -n 's/^SLURM_STEP_ID=//p'))"
kill -KILL "$victim"
end_of "$js" "$OUT" "mode A (srun)"
strip_group "$OUT" g0 >"$T/s/g0.txt"
strip_group "$OUT" g1 >"$T/s/g1.txt"
grep -q '^ftmpi: group g1: agent exit 0, 1 restart(s)' "$OUT" || die "mode A (srun): g1 was not restarted once"
grep -q "rank pid $victim ended without FT_Finalize" "$T/s/g1.txt" ||
    die "mode A (srun): g1's agent did not name the killed rank"
grep -q 'restart 1 of this group: healed step' "$T/s/g1.txt" || die "mode A (srun): g1 did not heal"
[ "$(sgd_failures "$T/s/g0.txt")" -ge 1 ] || die "mode A (srun): g0 reports no failure survived"
res=$(sgd_final_check 4 "$T/s/g0.txt" "$T/s/g1.txt") || die "mode A (srun): $res"
echo "$res" | grep -q "step $STEPS," || die "mode A (srun): $res (want step $STEPS)"
log "mode A (srun): $res"
# MPICH under srun's pmix plugin (which it does not speak): every rank is a
# singleton; FT_Init must refuse on each, naming srun's task count
if [ "$FTI_MPI_IMPL" = mpich ]; then
    FTMPI_REPLICA_ID=w0 FTMPI_LIGHTHOUSE=127.0.0.1:1 timeout 120 srun --mpi=pmix -n 2 \
        "$B/examples/ft_sgd" --steps 1 >"$T/s/wrong.txt" 2>&1
    n=$(count_lines "$T/s/wrong.txt" 'started 2 \(SLURM_STEP_NUM_TASKS=2, set by srun')
    [ "$n" -eq 2 ] || { cat "$T/s/wrong.txt"; die "srun --mpi=pmix: $n of 2 MPICH ranks refused"; }
    log "srun --mpi=pmix with MPICH: both ranks refused: $(grep -m 1 -o 'set by srun[^:]*' "$T/s/wrong.txt")"
fi
log "PASS"
exit 0
