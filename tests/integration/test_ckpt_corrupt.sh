#!/bin/sh
# A flipped byte in a shard of the newest checkpoint: ftmpi-ckpt verify
# names the file and fails; loading falls back to the older checkpoint.
. "$top_srcdir/tests/integration/common.sh"
H=$top_builddir/tests/integration/ckpt_helper
root=$TEST_TMPDIR/ckpt
mkdir -p "$root"
"$H" save "$root" 10 2 >/dev/null || die "save of step 10 failed"
"$H" save "$root" 20 2 >/dev/null || die "save of step 20 failed"
f=$root/step-20/rank-1.bin
# flip one byte in the middle of rank 1's shard
b=$(od -An -tu1 -j 100000 -N 1 "$f" | tr -d ' ')
printf "$(printf '\\%03o' $(((b + 1) % 256)))" | dd of="$f" bs=1 seek=100000 conv=notrunc 2>/dev/null
"$top_builddir/ftmpi-ckpt" verify "$root" >"$TEST_TMPDIR/verify.out" && die "verify passed a flipped byte"
grep -q "step-20: FAILED: .*step-20/rank-1.bin: buffer 'w' .*checksum mismatch" "$TEST_TMPDIR/verify.out" ||
    die "verify does not name the file: $(cat "$TEST_TMPDIR/verify.out")"
grep -q "step-10: ok" "$TEST_TMPDIR/verify.out" || die "step 10 did not verify"
out=$("$H" load "$root" 3 2>"$TEST_TMPDIR/load.err") || die "load: $out"
[ "$out" = "loaded step 10" ] || die "load with a corrupt newest checkpoint: $out"
echo "PASS ($TEST_NAME)"
