#!/bin/sh
# C2: the writer is SIGKILLed half-way through saving step 20 (two of four
# rank files written, no metadata, never published): the half-written
# folder is left unfinished, never loaded, and step 10 loads.
. "$top_srcdir/tests/integration/common.sh"
H=$top_builddir/tests/integration/ckpt_helper
root=$TEST_TMPDIR/ckpt
mkdir -p "$root"
"$H" save "$root" 10 4 >/dev/null || die "save of step 10 failed"
"$H" save "$root" 20 4 1000 >"$TEST_TMPDIR/save20.out" 2>&1 &
pid=$!
register_pid $pid
_half() { [ -f "$root/step-20.tmp-helper/rank-1.bin" ]; }
wait_until 10 _half || die "the save of step 20 did not start"
kill -KILL $pid
wait $pid 2>/dev/null
[ ! -e "$root/step-20" ] || die "step 20 was published"
[ -d "$root/step-20.tmp-helper" ] || die "no half-written folder left (nothing was tested)"
"$top_builddir/ftmpi-ckpt" ls "$root" >"$TEST_TMPDIR/ls.out" || die "ls failed"
grep -q "step-10 step 10 " "$TEST_TMPDIR/ls.out" || die "ls does not show step 10"
grep -q "step-20.tmp-helper (unfinished" "$TEST_TMPDIR/ls.out" || die "ls does not show the unfinished folder"
out=$("$H" load "$root" 3) || die "load: $out"
[ "$out" = "loaded step 10" ] || die "load after a torn save: $out"
echo "PASS ($TEST_NAME)"
