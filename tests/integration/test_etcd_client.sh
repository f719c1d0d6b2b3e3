#!/bin/sh
# The etcd client of the lighthouse (lighthouse/etcd.h) against a real etcd
# started here: leases (grant, keepalive, revoke, expiry), transactions
# (compare-create, guarded by a create or a mod revision), range, binary
# values, an endpoint list whose first member is down, bad URLs.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/etcd_lib.sh"
need_cmd timeout

start_etcd e1
timeout 120 "$ETCD_PROBE" client "$ETCD_URL" >"$TEST_TMPDIR/probe.out" 2>&1 ||
    die "the client's checks failed: $(cat "$TEST_TMPDIR/probe.out")"
cat "$TEST_TMPDIR/probe.out"
kill -TERM "$ETCD_PID"
wait_pid_timeout "$ETCD_PID" 30 || die "etcd did not stop within 30 s of SIGTERM"
echo "PASS (etcd_client)"
