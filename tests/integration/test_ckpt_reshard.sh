#!/bin/sh
# C1 (no MPI): arrays saved by a group of 4 load bitwise equal with 2, 3, 1
# and 4 ranks; saved by 1, with 4.  The replicated buffer loads everywhere.
. "$top_srcdir/tests/integration/common.sh"
H=$top_builddir/tests/integration/ckpt_helper
root=$TEST_TMPDIR/ckpt
mkdir -p "$root"
"$H" save "$root" 10 4 >/dev/null || die "save by 4 failed"
for r in 4 2 3 1; do
    out=$("$H" load "$root" $r) || die "load by $r: $out"
    [ "$out" = "loaded step 10" ] || die "load by $r: $out"
done
"$H" save "$root" 20 1 >/dev/null || die "save by 1 failed"
out=$("$H" load "$root" 4) || die "load 1 -> 4: $out"
[ "$out" = "loaded step 20" ] || die "load 1 -> 4: $out"
"$top_builddir/ftmpi-ckpt" verify "$root" >/dev/null || die "verify failed"
echo "PASS ($TEST_NAME)"
