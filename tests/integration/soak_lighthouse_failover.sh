#!/bin/sh
# soak_lighthouse_failover.sh - not part of `make check` (minutes long):
# two groups train for SOAK_SECONDS (600) with three lighthouses over a real
# etcd while the leader is SIGKILLed every SOAK_EVERY seconds (20) and
# started again as a standby; at the end equal states, every rank at the
# same step, no quorum id with two memberships in the event logs.
#   make -C _build check TESTS=  # builds what it needs; then from the build dir:
#   top_builddir=$PWD top_srcdir=.. SOAK_SECONDS=600 sh ../tests/integration/soak_lighthouse_failover.sh
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
. "$top_srcdir/tests/integration/etcd_lib.sh"
: "${SOAK_SECONDS:=600}" "${SOAK_EVERY:=20}"
T=$TEST_TMPDIR
P=/ftmpi/soak-$$

start_etcd e1
lh() { # lh N [PORT]: (re)starts lighthouse N
    _before=$(count_lines "$T/lh_$1.log" 'listening on')
    setsid "$E2E_LH_BIN" --bind "127.0.0.1:${2:-0}" --min-replicas 1 --heartbeat-timeout-ms 2000 \
        --join-timeout-ms "$E2E_JOIN_TIMEOUT_MS" --quorum-tick-ms 50 --log-level info \
        --etcd "$ETCD_URL" --etcd-prefix "$P" >>"$T/lh_$1.log" 2>&1 </dev/null &
    eval "PID_$1=$!"
    register_pid $!
    _lh_up() { [ "$(count_lines "$T/lh_$1.log" 'listening on')" -gt "$_before" ]; }
    wait_until 60 _lh_up "$1" || e2e_fail "lighthouse $1 did not start"
    eval "PORT_$1=$(grep 'listening on' "$T/lh_$1.log" | tail -1 | sed -n 's/.*listening on [^ ]*:\([0-9]*\) .*/\1/p')"
}
for n in 1 2 3; do lh $n 0; done
FTMPI_LIGHTHOUSE=127.0.0.1:$PORT_1,127.0.0.1:$PORT_2,127.0.0.1:$PORT_3
export FTMPI_LIGHTHOUSE
steps=$((SOAK_SECONDS * 40 + 400))
for g in g0 g1; do
    e2e_group_start $g 1 --steps $steps --sleep-ms 20 --print-every 50
done
e2e_wait_step g0 50 60
end=$(($(date +%s) + SOAK_SECONDS))
kills=0
while [ "$(date +%s)" -lt "$end" ] && ! file_has "$T/g0.out" '^steps committed'; do
    sleep "$SOAK_EVERY"
    leader=$("$ETCD_PROBE" get "$ETCD_URL" "$P/leader") || continue
    for n in 1 2 3; do
        eval "[ \"127.0.0.1:\$PORT_$n\" = \"$leader\" ]" || continue
        eval "kill -KILL \$PID_$n"
        kills=$((kills + 1))
        e2e_log "kill $kills: leader $n ($leader) at step $(e2e_step g0)"
        eval "lh $n \$PORT_$n"
    done
done
e2e_wait_agents $((SOAK_SECONDS + 300)) g0 g1
e2e_check_states g0 g1
e2e_check_final 1 g0 g1
sed -n 's/.*"event":"quorum".*"quorum_id":\([0-9][0-9]*\),"members":\(\[[^]]*\]\).*/\1 \2/p' \
    "$T/g0.events" "$T/g1.events" | sort -u >"$T/ids"
dup=$(awk '{ print $1 }' "$T/ids" | uniq -d)
[ -z "$dup" ] || e2e_fail "quorum id(s) issued for two memberships: $dup"
e2e_log "$kills leader kills in ${SOAK_SECONDS}s; $(wc -l <"$T/ids") quorum ids, each with one membership"
echo "PASS ($TEST_NAME)"
