#!/bin/sh
# Issue 29 benchmark: a heal of device memory against one of host memory.
# g0 runs gpu_heal alone with 16M floats (64 MiB) of weights; g1 starts once
# g0 is past step 5 and heals them from g0 (device: the source's pinned host
# mirror, the socket, the healer's staging, cudaMemcpy into place; host: the
# same into malloc'ed memory).  One GPU, tcp, one sample of each.
# Compared: the heal itself as the library logs it (FTMPI_LOG_LEVEL=info:
# "healed step N ... B bytes in F ms (install I ms)": F the fetch and check
# into staging, I the copy into the registered memory), the same work for
# both.  The healer's first FT_Quorum (gpu_heal's heal_ms) is printed too
# but not comparable: it also waits for the live group's next FT_Quorum,
# anywhere in its step (100 ms of sleep and a step's copies), so it is the
# heal plus a random phase (the first H200 run's "device 40.9 ms, host
# 233.3 ms" were these).
. "$top_srcdir/tests/gpu/gpu_common.sh"
e2e_init
[ -n "$(ls /dev/nvidia[0-9]* 2>/dev/null)" ] || { echo "SKIP: no CUDA device"; exit 77; }
FTMPI_BACKEND=tcp
FTMPI_LOG_LEVEL=info
E2E_PROG=$top_builddir/tests/gpu/gpu_heal
export FTMPI_BACKEND FTMPI_LOG_LEVEL
for where in device host; do
    h=0
    [ $where = host ] && h=1
    e2e_lighthouse_start 1
    e2e_group_start ${where}0 1 --steps 25 --count 16777216 --sleep-ms 100 --host $h
    e2e_wait_step ${where}0 5 60
    e2e_group_start ${where}1 1 --steps 25 --count 16777216 --sleep-ms 100 --host $h
    e2e_wait_agents 120 ${where}0 ${where}1
    e2e_lighthouse_kill
done
# the healer g1's log line ("F I") and first FT_Quorum (ms), for each kind
for where in device host; do
    l=$(sed -n 's/.*healed step [0-9]* from .* bytes in \([0-9]*\) ms (install \([0-9-]*\) ms).*/\1 \2/p' \
        "$TEST_TMPDIR/${where}1.err" | head -1)
    q=$(sed -n 's/.*heal_ms=\([0-9.]*\).*/\1/p' "$TEST_TMPDIR/${where}1.out" | head -1)
    [ -n "$l" ] && [ -n "$q" ] || e2e_fail "group ${where}1 did not heal (log '$l', first quorum '$q' ms)"
    eval "${where}_fetch=\${l% *} ${where}_install=\${l#* } ${where}_quorum=\$q"
done
# one line (the kit's summary keeps 150 characters)
echo "bench heal 64 MiB tcp: device fetch $device_fetch + install $device_install ms," \
    "host fetch $host_fetch + install $host_install ms; first FT_Quorum: device" \
    "$device_quorum, host $host_quorum ms"
echo "PASS ($TEST_NAME)"
