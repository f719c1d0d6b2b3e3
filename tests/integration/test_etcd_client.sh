#!/bin/sh
# The etcd client of the lighthouse (lighthouse/etcd.h) against a real etcd
# started here: leases (grant, keepalive, revoke, expiry), transactions
# (compare-create, guarded by a create or a mod revision), range, binary
# values, an endpoint list whose first member is down, bad URLs; etcd's
# user/password authentication.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/etcd_lib.sh"
need_cmd timeout

start_etcd e1
timeout 120 "$ETCD_PROBE" client "$ETCD_URL" >"$TEST_TMPDIR/probe.out" 2>&1 ||
    die "the client's checks failed: $(cat "$TEST_TMPDIR/probe.out")"
cat "$TEST_TMPDIR/probe.out"

# etcd's own authentication: a user with read-write on /ftmpi/
if command -v etcdctl >/dev/null 2>&1; then
    E="etcdctl --endpoints=$ETCD_URL --command-timeout=20s"
    for c in "user add root:root-pw" "user add lh:lh-pw" "role add lhrole" \
        "role grant-permission lhrole --prefix=true readwrite /ftmpi/" \
        "user grant-role lh lhrole" "auth enable"; do
        # shellcheck disable=SC2086 # words on purpose
        timeout 60 $E $c >"$TEST_TMPDIR/etcdctl.out" 2>&1 ||
            die "etcdctl $c: $(cat "$TEST_TMPDIR/etcdctl.out")"
    done
    timeout 120 "$ETCD_PROBE" auth "$ETCD_URL" lh lh-pw >"$TEST_TMPDIR/auth.out" 2>&1 ||
        die "the client with etcd's authentication: $(cat "$TEST_TMPDIR/auth.out")"
    cat "$TEST_TMPDIR/auth.out"
else
    echo "etcdctl not installed (Debian: etcd-client): authentication not checked"
fi
kill -TERM "$ETCD_PID"
wait_pid_timeout "$ETCD_PID" 30 || die "etcd did not stop within 30 s of SIGTERM"
echo "PASS (etcd_client)"
