# gpu_common.sh - for tests/gpu/*.sh: skip (exit 77) without a CUDA device.
. "$top_srcdir/tests/integration/e2e_lib.sh"
gpu_need() {
    _want=${1:-1}
    _n=$(ls /dev/nvidia[0-9]* 2>/dev/null | wc -l)
    [ "$_n" -ge "$_want" ] || { echo "SKIP: $_want CUDA device(s) needed, $_n present"; exit 77; }
    [ -x "$top_builddir/tests/gpu/gpu_allreduce" ] || { echo "SKIP: gpu_allreduce not built"; exit 77; }
}
# gpu_sums ID...: each group's last "final ... sum=" line must be there
gpu_final() {
    grep 'final steps=' "$TEST_TMPDIR/$1.out" | tail -1
}
