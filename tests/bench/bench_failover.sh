# tests/bench/bench_failover.sh - how long a job is without a lighthouse
# when the leader of three (ftmpi-lighthouse --etcd, a one-member etcd on
# loopback) is SIGKILLed (doc/PERFORMANCE.md, "Lighthouse failover").
#
# Per kill: the leader is SIGKILLed; at once a client given the three
# (lh_probe quorum a,b,c) asks for a quorum; the time from the kill to its
# answer, issued by the new leader, is one sample (the lease TTL, 2 s,
# bounds it; the issue's target is TTL + 1 s).  The killed lighthouse is
# started again as a standby, so every kill finds three.  10 kills
# (BENCH_QUICK: 3); the median, min and max are reported.
. "$(dirname "$0")/bench_common.sh"
bench_selected failover || exit 0

PROBE=$top_builddir/tests/integration/lh_probe
ETCD_PROBE=$top_builddir/tests/integration/etcd_probe
for _p in "$PROBE" "$ETCD_PROBE"; do
    [ -x "$_p" ] || { note "missing $_p"; exit 1; }
done
"$ETCD_PROBE" built 2>/dev/null || { note "skipped: built without etcd support"; exit 0; }
command -v etcd >/dev/null 2>&1 || { note "skipped: etcd not installed (Debian: etcd-server)"; exit 0; }
KILLS=10
[ -n "$BENCH_QUICK" ] && KILLS=3
TTL=2
P=/ftmpi/bench-$$

r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
CP=$((20000 + r % 40000))
URL=http://127.0.0.1:$CP
etcd --name b --data-dir "$BT/etcd" --listen-client-urls "$URL" --advertise-client-urls "$URL" \
    --listen-peer-urls "http://127.0.0.1:$((CP + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((CP + 1))" \
    --initial-cluster "b=http://127.0.0.1:$((CP + 1))" >"$BT/etcd.log" 2>&1 </dev/null &
register_pid $!
i=0
until "$ETCD_PROBE" get "$URL" /ready >/dev/null 2>&1 || [ $? -eq 3 ]; do
    i=$((i + 1))
    [ $i -lt 600 ] || { note "etcd did not start"; tail -3 "$BT/etcd.log" >&2; exit 1; }
    sleep 0.1
done

# lh N: (re)starts lighthouse N (1..3) on its port (0 the first time)
lh() {
    eval "_port=\${PORT_$1:-0}"
    "$LIGHTHOUSE" --bind "127.0.0.1:$_port" --log-level info --min-replicas 1 \
        --join-timeout-ms 0 --heartbeat-timeout-ms 5000 --etcd "$URL" --etcd-prefix "$P" \
        --etcd-ttl $TTL >"$BT/lh$1.out" 2>"$BT/lh$1.err" </dev/null &
    eval "PID_$1=$!"
    register_pid $!
    _i=0
    until grep -q 'listening on' "$BT/lh$1.out" 2>/dev/null; do
        _i=$((_i + 1))
        [ $_i -lt 200 ] || { note "lighthouse $1 did not start"; cat "$BT/lh$1.err" >&2; exit 1; }
        sleep 0.05
    done
    eval "PORT_$1=$(sed -n 's/.*listening on [^ ]*:\([0-9]*\) .*/\1/p' "$BT/lh$1.out")"
}
lh 1
lh 2
lh 3
ALL=127.0.0.1:$PORT_1,127.0.0.1:$PORT_2,127.0.0.1:$PORT_3
timeout 60 "$PROBE" quorum "$ALL" g 0 30000 >/dev/null 2>&1 || { note "no first quorum"; exit 1; }

samples=
k=0
while [ $k -lt $KILLS ]; do
    k=$((k + 1))
    leader=$("$ETCD_PROBE" get "$URL" "$P/leader")
    n=0
    for m in 1 2 3; do eval "[ \"127.0.0.1:\$PORT_$m\" = \"$leader\" ]" && n=$m; done
    [ $n -gt 0 ] || { note "etcd names '$leader', none of ours"; exit 1; }
    eval "pid=\$PID_$n"
    t0=$(now_us)
    kill -KILL "$pid"
    timeout 60 "$PROBE" quorum "$ALL" g "$k" 30000 >"$BT/q$k.out" 2>&1 ||
        { note "kill $k: no quorum: $(cat "$BT/q$k.out")"; exit 1; }
    t1=$(now_us)
    ms=$(((t1 - t0) / 1000))
    note "kill $k of lighthouse $n: the next quorum after $ms ms"
    samples="$samples $ms"
    { wait "$pid"; } 2>/dev/null
    lh $n
    sleep 1 # the restarted one settles as a standby
done

stats=$(echo "$samples" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk '
    { v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
    printf "%d %d %d %d", NR, m, v[1], v[NR] }')
set -- $stats
{
    echo "| kills | lease TTL | next quorum after the leader's SIGKILL: median | min | max | target (TTL + 1 s) | machine |"
    echo "|---|---|---|---|---|---|---|"
    echo "| $1 | ${TTL} s | $2 ms | $3 ms | $4 ms | $((TTL * 1000 + 1000)) ms | $BENCH_MACHINE |"
} | table_out failover.md
