#!/bin/sh
# I3: as I2 (test_e2e_kill_restart.sh) with 2 ranks per replica group: the
# whole group (its mpirun and both ranks) is killed, restarted, heals rank by
# rank from a live group.  Every rank's parameters are compared.
E2E_NP=2
export E2E_NP
. "$top_srcdir/tests/integration/test_e2e_kill_restart.sh"
