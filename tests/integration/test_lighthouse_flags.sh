#!/bin/sh
# test_lighthouse_flags.sh - ftmpi-lighthouse refuses bad flags with exit 2
# and a message that names the flag; --help and --version exit 0.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
T=$TEST_TMPDIR

: >"$T/empty.token"
printf '  \n\t \n' >"$T/blank.token"
n=0
# bad FLAG ARGS... : the lighthouse must exit 2 naming FLAG, without listening
bad() {
    _flag=$1
    shift
    n=$((n + 1))
    timeout 10 "$LH" "$@" >"$T/bad$n.out" 2>"$T/bad$n.err" </dev/null
    _rc=$?
    [ "$_rc" -eq 2 ] || die "'$*': exit status $_rc, expected 2 (stderr: $(cat "$T/bad$n.err"))"
    grep -q -- "$_flag" "$T/bad$n.err" || die "'$*': message does not name $_flag: $(cat "$T/bad$n.err")"
    ! grep -q listening "$T/bad$n.out" || die "'$*': it started listening"
}

B=--bind
bad --min-replicas $B 127.0.0.1:0 --min-replicas 0
bad --min-replicas $B 127.0.0.1:0 --min-replicas -3
bad --min-replicas $B 127.0.0.1:0 --min-replicas two
bad --min-replicas $B 127.0.0.1:0
bad --min-replicas $B 127.0.0.1:0 --min-replicas
bad --bind --min-replicas 1 --bind nonsense
bad --bind --min-replicas 1 --bind 127.0.0.1:99999
bad --bind --min-replicas 1 --bind=no-port:
bad --token-file $B 127.0.0.1:0 --min-replicas 1 --http-bind 127.0.0.1:0 --token-file "$T/does-not-exist"
bad --token-file $B 127.0.0.1:0 --min-replicas 1 --http-bind 127.0.0.1:0 --token-file "$T/empty.token"
bad --token-file $B 127.0.0.1:0 --min-replicas 1 --http-bind 127.0.0.1:0 --token-file "$T/blank.token"
bad --frobnicate $B 127.0.0.1:0 --min-replicas 1 --frobnicate 3
bad --join-timeout-ms $B 127.0.0.1:0 --min-replicas 1 --join-timeout-ms -1
bad --quorum-tick-ms $B 127.0.0.1:0 --min-replicas 1 --quorum-tick-ms 0
bad --heartbeat-timeout-ms $B 127.0.0.1:0 --min-replicas 1 --heartbeat-timeout-ms abc
bad --http-bind $B 127.0.0.1:0 --min-replicas 1 --http-bind nonsense
bad --max-frame-bytes $B 127.0.0.1:0 --min-replicas 1 --max-frame-bytes 12
bad --max-frame-bytes $B 127.0.0.1:0 --min-replicas 1 --max-frame-bytes 3q
bad --log-level $B 127.0.0.1:0 --min-replicas 1 --log-level loud
bad --initial-quorum-id $B 127.0.0.1:0 --min-replicas 1 --initial-quorum-id -5
bad stray $B 127.0.0.1:0 --min-replicas 1 stray

# a port already taken: --bind names the problem
start_lighthouse busy --min-replicas 1
bad --bind --min-replicas 1 --bind "$LH_ADDR"
bad --http-bind --min-replicas 1 --http-bind "$LH_ADDR"

timeout 10 "$LH" --help >"$T/help.out" 2>&1 || die "--help: exit status $?"
for f in --min-replicas --bind --join-timeout-ms --quorum-tick-ms --heartbeat-timeout-ms \
    --http-bind --token-file --max-frame-bytes --log-level --version; do
    grep -q -- "$f" "$T/help.out" || die "--help does not document $f"
done
timeout 10 "$LH" --version >"$T/version.out" 2>&1 || die "--version: exit status $?"
grep -q '^ftmpi-lighthouse (libftmpi) [0-9]' "$T/version.out" || die "--version: $(cat "$T/version.out")"

# good flags in both spellings start it
start_lighthouse good --min-replicas=2 --join-timeout-ms=0 --quorum-tick-ms 50 \
    --heartbeat-timeout-ms 1500 --max-frame-bytes 64k --log-level warn --http-bind 127.0.0.1:0
[ -n "$LH_HTTP" ] || die "no http address in: $(cat "$T/good.out")"
exit 0
