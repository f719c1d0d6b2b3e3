# tests/bench/bench_recovery_stripe.sh - parts C and D of bench_recovery.sh
# (sourced by it; see its header): striped healing from 1 and from 3
# sources, on loopback and through rate-limited links.

# heal_from N SIZE TAG: a lighthouse and N source groups (one rank each,
# src0.. in namespaces $NS_SRC0.. when NS_SRC is set), then STRIPE_REPS
# times a joining group ("healer", in NS_HEALER when set) that heals from
# them and is killed after its first committed step.  Appends "bytes ms"
# of each successful heal to $BT/stripe.TAG.  False when a group does not
# start or commit.
heal_from() {
    _n=$1
    _size=$2
    _tag=$3
    _ok=0
    : >"$BT/events.log"
    : >"$BT/stripe.$_tag"
    if [ -n "$NS_SRC" ]; then
        start_lighthouse_ns "$BT/lh.$_tag" || return 1
    else
        start_lighthouse "$BT/lh.$_tag" --min-replicas 1 --heartbeat-timeout-ms $HB_MS \
            --join-timeout-ms 5000 --quorum-tick-ms 50 || return 1
    fi
    _pgs=""
    _i=0
    while [ $_i -lt "$_n" ]; do
        RANK_NS=${NS_SRC:+$NS_SRC$_i} RANK_HOST=${NS_SRC:+$NET.$((_i + 2))} \
            start_rank "$_tag.s$_i" "src$_i" "$_size"
        _pgs="$_pgs $BG_PID"
        _i=$((_i + 1))
    done
    if ! wait_match 180 "$BT/$_tag.s0" "$FIRST_COMMIT" -v "p=$_n" -v t=0 >/dev/null; then
        note "$_tag: the $_n source groups did not commit together"
        tail -n 5 "$BT/$_tag.s0" >&2
        _ok=1
    fi
    _rep=0
    while [ $_ok -eq 0 ] && [ $_rep -lt "$STRIPE_REPS" ]; do
        RANK_NS=$NS_HEALER RANK_HOST=$HEALER_HOST start_rank "$_tag.h$_rep" healer "$_size"
        _pg=$BG_PID
        if ! wait_match 180 "$BT/$_tag.h$_rep" "$FIRST_COMMIT" -v p=1 -v t=0 >/dev/null; then
            note "$_tag: the healer did not commit"
            tail -n 5 "$BT/$_tag.h$_rep" >&2
            _ok=1
        fi
        kill -KILL "$(rank_pid "$_tag.h$_rep")" 2>/dev/null
        wait_pids 20 "$_pg"
        kill_group "$_pg"
        _rep=$((_rep + 1))
    done
    for _pg in $_pgs; do kill_group "$_pg"; done
    stop_lighthouse
    grep '"event":"heal"' "$BT/events.log" | grep '"replica_id":"healer"' | grep '"error":0' |
        sed 's/.*"bytes":\([0-9]*\).*"heal_ms":\([0-9]*\).*/\1 \2/' >>"$BT/stripe.$_tag"
    return $_ok
}

# The row of TAG: "label bytes median_ms min_ms max_ms n MiB/s".
stripe_row() {
    _b=$(awk 'NR == 1 { print $1 }' "$BT/stripe.$2")
    set -- "$1" "${_b:-0}" $(awk '{ print $2 }' "$BT/stripe.$2" | stats)
    awk -v l="$1" -v b="$2" -v m="$3" -v lo="$4" -v hi="$5" -v n="$6" 'BEGIN {
        printf "%-26s %12d %9.1f %9.1f %9.1f %3d %9.1f\n", l, b, m, lo, hi, n,
            (m > 0 ? b / 1048576 / (m / 1000) : 0) }'
}

stripe_header() {
    printf "%-26s %12s %9s %9s %9s %3s %9s\n" heal bytes median_ms min_ms max_ms n MiB/s
}

