# tests/bench/bench_outer.sh - LocalSGD and DiLoCo (FT_Outer_*, issue 27)
# against per-step data parallelism (one FT_Allreduce of the gradient per
# step), on examples/ft_sgd, 2 groups of one rank (doc/PERFORMANCE.md,
# "LocalSGD and DiLoCo").
#
# A. quality and bytes (loopback): ft_sgd's task (64 features, batch 32,
#    seeds 42 and 1..5 of the data), 400 inner steps, per step (dp) and
#    with H = 20 (--localsgd 20, --diloco 20 with ft_sgd's outer lr 1.0 and
#    Nesterov momentum 0.5, and with DiLoCo's paper setting 0.7 / 0.9).
#    Final loss on the whole data set (--eval 8192), the same in every
#    group; payload: bytes each rank handed to FT_Allreduce per inner step
#    (dp: (F + 2) * 4 every step; outer: ft_sgd's "outer ... bytes" line).
# B. throughput behind 1 Gbit/s: each group in its own network namespace,
#    its veth sending through `tc tbf rate 1gbit` (as bench_recovery.sh D),
#    the lighthouse on the bridge.  F = 2,097,151 features (an 8 MiB
#    state), batch 1, S inner steps (200; BENCH_QUICK: 60).  Inner steps
#    per second of group 0 between its second and its last step line (time
#    stamped by bench_stamp; dp prints every 10 steps, the outer modes every
#    sync), and each group's veth tx bytes over the whole run per inner step
#    (start-up, its init-sync heal, heartbeats and quorums included), and
#    group 0's CPU time per inner step (/usr/bin/time over the run): an
#    8 MiB dp step puts 8.4 MB through the 1 Gbit/s link (67 ms) and an
#    outer inner step 1/20 of that, so the ratio is (c + 67) / (c + 3.4)
#    ms for an inner step's compute c, which is its CPU time only on an
#    idle core (wall ms / CPU ms: how long it waited for one).
#    Needs root, ip and tc; otherwise B is skipped and says why.
. "$(dirname "$0")/bench_common.sh"
bench_selected outer || exit 0

SGD=$top_builddir/examples/ft_sgd
[ -x "$SGD" ] || { note "missing $SGD"; exit 1; }
S=200
SEEDS="42 1 2 3 4 5"
if [ -n "$BENCH_QUICK" ]; then
    S=60
    SEEDS="42"
fi
status=0
TIME_CMD= # part B: /usr/bin/time's command, its output file follows

# run_pair TAG NSPREFIX FT_SGD_FLAGS...: a lighthouse (min 2 replicas) and
# groups o0 and o1 (in namespaces NSPREFIX0/1 when NSPREFIX is set, the
# lighthouse then in ${NSB}L); stdout time-stamped into $BT/TAG.<i>.
# False unless both exit 0.
run_pair() {
    _tag=$1
    _ns=$2
    shift 2
    if [ -n "$_ns" ]; then
        : >"$BT/$_tag.lh"
        ip netns exec "${NSB}L" "$LIGHTHOUSE" --bind "$NET.1:0" --log-level warn --min-replicas 2 \
            --join-timeout-ms 30000 --heartbeat-timeout-ms 30000 --quorum-tick-ms 50 \
            >"$BT/$_tag.lh" 2>&1 </dev/null &
        LH_PID=$!
        register_pid "$LH_PID"
        LH_ADDR=""
        _i=0
        while [ $_i -lt 100 ] && [ -z "$LH_ADDR" ]; do
            LH_ADDR=$(sed -n 's/^ftmpi-lighthouse listening on \([^ ]*\).*$/\1/p' "$BT/$_tag.lh")
            [ -n "$LH_ADDR" ] || sleep 0.05
            _i=$((_i + 1))
        done
        [ -n "$LH_ADDR" ] || { note "$_tag: no lighthouse"; return 1; }
    else
        start_lighthouse "$BT/$_tag.lh" --min-replicas 2 --join-timeout-ms 30000 \
            --heartbeat-timeout-ms 30000 --quorum-tick-ms 50 || return 1
    fi
    _pids=""
    for _i in 0 1; do
        _host=127.0.0.1
        [ -z "$_ns" ] || _host=$NET.$((_i + 2))
        bg_group "$BT/$_tag.$_i" ${_ns:+ip netns exec "$_ns$_i"} env FTMPI_LIGHTHOUSE="$LH_ADDR" \
            FTMPI_REPLICA_ID="o$_i" FTMPI_BACKEND=tcp FTMPI_BIND_HOST="$_host" \
            FTMPI_TIMEOUT_MS=60000 timeout -s KILL 600 \
            sh -c '{ "$@" 2>&1; echo "EXIT $?"; } | "$0"' "$BENCH_BIN/bench_stamp" \
            $TIME_CMD ${TIME_CMD:+"$BT/$_tag.$_i.cpu"} \
            "$MPIRUN" --oversubscribe --bind-to none -np 1 "$SGD" "$@"
        _pids="$_pids $BG_PID"
    done
    for _p in $_pids; do wait "$_p"; done
    stop_lighthouse
    for _i in 0 1; do
        grep -q ' EXIT 0$' "$BT/$_tag.$_i" || {
            note "$_tag: group $_i failed"
            tail -n 5 "$BT/$_tag.$_i" >&2
            return 1
        }
    done
}

