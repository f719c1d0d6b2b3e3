#!/bin/sh
# The 60-second chaos soak of `make check` (issue 11 item 7):
# tests/chaos/chaos.sh with CHAOS_SECONDS=60 (60 s healthy, then 60 s of
# faults and the finish) and a fixed seed, so that a failure replays with
# the same draws.  About 2.5 minutes on 2 cores.  `make chaos` runs the
# long soak (10 minutes of faults by default).
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
CHAOS_SECONDS=60
CHAOS_SEED=20261123
. "$top_srcdir/tests/chaos/chaos.sh"
