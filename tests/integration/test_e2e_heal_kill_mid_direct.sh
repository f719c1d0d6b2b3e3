#!/bin/sh
# test_e2e_heal_kill_mid.sh with FTMPI_HEAL_INSTALL=direct: the heal that
# the kill cuts wrote into g1's registered memory, so g1 must lose its
# group instead of going on (no rank commits the torn state), ftmpi-run
# restarts it, and the new g1 runs alone from its own state to the end.
E2E_HEAL_INSTALL=direct
export E2E_HEAL_INSTALL
. "$top_srcdir/tests/integration/test_e2e_heal_kill_mid.sh"