final_loss() { sed -n 's/^[0-9]* final loss \([0-9.]*\)$/\1/p' "$BT/$1.0"; }
outer_bytes() { awk '$2 == "outer" { print $9 }' "$BT/$1.0"; }

# ---- A. quality and bytes ------------------------------------------------------
MODES="dp localsgd diloco diloco-paper"
mode_flags() {
    case $1 in
    dp) echo "" ;;
    localsgd) echo "--localsgd 20" ;;
    diloco) echo "--diloco 20" ;;
    diloco-paper) echo "--diloco 20 --outer-lr 0.7 --outer-momentum 0.9" ;;
    esac
}
for seed in $SEEDS; do
    for m in $MODES; do
        note "A: seed $seed, $m"
        # shellcheck disable=SC2046
        run_pair "a.$seed.$m" "" --steps 400 --eval 8192 --print-every 20 --seed "$seed" \
            $(mode_flags "$m") || status=1
    done
done
{
    echo "A. ft_sgd's task (64 features, batch 32, 2 groups, 400 inner steps): final loss"
    echo "   on all 8192 samples, and FT_Allreduce payload per inner step (bytes per rank)"
    printf "%-6s" seed
    for m in $MODES; do printf " %13s" "$m"; done
    echo
    for seed in $SEEDS; do
        printf "%-6s" "$seed"
        dp=$(final_loss "a.$seed.dp")
        for m in $MODES; do
            l=$(final_loss "a.$seed.$m")
            awk -v l="$l" -v d="$dp" -v dp="$m" 'BEGIN {
                if (l == "") printf " %13s", "-"
                else if (dp == "dp") printf " %13.6f", l
                else printf " %7.5f%+5.1f%%", l, (l / d - 1) * 100 }'
        done
        echo
    done
    printf "%-6s" "B/step"
    for m in $MODES; do
        if [ "$m" = dp ]; then
            printf " %13.1f" $(((64 + 2) * 4))
        else
            b=$(outer_bytes "a.42.$m")
            awk -v b="${b:-0}" 'BEGIN { printf " %13.1f", b / 400 }'
        fi
    done
    echo
    echo "(outer: 20 syncs of (64 + 2) floats, and the join of the fresh start, which reduces nothing;"
    echo " % against dp of the same seed)"
    echo
} | table_out outer.txt

# ---- B. throughput behind 1 Gbit/s ------------------------------------------------
ns_setup() {
    [ "$(id -u)" -eq 0 ] || { echo "not root"; return 1; }
    command -v ip >/dev/null && command -v tc >/dev/null || { echo "no ip or tc"; return 1; }
    ip netns add "${NSB}L" 2>&1 || return 1
    ip -n "${NSB}L" link set lo up &&
        ip -n "${NSB}L" link add br0 type bridge 2>&1 &&
        ip -n "${NSB}L" addr add "$NET.1/24" dev br0 && ip -n "${NSB}L" link set br0 up || return 1
    for i in 0 1; do
        ns=${NSB}G$i
        ip netns add "$ns" 2>&1 || return 1
        ip -n "$ns" link set lo up &&
            ip link add "v$NSB$i" type veth peer name "p$NSB$i" 2>&1 &&
            ip link set "v$NSB$i" netns "$ns" && ip link set "p$NSB$i" netns "${NSB}L" &&
            ip -n "${NSB}L" link set "p$NSB$i" master br0 up &&
            ip -n "$ns" addr add "$NET.$((i + 2))/24" dev "v$NSB$i" &&
            ip -n "$ns" link set "v$NSB$i" up || return 1
        tc -n "$ns" qdisc add dev "v$NSB$i" root tbf rate 1gbit burst 1mb latency 100ms 2>&1 ||
            return 1
    done
}
ns_cleanup() { for ns in $NS_MADE; do ip netns del "$ns" 2>/dev/null; done; }
tx_bytes() { ip netns exec "${NSB}G$1" cat "/sys/class/net/v$NSB$1/statistics/tx_bytes"; }

