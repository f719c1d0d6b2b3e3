#!/bin/sh
# Issue 23 item 2: with a job secret, checkpoint.meta carries an HMAC under a
# key derived from the secret, and a checkpoint that fails it is never
# loaded.  Step 10 is saved with the secret; a forger who can write the root
# but lacks the secret plants step 20 (saved without a secret) and step 30
# (saved with another secret): a job with the secret loads step 10, and says
# why the newer ones were not loaded.
. "$top_srcdir/tests/integration/common.sh"
H=$top_builddir/tests/integration/ckpt_helper
root=$TEST_TMPDIR/ckpt
mkdir -m 700 "$root"
umask 077
od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$TEST_TMPDIR/tok"
od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$TEST_TMPDIR/other"
CKPT_HELPER_TOKEN=$TEST_TMPDIR/tok "$H" save "$root" 10 2 >/dev/null 2>&1 || die "save of step 10 failed"
grep -q "^mac [0-9a-f]\{64\}\$" "$root/step-10/checkpoint.meta" || die "no MAC line in the metadata"
mv "$root/step-10" "$TEST_TMPDIR/step-10" # out of reach of keep 2's pruning meanwhile
"$H" save "$root" 20 2 >/dev/null 2>&1 || die "save of step 20 failed"
CKPT_HELPER_TOKEN=$TEST_TMPDIR/other "$H" save "$root" 30 2 >/dev/null 2>&1 || die "save of step 30 failed"
[ -d "$root/step-30" ] && [ -d "$root/step-20" ] || die "the forged steps were not published"
mv "$TEST_TMPDIR/step-10" "$root/step-10"
out=$(CKPT_HELPER_TOKEN=$TEST_TMPDIR/tok "$H" load "$root" 2 2>"$TEST_TMPDIR/load.err") ||
    { cat "$TEST_TMPDIR/load.err"; die "load with the secret: $out"; }
[ "$out" = "loaded step 10" ] || { cat "$TEST_TMPDIR/load.err"; die "load with the secret: $out (a checkpoint failing the MAC was loaded)"; }
grep -q "step-30/checkpoint.meta: fails its MAC" "$TEST_TMPDIR/load.err" || die "step 30's MAC failure not said"
grep -q "step-20/checkpoint.meta: no MAC" "$TEST_TMPDIR/load.err" || die "step 20's missing MAC not said"
echo "PASS ($TEST_NAME)"