# ---- C. striped healing on loopback ----------------------------------------
if part C; then
    NS_SRC="" NS_HEALER="" HEALER_HOST=""
    rowsC=""
    for size in $STRIPE_SIZES; do
        for n in 1 3; do
            note "C: healing $size from $n source(s), $STRIPE_REPS times"
            heal_from $n "$size" "c$size.$n" || status=1
        done
        "$STREAM" --bytes "$size" --reps "$STRIPE_REPS" >"$BT/rawC$size" 2>&1 || status=1
    done
    {
        echo "C. striped healing on loopback: a joining group heals from 1 or 3 running groups"
        stripe_header
        for size in $STRIPE_SIZES; do
            stripe_row "$size from 1 source" "c$size.1"
            stripe_row "$size from 3 sources" "c$size.3"
            awk -v s="$size" '$1 == "RESULT" { printf "%-26s %12d %9.1f %9s %9s %3s %9.1f\n",
                s " raw TCP stream", $2, $3 / 1000, "-", "-", "-", $6 }' "$BT/rawC$size"
        done
        echo "(heal_ms: FTMPI_EVENT_LOG heal lines of the healer; 3 sources: 3 connections at once)"
        echo
    } | table_out recovery.txt
fi

# ---- D. three rate-limited sources against one --------------------------------
# start_lighthouse_ns OUT: ftmpi-lighthouse in namespace ${NSB}L on $NET.1.
start_lighthouse_ns() {
    : >"$1"
    ip netns exec "${NSB}L" "$LIGHTHOUSE" --bind "$NET.1:0" --log-level warn --min-replicas 1 \
        --heartbeat-timeout-ms $HB_MS --join-timeout-ms 5000 --quorum-tick-ms 50 \
        >"$1" 2>&1 </dev/null &
    LH_PID=$!
    register_pid "$LH_PID"
    LH_ADDR=""
    _i=0
    while [ $_i -lt 100 ] && [ -z "$LH_ADDR" ]; do
        LH_ADDR=$(sed -n 's/^ftmpi-lighthouse listening on \([^ ]*\).*$/\1/p' "$1")
        [ -n "$LH_ADDR" ] || sleep 0.05
        _i=$((_i + 1))
    done
    [ -n "$LH_ADDR" ] || { note "the lighthouse did not start in ${NSB}L"; cat "$1" >&2; return 1; }
}

# ns_setup: namespaces ${NSB}L (bridge, lighthouse, healer) and ${NSB}S0..2
# (a source each, its veth sending through tbf 1gbit); prints why not.
ns_setup() {
    [ "$(id -u)" -eq 0 ] || { echo "not root"; return 1; }
    command -v ip >/dev/null && command -v tc >/dev/null || { echo "no ip or tc"; return 1; }
    ip netns add "${NSB}L" 2>&1 || return 1
    ip -n "${NSB}L" link set lo up &&
        ip -n "${NSB}L" link add br0 type bridge 2>&1 &&
        ip -n "${NSB}L" addr add "$NET.1/24" dev br0 && ip -n "${NSB}L" link set br0 up || return 1
    for i in 0 1 2; do
        ns=${NSB}S$i
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

if part D; then
    NSB=fts$$
    NET=10.78.$(($$ % 250 + 1))
    NS_MADE="${NSB}L ${NSB}S0 ${NSB}S1 ${NSB}S2" # ns_setup runs in a subshell
    if why=$(ns_setup); then
        NS_SRC=${NSB}S NS_HEALER=${NSB}L HEALER_HOST=$NET.1
        for n in 1 3; do
            note "D: healing $NS_SIZE from $n source(s) behind tbf 1gbit, $STRIPE_REPS times"
            heal_from $n "$NS_SIZE" "d.$n" || status=1
        done
        ns_cleanup
        {
            echo "D. striped healing through rate-limited links: each source group in its own network"
            echo "   namespace, its veth sending through 'tc qdisc add dev V root tbf rate 1gbit burst 1mb"
            echo "   latency 100ms'; lighthouse and healer on the bridge (unlimited); 1 Gbit/s = 119.2 MiB/s"
            stripe_header
            stripe_row "$NS_SIZE from 1 source" d.1
            stripe_row "$NS_SIZE from 3 sources" d.3
            m1=$(awk '{ print $2 }' "$BT/stripe.d.1" | stats | cut -d' ' -f1)
            m3=$(awk '{ print $2 }' "$BT/stripe.d.3" | stats | cut -d' ' -f1)
            echo "3 sources vs 1 (median heal time 1 / 3): $(div "$m1" "$m3")x (target >= 2.5x)"
            echo
        } | table_out recovery.txt
    else
        ns_cleanup
        note "D skipped: network namespaces with tbf: $why"
        printf "D. skipped: %s\n\n" "$why" | table_out recovery.txt
    fi
fi
