#!/bin/sh
# Issue 23 item 2: pruning never follows a link, and the checkpoint root
# must be this user's and not writable by others.  Links planted where
# checkpoint folders go (step-0.tmp-x -> victim/, step-1 -> victim/) are
# reported and left alone while three steps are saved with keep 2 (each
# publish prunes); victim/ keeps its files, older real steps are still
# pruned, the newest loads.  A root others can write is refused with a
# message that says how to fix it, and nothing is written there.
. "$top_srcdir/tests/integration/common.sh"
H=$top_builddir/tests/integration/ckpt_helper
root=$TEST_TMPDIR/ckpt
victim=$TEST_TMPDIR/victim
mkdir -m 700 "$root" "$victim"
for f in a b c; do echo "keep me" >"$victim/$f"; done
ln -s ../victim "$root/step-0.tmp-x"
ln -s ../victim "$root/step-1"
for s in 10 20 30; do
    "$H" save "$root" $s 2 >>"$TEST_TMPDIR/save.out" 2>&1 || { cat "$TEST_TMPDIR/save.out"; die "save of step $s failed"; }
done
n=$(ls "$victim" | wc -l)
[ "$n" -eq 3 ] || die "victim/ has $n of its 3 files after pruning (a link was followed)"
[ -L "$root/step-0.tmp-x" ] && [ -L "$root/step-1" ] || die "a planted link was removed (it should be left alone)"
grep -q "step-0.tmp-x is a link or not a folder" "$TEST_TMPDIR/save.out" || die "the planted link was not reported"
[ ! -e "$root/step-10" ] || die "step-10 was not pruned (keep 2)"
[ -d "$root/step-20" ] && [ -d "$root/step-30" ] || die "the two newest steps are not kept"
out=$("$H" load "$root" 2) || die "load: $out"
[ "$out" = "loaded step 30" ] || die "load: $out"

chmod 777 "$root"
if "$H" save "$root" 40 2 >"$TEST_TMPDIR/save40.out" 2>&1; then
    die "a save into a root others can write succeeded"
fi
grep -q "can be written by its group or others (mode 777).*chmod go-w" "$TEST_TMPDIR/save40.out" ||
    { cat "$TEST_TMPDIR/save40.out"; die "no clear error for a root others can write"; }
[ ! -e "$root/step-40" ] && [ ! -e "$root/step-40.tmp-helper" ] || die "step 40 was written into the refused root"
chmod 700 "$root"
n=$(ls "$victim" | wc -l)
[ "$n" -eq 3 ] || die "victim/ has $n of its 3 files"
echo "PASS ($TEST_NAME)"