# cpu_ms TAG STEPS: group 0's CPU time (user + system, of mpirun and
# ft_sgd, the whole run) per inner step, in ms; "-" without /usr/bin/time.
cpu_ms() {
    awk -F: -v s="$2" 'NF == 2 && $1 ~ /^[0-9.]+$/ { printf "%.1f\n", ($1 + $2) * 1000 / s; f = 1 }
        END { if (!f) print "-" }' "$BT/$1.0.cpu" 2>/dev/null || echo -
}

# rate TAG STEP_PER_LINE: inner steps per second of group 0 between its
# second and its last "step N" line.
rate() {
    awk -v k="$2" '$2 == "step" && $4 == "loss" { n++; if (n == 2) { t0 = $1; s0 = $3 } t1 = $1; s1 = $3 }
        END { if (n < 3 || t1 <= t0) print 0; else printf "%.2f\n", (s1 - s0) * k / ((t1 - t0) / 1e6) }' \
        "$BT/$1.0"
}

NSB=fto$$
NET=10.79.$(($$ % 250 + 1))
NS_MADE="${NSB}L ${NSB}G0 ${NSB}G1"
if why=$(ns_setup); then
    F=2097151
    # group 0's CPU time: with the wall time per step it shows how much of
    # an inner step is compute and how much waiting for a loaded core
    TIME_CMD=
    [ -x /usr/bin/time ] && TIME_CMD="/usr/bin/time -f %U:%S -o"
    load0=$(cut -d ' ' -f 1-3 /proc/loadavg)
    rows=""
    for m in dp localsgd diloco; do
        note "B: $m, $S inner steps, $F features, behind tbf 1gbit"
        b0=$(tx_bytes 0)
        b1=$(tx_bytes 1)
        pe=10
        [ "$m" = dp ] || pe=1
        # shellcheck disable=SC2046
        run_pair "b.$m" "${NSB}G" --steps "$S" --features $F --batch 1 --eval 16 \
            --print-every $pe $(mode_flags "$m") || status=1
        tx0=$(($(tx_bytes 0) - b0))
        tx1=$(($(tx_bytes 1) - b1))
        k=1
        [ "$m" = dp ] || k=20
        r=$(rate "b.$m" $k)
        rows="$rows$m $r $tx0 $tx1 $(cpu_ms "b.$m" "$S")
"
    done
    ns_cleanup
    {
        echo "B. 2 groups, each behind tc tbf 1gbit, $F features (8 MiB), batch 1, $S inner steps"
        printf "%-10s %10s %8s %13s %13s %10s %10s\n" mode "steps/s" "vs dp" "tx B/step g0" \
            "tx B/step g1" "wall ms" "CPU ms"
        dpr=$(echo "$rows" | awk '$1 == "dp" { print $2 }')
        echo "$rows" | awk -v d="$dpr" -v s="$S" 'NF == 5 {
            printf "%-10s %10.2f %7.2fx %13.0f %13.0f %10.1f %10s\n", $1, $2, (d > 0 ? $2 / d : 0),
                $3 / s, $4 / s, ($2 > 0 ? 1000 / $2 : 0), $5 }'
        echo "(steps/s, wall ms: group 0 in steady state, between its 2nd and last step line;"
        echo " tx: the group's veth over the whole run; CPU ms: group 0's user + system time over"
        echo " the whole run, start-up included, per inner step)"
        echo "load average before: $load0, after: $(cut -d ' ' -f 1-3 /proc/loadavg)"
        echo "machine: $BENCH_MACHINE"
        echo
    } | table_out outer.txt
else
    ns_cleanup
    note "B skipped: $why"
    echo "B. skipped: $why" | table_out outer.txt
fi
exit $status
