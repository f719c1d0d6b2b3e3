#!/bin/sh
# Healing over UCX (issue 37 item 2, DESIGN section 7.1): two of the tcp
# backend's heal scenarios, unchanged but for FTMPI_BACKEND=ucx (so
# FTMPI_HEAL_TRANSPORT=auto heals over ucx), each as its own process:
#   1. test_e2e_kill_restart.sh: a group SIGKILLed, restarted by its agent,
#      healed from the live groups; every group ends with bitwise the same
#      parameters.  Here also: the restarted group's heal fetched over ucx
#      (its "over ucx (one-sided reads)" line) and no heal fell back to tcp.
#   2. test_e2e_heal_kill_mid.sh: the only source of a heal of 2 x 128 MiB
#      SIGKILLed part way; the healer's heal fails (within
#      FTMPI_HEAL_TIMEOUT_MS, checked there), its state untouched, and it
#      goes on alone.  The source's fetch replies cannot be slowed here
#      (the healer reads with ucp_get_nbx, the source sees no request), so
#      the healer waits 200 ms before each get of 8 MiB (the test hook
#      FTMPI_TEST_HEAL_GET_DELAY_MS): the heal lasts seconds and the kill, 1 s
#      after the source served the metadata, lands inside it.  Here also:
#      the healer logged a failed get over ucx.
#   3. test_e2e_heal_source_killed.sh: 3 groups, g2 restarted; g0 SIGKILLed
#      as it serves g2's heal (its metadata line: over ucx it sees no
#      fetch); g2 heals from g1, in the same heal (g0 dropped as a source)
#      or the next quorum's; the groups that finished together agree.
# This test fails with the first scenario that fails.  Skips (77) in a build
# without UCX or without the test hooks.
. "$top_srcdir/tests/integration/common.sh"
grep -q '^#define FTMPI_HAVE_UCX 1' "$top_builddir/ftmpi_config.h" 2>/dev/null ||
    skip "built without UCX (configure found no pkg-config ucx, or --without-ucx)"
command -v "${MPIRUN:-mpirun}" >/dev/null 2>&1 || skip "no mpirun"
need_test_hooks

# runs scenario $1 on ucx with the environment in the rest of the arguments
# A run whose kill landed after the heal tested nothing (the inner test says
# so and fails: "no heal was cut"); such a run is made once more, any other
# failure stands.  Seen in the MPICH build for source_killed: 2 runs of 13.
scenario() {
    t=$1
    shift
    for _try in 1 2; do
        rm -rf "$TEST_TMPDIR"/ftmpi-$t.*
        env FTMPI_BACKEND=ucx FTMPI_LOG_LEVEL=info "$@" TMPDIR="$TEST_TMPDIR" KEEP_TMPDIR=1 \
            timeout 300 sh "$top_srcdir/tests/integration/$t.sh" >"$TEST_TMPDIR/$t.log" 2>&1
        st=$?
        [ "$st" -ne 0 ] && [ $_try -eq 1 ] && grep -q 'no heal was cut' "$TEST_TMPDIR/$t.log" ||
            break
        echo "$t on ucx: the kill came after the heal (nothing tested): once more"
    done
    if [ "$st" -ne 0 ]; then
        tail -n 40 "$TEST_TMPDIR/$t.log"
        die "$t on ucx: exit status $st"
    fi
    dir=$(echo "$TEST_TMPDIR"/ftmpi-$t.*)
    grep -q 'FT_Init: .*, backend ucx$' "$dir"/g0.err || die "$t: g0 did not run on ucx"
    echo "$t on ucx: $(tail -n 1 "$TEST_TMPDIR/$t.log")"
}

scenario test_e2e_kill_restart
grep -q 'heal: fetching step [0-9]* from .* over ucx (one-sided reads)' "$dir/g1.err" ||
    die "kill_restart: g1 did not heal over ucx"
grep -q 'restart [0-9]* of this group: healed step' "$dir/g1.err" ||
    die "kill_restart: g1's restarted run logged no heal"
! grep -h 'fetching over tcp' "$dir"/g*.err || die "kill_restart: a heal fell back to tcp"
echo "kill_restart: g1's heals over ucx: $(grep -c 'over ucx (one-sided reads)' "$dir/g1.err")"

scenario test_e2e_heal_kill_mid E2E_HEAL_MIB=128 E2E_SERVE_DELAY_MS=0 FTMPI_TEST_HEAL_GET_DELAY_MS=200
grep -q 'heal: fetching step [0-9]* from .* over ucx (one-sided reads)' "$dir/g1.err" ||
    die "kill_mid: g1 did not heal over ucx"
grep -q 'heal over ucx: get of [0-9]* bytes failed' "$dir/g1.err" ||
    die "kill_mid: no get over ucx failed in g1: the kill did not cut a heal over ucx"
grep -h '"event":"heal"' "$dir/g1.events" | cut -c 1-200
echo "kill_mid: $(grep -h 'heal over ucx: get of' "$dir/g1.err" | sed 's/.*\] //' | sort -u | head -n 2 | tr '\n' ' ')"

# 3. the source SIGKILLed as it serves a heal over ucx (at its metadata);
# the healer's gets from it fail through UCX (the peer error callback or
# the get's error), and g2 gets the state from g1, in the same heal or the
# next quorum's (the checks of test_e2e_heal_source_killed.sh)
scenario test_e2e_heal_source_killed E2E_KILL_ON='heal: metadata of step' \
    FTMPI_TEST_HEAL_GET_DELAY_MS=200
grep -q 'over ucx (one-sided reads)' "$dir/g2.err" || die "source_killed: g2 did not heal over ucx"
echo "source_killed: $(grep -h 'over ucx from .* failed\|heal over ucx: get of' "$dir"/g*.err | sed 's/.*\] //' | head -n 2 | tr '\n' ' ')"
echo "PASS ($TEST_NAME)"
