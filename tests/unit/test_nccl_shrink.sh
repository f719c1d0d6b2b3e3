#!/bin/sh
# fti_nccl_shrink never hands NCCL an empty exclude list (the H200 kit run
# of 2026-11-26: NCCL 2.28.3 answered "ncclCommShrink: invalid argument").
# Builds the stub libnccl as NCCL 2.28.3 (stub_nccl.c -DSTUB_NCCL_SHRINK:
# an empty list gets ncclInvalidArgument, as from the real one) and runs
# tests/unit/test_nccl_shrink with it found first.  No GPU needed.
. "$top_srcdir/tests/integration/common.sh"
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || skip "no C compiler for the stub libnccl"
"$cc" -shared -fPIC -Wall -Wextra -Werror -DSTUB_NCCL_SHRINK -Wl,-soname,libnccl.so.2 \
    -o "$TEST_TMPDIR/libnccl.so.2" "$top_srcdir/tests/unit/stub_nccl.c" ||
    die "the stub libnccl did not build"
LD_LIBRARY_PATH="$TEST_TMPDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout 120 "$top_builddir/tests/unit/test_nccl_shrink" ||
    die "test_nccl_shrink failed against the stub NCCL 2.28.3 (output above)"
echo "PASS ($TEST_NAME)"
