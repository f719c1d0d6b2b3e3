# tests/bench/bench_quorum.sh - one ftmpi-lighthouse under 100 / 1,000 /
# 10,000 simulated groups (doc/PERFORMANCE.md section 5).
#
# Per group count N: a fresh `ftmpi-lighthouse --min-replicas N` (join and
# heartbeat timeouts long enough never to fire) and one bench_quorum process
# holding N connections (epoll, RLIMIT_NOFILE raised to the hard limit),
# which runs heartbeat rounds (the baseline), the formation round and fast
# rounds (see bench_quorum.c).  The formation latency can be measured once
# per lighthouse, so N = 100 and 1,000 use 7 lighthouses (the median is
# reported) and N = 10,000 one (its formation alone takes seconds).
# BENCH_QUICK: N = 100 and 1,000, 3 lighthouses of 3 rounds.
# BENCH_QUORUM_MODES (default "compact full"): compact replies (each group
# gets its own results, what mode A asks for) and/or the full member list
# (mode B, lh_sim, the dashboard); one table row per mode and N.
#
# Columns: setup (connecting N sockets, untimed by the targets), formation
# (last request -> last reply of the first quorum), the target and
# formation/target, the fast quorum (every member asks again), the
# lighthouse's CPU ms and peak RSS, the reply bytes per quorum and per
# group (constant if linear in N), and last the fast quorum's ratio to the
# heartbeat round on the same N connections (N small RPCs in flight).
. "$(dirname "$0")/bench_common.sh"
bench_selected quorum || exit 0

PROG=$BENCH_BIN/bench_quorum
MODES=${BENCH_QUORUM_MODES:-compact full}
[ -x "$PROG" ] || { note "missing $PROG"; exit 1; }
if [ -n "$BENCH_QUICK" ]; then
    SPECS="100:3:3 1000:3:3"
else
    SPECS="100:7:7 1000:7:7 10000:1:7"
fi
# the lighthouse inherits the raised soft limit
ulimit -n "$(ulimit -Hn)" 2>/dev/null

target_ms() {
    case $1 in
    1000) echo 50 ;;
    10000) echo 500 ;;
    *) echo - ;;
    esac
}

: >"$BENCH_OUT/quorum.txt"
: >"$BENCH_OUT/quorum.raw"
status=0
for mode in $MODES; do
    case $mode in
    compact) cflag=1 ;;
    full) cflag=0 ;;
    *) note "unknown mode '$mode' in BENCH_QUORUM_MODES"; status=1; continue ;;
    esac
    for spec in $SPECS; do
        n=${spec%%:*}
        rest=${spec#*:}
        inst=${rest%%:*}
        rounds=${rest#*:}
        i=0
        while [ $i -lt "$inst" ]; do
            note "$mode replies, groups=$n: lighthouse $((i + 1))/$inst, $rounds rounds"
            start_lighthouse "$BT/lh.$mode.$n.$i" --min-replicas "$n" --join-timeout-ms 600000 \
                --heartbeat-timeout-ms 600000 --quorum-tick-ms 100 || { status=1; break; }
            if ! timeout -s KILL 300 "$PROG" --lighthouse "$LH_ADDR" --groups "$n" \
                --rounds "$rounds" --pid "$LH_PID" --timeout-ms 120000 --compact "$cflag" \
                >"$BT/q.$mode.$n.$i" 2>&1; then
                note "bench_quorum $mode groups=$n failed:"
                tail -n 5 "$BT/q.$mode.$n.$i" >&2
                status=1
            fi
            stop_lighthouse
            { echo "# mode $mode"; cat "$BT/q.$mode.$n.$i"; } >>"$BENCH_OUT/quorum.raw"
            i=$((i + 1))
        done
    done
done

{
    echo "# bench_quorum $(date -u +%Y-%m-%dT%H:%M:%SZ) $BENCH_MACHINE (at the start)"
    printf "%7s %7s %4s %8s %9s %7s %8s %9s %9s %8s %5s %7s %11s %9s %8s\n" replies groups n_lh \
        setup_s form_ms target form/tgt fast_ms hb_ms cpu_ms sys% rss_MB bytes/q B/q/group fast/hb
    for mode in $MODES; do
    for spec in $SPECS; do
        n=${spec%%:*}
        cat "$BT"/q."$mode"."$n".* 2>/dev/null | awk -v n="$n" -v mode="$mode" -v tgt="$(target_ms "$n")" '
            function med(a, k,   i, j, t) {
                for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
                return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
            }
            $1 == "CONNECT" { conn[++nc] = $3 / 1e6 }
            $1 == "SUMMARY" {
                ns++; form[ns] = $7 / 1e3; fast[ns] = $9 / 1e3; hb[ns] = $5 / 1e3
                bytes[ns] = $11; cpu[ns] = $13; rss[ns] = $17 / 1024
                sys[ns] = $13 > 0 ? 100 * $21 / $13 : 0
            }
            END {
                if (ns == 0) { printf "%7s %7d  (no result)\n", mode, n; exit }
                f = med(form, ns); fa = med(fast, ns); h = med(hb, ns)
                r = tgt == "-" ? "-" : sprintf("%.2f", f / tgt)
                printf "%7s %7d %4d %8.2f %9.2f %7s %8s %9.2f %9.2f %8.1f %5.0f %7.1f %11.0f %9.0f %8.2f\n",
                    mode, n, ns, med(conn, nc), f, tgt, r, fa, h, med(cpu, ns), med(sys, ns), med(rss, ns),
                    med(bytes, ns), med(bytes, ns) / n, fa / h
            }'
    done
    done
    echo "(replies: compact = each group gets its own results (mode A), full = the member list;"
    echo " medians over the lighthouses; fast_ms and hb_ms are medians of each lighthouse's rounds;"
    echo " cpu_ms = lighthouse utime+stime per fast quorum, sys% = the stime part; rss_MB = its VmHWM"
    echo " at the end; setup_s = connecting the N sockets, not part of any target)"
    echo
} | table_out quorum.txt
exit $status
