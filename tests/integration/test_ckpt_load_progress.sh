#!/bin/sh
# test_ckpt_load_progress.sh - a checkpoint load says what it loads and how
# far it is (issue 24): "checkpoint load progress: step N from DIR: B of T
# bytes (P%) in S s, R MB/s, about L s left" at the default level, at most
# every fti_ckpt_progress_ms (the library's 5000; ckpt_helper sets it from
# CKPT_HELPER_PROGRESS_MS: 0 here, so that a small load reports every
# 1 MiB block it reads, whatever the machine's speed).  T is what the load
# reads: one rank loading a group of 4's save reads all of "w" (300007
# doubles) and "rep" (37 bytes); its last line says all of it.  With an
# hour between lines, a load says nothing.
. "$top_srcdir/tests/integration/common.sh"
H=$top_builddir/tests/integration/ckpt_helper
root=$TEST_TMPDIR/ckpt
mkdir -p "$root"
"$H" save "$root" 10 4 >/dev/null || die "save by 4 failed"
out=$(CKPT_HELPER_PROGRESS_MS=0 "$H" load "$root" 1 2>"$TEST_TMPDIR/load.err") ||
    die "load by 1: $out"
[ "$out" = "loaded step 10" ] || die "load by 1: $out"
re='checkpoint load progress: step 10 from [^ ]*/step-10: [0-9]+ of 2400093 bytes \([0-9]+%\) in [0-9.]+ s, [0-9.]+ MB/s, about [0-9-]+ s left'
n=$(grep -Ec "$re" "$TEST_TMPDIR/load.err")
[ "$n" -ge 2 ] || { cat "$TEST_TMPDIR/load.err" >&2; die "$n progress lines (want one a block)"; }
last=$(grep -E "$re" "$TEST_TMPDIR/load.err" | tail -n 1)
echo "$last" | grep -q ': 2400093 of 2400093 bytes (100%)' ||
    die "the last progress line is not the whole load: $last"
echo "first: $(grep -E "$re" "$TEST_TMPDIR/load.err" | head -n 1)"
echo "last:  $last"
out=$(CKPT_HELPER_PROGRESS_MS=3600000 "$H" load "$root" 1 2>"$TEST_TMPDIR/quiet.err") ||
    die "quiet load: $out"
! grep -q 'load progress' "$TEST_TMPDIR/quiet.err" || die "a progress line within the interval"
echo "PASS ($TEST_NAME)"
