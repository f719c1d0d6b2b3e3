#!/bin/sh
# Issue 29 item 4: NCCL's late calls (ncclCommShrink 2.27, ncclCommRevoke
# 2.28.7, ncclCommGrow) are looked up at run time, never linked.
#  1. `nm -D --undefined-only` of the library, the child and ftmpi-info
#     names no NCCL symbol outside the 2.18 API (configure's minimum).
#  2. With a stub libnccl.so.2 of version 2.18.0 found first, under
#     LD_BIND_NOW=1, ftmpi-info loads and reports shrink and revoke absent
#     (the old build died at load: "undefined symbol: ncclCommShrink"),
#     and `ldd -r` of the library and the child finds every NCCL symbol.
. "$top_srcdir/tests/integration/common.sh"
api218=" ncclGetVersion ncclGetUniqueId ncclCommInitRankConfig ncclCommInitRank ncclCommInitAll
ncclCommFinalize ncclCommDestroy ncclCommAbort ncclCommSplit ncclGetErrorString ncclGetLastError
ncclCommGetAsyncError ncclCommCount ncclCommCuDevice ncclCommUserRank ncclRedOpCreatePreMulSum
ncclRedOpDestroy ncclReduce ncclBcast ncclBroadcast ncclAllReduce ncclReduceScatter ncclAllGather
ncclSend ncclRecv ncclGroupStart ncclGroupEnd ncclCommRegister ncclCommDeregister "
api218=$(echo $api218)
real() {
    if [ -f "$top_builddir/.libs/$1" ]; then echo "$top_builddir/.libs/$1"; else echo "$top_builddir/$1"; fi
}
n=0
for f in "$top_builddir"/.libs/libftmpi.so "$top_builddir"/.libs/libftmpi_pmpi.so \
    "$(real ftmpi-baby)" "$(real ftmpi-info)"; do
    [ -f "$f" ] || die "$f is not built"
    for s in $(nm -D --undefined-only "$f" | awk '{ print $NF }' | grep '^nccl' | sed 's/@.*//'); do
        case " $api218 " in *" $s "*) ;; *) die "$f links $s, newer than NCCL 2.18" ;; esac
        n=$((n + 1))
    done
done
echo "nm: $n NCCL symbols linked, all in the 2.18 API"

cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || skip "no C compiler for the stub libnccl"
"$cc" -shared -fPIC -Wl,-soname,libnccl.so.2 -o "$TEST_TMPDIR/libnccl.so.2" \
    "$top_srcdir/tests/unit/stub_nccl.c" || die "the stub libnccl did not build"
out=$(LD_BIND_NOW=1 LD_LIBRARY_PATH="$TEST_TMPDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$top_builddir/ftmpi-info" 2>&1) || die "ftmpi-info with NCCL 2.18.0 and LD_BIND_NOW=1: $(echo "$out" | tail -3)"
for f in "$top_builddir"/.libs/libftmpi.so "$top_builddir"/.libs/libftmpi_pmpi.so "$(real ftmpi-baby)"; do
    u=$(LD_LIBRARY_PATH="$TEST_TMPDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd -r "$f" 2>&1 |
        grep 'undefined symbol: nccl' | head -1)
    [ -z "$u" ] || die "$(basename "$f") with NCCL 2.18.0: $u"
done
line=$(echo "$out" | grep 'NCCL runtime')
case $line in
    *"2.18.0 loaded (shrink no, revoke no)"*) ;;
    *) die "with the 2.18.0 stub ftmpi-info says '$line'" ;;
esac
echo "PASS ($TEST_NAME): nm clean; with NCCL 2.18.0 under LD_BIND_NOW: $line"
