#!/bin/sh
# C3: a full disk (a 4 MiB tmpfs: one checkpoint of 2.4 MB fits, a second
# does not): the failed save is reported (exit 1, "failed", the error
# names ENOSPC), the unfinished folder is removed, and step 10 is intact.
# Skips (77) where tmpfs cannot be mounted (not root, or in a container
# without CAP_SYS_ADMIN).
. "$top_srcdir/tests/integration/common.sh"
H=$top_builddir/tests/integration/ckpt_helper
root=$TEST_TMPDIR/mnt
mkdir -p "$root"
mount -t tmpfs -o size=4m,mode=700 tmpfs "$root" 2>/dev/null || skip "cannot mount a tmpfs here (needs root)"
at_cleanup "umount '$root'"
"$H" save "$root" 10 2 >/dev/null || die "save of step 10 failed"
"$H" save "$root" 20 2 >"$TEST_TMPDIR/save20.out" 2>&1 && die "the save on a full disk succeeded"
grep -q "No space left on device" "$TEST_TMPDIR/save20.out" || die "the error does not say ENOSPC: $(cat "$TEST_TMPDIR/save20.out")"
grep -q "save step 20: failed (failures 1)" "$TEST_TMPDIR/save20.out" || die "the failure was not counted once"
[ ! -e "$root/step-20" ] && [ ! -e "$root/step-20.tmp-helper" ] || die "step 20 left a folder"
"$top_builddir/ftmpi-ckpt" verify "$root" >/dev/null || die "step 10 does not verify"
out=$("$H" load "$root" 2) || die "load: $out"
[ "$out" = "loaded step 10" ] || die "load after a full disk: $out"
echo "PASS ($TEST_NAME)"
