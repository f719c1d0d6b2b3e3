#!/bin/sh
# test_e2e_heal_progress.sh - a long heal says how far it is: g0 (64 MiB of
# parameters) serves every fetch reply late (FTMPI_TEST_HEAL_SERVE_DELAY_MS),
# so g1's heal from it takes well over the 5 s between progress lines; g1
# logs "heal progress: B of T bytes (P%) in S s, R MB/s, about L s left" at
# the default level, then heals.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
need_test_hooks # g0 serves slowly (FTMPI_TEST_HEAL_SERVE_DELAY_MS)
args="--features 16777216 --batch 2 --samples 64 --eval 4 --lr 0.05 --steps 1000000 --print-every 1"
FTMPI_TIMEOUT_MS=60000 FTMPI_HEAL_TIMEOUT_MS=120000
export FTMPI_TIMEOUT_MS FTMPI_HEAL_TIMEOUT_MS
e2e_lighthouse_start 1
FTMPI_TEST_HEAL_SERVE_DELAY_MS=3000 FTMPI_LOG_LEVEL=warn e2e_group_start g0 1 $args
e2e_wait_step g0 2 120
FTMPI_LOG_LEVEL=warn e2e_group_start g1 1 $args
_healed() { file_has "$TEST_TMPDIR/g1.err" 'healed step|heal progress'; }
_progress() { file_has "$TEST_TMPDIR/g1.err" '^.*heal progress: [0-9]+ of [0-9]+ bytes \([0-9]+%\) in [0-9.]+ s, [0-9.]+ MB/s, about [0-9]+ s left'; }
wait_until 180 _progress || e2e_fail "g1 logged no heal progress line"
e2e_log "$(grep 'heal progress' "$TEST_TMPDIR/g1.err" | head -n 1)"
echo "PASS ($TEST_NAME)"
