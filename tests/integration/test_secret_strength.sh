#!/bin/sh
# Issue 23 item 3: a secret of fewer than 128 bits is refused, with a message
# saying how to make one; `ftmpi-lighthouse --make-token FILE` makes one
# (256 random bits in hex, mode 0600, never overwriting a file) that the
# lighthouse takes and that a client (lh_probe, FTMPI_TOKEN_FILE) proves,
# while a client with a six-digit secret never gets a connection.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"
. "$top_srcdir/tests/integration/lh_common.sh"
T=$TEST_TMPDIR

"$LH" --make-token "$T/tok" >"$T/make.out" 2>&1 || die "--make-token failed: $(cat "$T/make.out")"
mode=$(stat -c %a "$T/tok")
[ "$mode" = 600 ] || die "--make-token wrote mode $mode, not 600"
grep -qx '[0-9a-f]\{64\}' "$T/tok" || die "--make-token wrote '$(cat "$T/tok")', not 64 hex digits"
cp "$T/tok" "$T/tok.before"
if "$LH" --make-token "$T/tok" >"$T/make2.out" 2>&1; then die "--make-token overwrote a file"; fi
cmp -s "$T/tok" "$T/tok.before" || die "--make-token changed an existing file"
grep -q "never overwritten" "$T/make2.out" || die "no reason given: $(cat "$T/make2.out")"
"$LH" --make-token "$T/tok2" >/dev/null 2>&1 && ! cmp -s "$T/tok" "$T/tok2" || die "two tokens are equal"

(umask 077 && printf '493817\n' >"$T/six")
timeout 10 "$LH" --bind 127.0.0.1:0 --min-replicas 1 --token-file "$T/six" >"$T/lh6.out" 2>"$T/lh6.err" </dev/null
rc=$?
[ "$rc" -eq 2 ] || die "a six-digit secret: lighthouse exit status $rc, expected 2"
grep -q "too weak.*--make-token FILE" "$T/lh6.err" || die "no clear message: $(cat "$T/lh6.err")"

start_lighthouse lh --min-replicas 1 --token-file "$T/tok"
FTMPI_TOKEN_FILE=$T/tok timeout 10 "$PROBE" heartbeat "$LH_ADDR" good >"$T/good.out" 2>&1 ||
    die "a client with the made token was refused: $(cat "$T/good.out")"
if FTMPI_TOKEN_FILE=$T/six timeout 10 "$PROBE" heartbeat "$LH_ADDR" weak >"$T/weak.out" 2>&1; then
    die "a client with a six-digit secret got through"
fi
grep -q "too weak" "$T/weak.out" || die "the weak client was not told why: $(cat "$T/weak.out")"
echo "PASS ($TEST_NAME)"
