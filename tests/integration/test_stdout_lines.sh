#!/bin/sh
# test_stdout_lines.sh - the example programs write their stdout in whole
# lines, one write(2) per line (or several whole lines), under the build's
# launcher: each of ft_sgd, ft_sgd_cpp and ft_sgd_f (those built) runs as
# one group of 2 ranks under strace, which records every write of every
# rank; every write to stdout must end with a newline.
#
# Why: MPICH's MPI_Init makes stdout unbuffered under hydra
# (setbuf(stdout, NULL)); the programs' later setvbuf(stdout, NULL, _IOLBF,
# 0) then kept glibc's 1-byte buffer, so a printf became several writes
# ("s", "tep ", "1", " loss ..."), and hydra, which forwards each rank's
# writes as they come, mixed two ranks' pieces within one line
# ("sfinal replica=g1 rank=1 ..." then "tep 21 loss ..."): the tests then
# missed a rank's final line.  Open MPI forwards whole lines whatever the
# program writes, so this is checked under both.
. "$top_srcdir/tests/integration/e2e_lib.sh"
e2e_init
T=$TEST_TMPDIR
STRACE=$(command -v strace) || skip "no strace (it shows each write of the ranks' stdout)"
"$STRACE" -qq -e trace=write -o /dev/null true 2>/dev/null ||
    skip "strace cannot trace here (ptrace not permitted?)"

ran=0
for prog in ft_sgd ft_sgd_cpp ft_sgd_f; do
    bin=$top_builddir/examples/$prog
    if [ ! -x "$bin" ]; then
        e2e_log "$prog not built (no compiler for it): skipped"
        continue
    fi
    case $prog in
    ft_sgd) args="--steps 30 --sleep-ms 5 --print-every 1" id=o0 ;;
    ft_sgd_cpp) args="--steps 30 --sleep-ms 5" id=o1 ;;
    *) args="30 5" id=o2 ;;
    esac
    e2e_lighthouse_start 1
    # shellcheck disable=SC2086
    E2E_PROG=$STRACE e2e_group_start $id 2 -ff -qq -e trace=write -e signal=none -s 65536 \
        -o "$T/$id.trace" "$bin" $args
    e2e_wait_agents 120 $id
    e2e_lighthouse_kill
    cat "$T/$id.trace".* | grep '^write(1, "' >"$T/$id.writes"
    n=$(wc -l <"$T/$id.writes")
    # 2 final lines, the initial loss and 3 or more step lines at least
    [ "$n" -ge 6 ] || e2e_fail "$prog: $n writes to stdout seen by strace, want 6 or more"
    bad=$(grep -v '\\n", [0-9][0-9]*) *= [0-9][0-9]*$' "$T/$id.writes")
    [ -z "$bad" ] || e2e_fail "$prog: stdout written in pieces, not whole lines" \
        "($(echo "$bad" | wc -l) of $n writes; hydra mixes two ranks' pieces within a line):" \
        "$(echo "$bad" | head -n 5)"
    e2e_check_final 2 $id
    e2e_log "$prog: $n writes to stdout, each ends a line"
    ran=$((ran + 1))
done
[ $ran -gt 0 ] || skip "none of ft_sgd, ft_sgd_cpp, ft_sgd_f is built"
echo "PASS ($TEST_NAME)"
