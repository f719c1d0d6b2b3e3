#!/bin/sh
# The C++ and Fortran users of the API (examples/ft_sgd_cpp.cpp,
# examples/ft_sgd_f.f90 with the module ftmpi_f): each runs as 2 replica
# groups of 2 ranks under ftmpi-run against a lighthouse, one healthy run;
# every rank ends at the last step with the same state (the "final
# replica=..." lines agree).  A program configure did not build (no g++ or
# gfortran) is skipped; both missing: exit 77.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init

ran=0
for prog in ft_sgd_cpp ft_sgd_f; do
    bin=$top_builddir/examples/$prog
    if [ ! -x "$bin" ]; then
        e2e_log "$prog not built (no compiler for it): skipped"
        continue
    fi
    case $prog in
    ft_sgd_cpp) args="--steps 40 --sleep-ms 5" ids="c0 c1" ;;
    *) args="40 5" ids="f0 f1" ;;
    esac
    e2e_lighthouse_start 2
    # shellcheck disable=SC2086
    E2E_PROG=$bin e2e_groups_start "$ids" 2 $args
    # shellcheck disable=SC2086
    e2e_wait_agents 60 $ids
    # shellcheck disable=SC2086
    e2e_check_final 2 $ids
    for id in $ids; do
        grep -q "^final replica=$id rank=0 step=40 " "$TEST_TMPDIR/$id.out" ||
            e2e_fail "$prog: group $id did not end at step 40"
    done
    e2e_log "$prog: $(sgd_final_check 4 $(for id in $ids; do echo "$TEST_TMPDIR/$id.out"; done))"
    e2e_lighthouse_kill
    ran=$((ran + 1))
done
[ $ran -gt 0 ] || skip "neither ft_sgd_cpp nor ft_sgd_f is built (no g++, no gfortran)"
echo "PASS ($TEST_NAME)"
