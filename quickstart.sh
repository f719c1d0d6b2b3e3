#!/usr/bin/env bash
# quickstart.sh - set up, build and run libftmpi on a Debian/Ubuntu machine.
#
#   ./quickstart.sh demo    install what is missing, build, run the training demo
#                           (extra arguments go to scripts/demo.sh: demo --mode-b)
#   ./quickstart.sh check   install what is missing, build, make check
#   ./quickstart.sh check-nodes
#                           install what is missing, build, make check-nodes (as
#                           root: 3 namespace nodes with sshd, tests/nodes/)
#   ./quickstart.sh check-asan
#                           the same in a second build folder (_build_asan)
#                           configured with --enable-sanitizers (ASan+UBSan;
#                           FTMPI_SANITIZERS=1 check does the same); leaks are
#                           checked too (tests/integration/common.sh says where)
#   ./quickstart.sh check-tsan
#                           the threaded parts' tests (the progress thread, the
#                           rank server and heal, rpc, store, tcp ring, the log)
#                           in a third folder (_build_tsan) configured with
#                           --enable-sanitizers=thread; not the MPI jobs (Open
#                           MPI is not built with ThreadSanitizer)
#   ./quickstart.sh check-mpich
#                           the same tests built against MPICH (Debian's
#                           libmpich-dev and mpich, installed when missing;
#                           Open MPI stays the default mpicc/mpirun) in
#                           _build_mpich, run with MPICH's launcher
#                           (mpiexec.hydra); QUICKSTART_MPI=mpich demo|check does
#                           the same
#   ./quickstart.sh check-ompi5
#                           Open MPI 5 with ULFM: unpacks ../shared/ompi5 into
#                           _ompi5/ (its install.sh; or takes FTMPI_OMPI5=DIR,
#                           a tree with bin/mpicc), builds in _build_ompi5
#                           against it (--with-mpi=DIR) and runs the tests
#                           that meet MPI (ompi5_tests below: mode B, its
#                           ULFM path, the drop-in, mode A under mpirun, the
#                           agent) with its launcher; says so and ends with
#                           0 where neither is there
#
# Both use one build folder configured once, with warnings as errors (what
# CI checks), so that alternating demo and check rebuilds nothing.  A
# compiler that warns where ours do not: FTMPI_WERROR=0 (reconfigures once).
# Environment: FTMPI_BUILD_DIR (default ./_build, ./_build_asan with the
# sanitizers, ./_build_tsan for check-tsan), JOBS (default: number of
# cores), FTMPI_WERROR (default 1), FTMPI_SANITIZERS (default 0; 1 or
# address: ASan+UBSan, thread: TSan).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
verb=${1:-}
san=${FTMPI_SANITIZERS:-0}
mpi=${QUICKSTART_MPI:-}
if [ "$verb" = check-mpich ]; then
    verb=check
    mpi=mpich
elif [ "$verb" = check-ompi5 ]; then
    verb=check
    mpi=ompi5
fi
nodes=
if [ "$verb" = check-nodes ]; then
    verb=check
    nodes=1
fi
if [ "$verb" = check-asan ]; then
    verb=check
    san=1
elif [ "$verb" = check-tsan ]; then
    verb=check
    san=thread
fi
# what check-tsan runs: unit and in-process tests of the threaded parts
tsan_tests="tests/unit/test_progress tests/unit/test_log tests/integration/test_heal \
tests/integration/test_heal_stripe tests/integration/test_rpc tests/integration/test_store tests/integration/test_tcp_ring"
# what check-ompi5 runs: every test that starts MPI ranks or meets the MPI
# (the unit tests and the MPI-free ones run in check already), but
# test_launcher_mismatch (MPICH's hydra starting 5.0's programs: not tried)
ompi5_tests="tests/integration/test_modeb_ulfm.sh tests/integration/test_modeb_ulfm_stop.sh tests/integration/test_modeb_kill.sh \
tests/integration/test_modeb_partner.sh tests/integration/test_modeb_allreduce.sh \
tests/integration/test_modeb_config.sh tests/integration/test_modeb_late_member.sh \
tests/integration/test_modeb_native.sh tests/integration/test_modeb_sdc.sh \
tests/integration/test_modeb_spares.sh tests/integration/test_group.sh \
tests/integration/test_stdout_lines.sh \
tests/integration/test_examples_lang.sh tests/integration/test_e2e_healthy.sh \
tests/integration/test_e2e_kill_restart.sh tests/integration/test_e2e_rank_watch.sh \
tests/integration/test_ftmpi_run.sh tests/shim/test_shim_s1.sh tests/shim/test_shim_kill.sh \
tests/shim/test_shim_nohang.sh tests/shim/test_shim_ulfm.sh tests/shim/test_shim_examples.sh \
tests/shim/test_shim_fortran.sh tests/shim/test_shim_restart.sh tests/shim/test_shim_hpcc.sh"
if [ "$mpi" = ompi5 ]; then
    # the tree: FTMPI_OMPI5, else ../shared/ompi5 unpacked into _ompi5/
    ompi5=${FTMPI_OMPI5:-}
    if [ -z "$ompi5" ]; then
        shared=$here/../shared/ompi5
        if [ ! -x "$shared/install.sh" ]; then
            echo "quickstart: check-ompi5 SKIPPED: no Open MPI 5 ($shared/install.sh is absent; set FTMPI_OMPI5=DIR to a tree with bin/mpicc)"
            exit 0
        fi
        "$shared/install.sh" "$here/_ompi5" >/dev/null
        ompi5=$here/_ompi5/ompi5
    fi
    ompi5=$(cd "$ompi5" && pwd)
    [ -x "$ompi5/bin/mpicc" ] || { echo "quickstart: $ompi5/bin/mpicc not found (FTMPI_OMPI5)" >&2; exit 1; }
    # a tree unpacked elsewhere than its prefix: libtool's archives still
    # name the prefix (libmpi.la's dependency_libs), and libtool refuses a
    # path that is not there; they are made to name the tree
    old=$(sed -n "s|^libdir='\(.*\)/lib'\$|\1|p" "$ompi5/lib/libmpi.la" 2>/dev/null)
    if [ -n "$old" ] && [ "$old" != "$ompi5" ] && [ ! -d "$old/lib" ]; then
        echo "quickstart: $ompi5/lib/*.la name $old: made to name $ompi5"
        find "$ompi5/lib" -name '*.la' -exec sed -i "s|$old/|$ompi5/|g; s|'$old/lib'|'$ompi5/lib'|" {} +
    fi
    export OPAL_PREFIX=$ompi5 PATH=$ompi5/bin:$PATH
    export LD_LIBRARY_PATH=$ompi5/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    mpi=$ompi5
fi
if [ "$san" = thread ]; then
    build=${FTMPI_BUILD_DIR:-$here/_build_tsan}
elif [ "$san" = 1 ] || [ "$san" = address ]; then
    san=1
    build=${FTMPI_BUILD_DIR:-$here/_build_asan}
elif [ "$mpi" = mpich ]; then
    build=${FTMPI_BUILD_DIR:-$here/_build_mpich}
elif [ -n "${ompi5:-}" ]; then
    build=${FTMPI_BUILD_DIR:-$here/_build_ompi5}
else
    build=${FTMPI_BUILD_DIR:-$here/_build}
fi
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

usage() {
    echo "usage: $0 demo|check|check-nodes|check-asan|check-tsan|check-mpich|check-ompi5" >&2
    exit 2
}
case "$verb" in demo|check) ;; *) usage ;; esac

# ---- 1. Debian packages ---------------------------------------------------
packages="autoconf automake libtool pkg-config make gcc libc6-dev \
libopenmpi-dev openmpi-bin libhwloc-dev libevent-dev libssl-dev \
protobuf-c-compiler libprotobuf-c-dev libcmocka-dev libxxhash-dev gdb strace g++ gfortran libucx-dev ucx-utils"
# promtool (Debian's prometheus) tests the shipped alert rules (tests/monitoring)
[ "$verb" = check ] && packages="$packages prometheus"
# etcd (Debian's 3.4 server and etcdctl) and what ftmpi-lighthouse --etcd
# talks to it with (libcurl, json-c): the standby lighthouses' tests
[ "$verb" = check ] && packages="$packages etcd-server etcd-client libcurl4-openssl-dev libjson-c-dev"
# MPICH beside Open MPI: Debian registers mpicc and mpirun as alternatives
# (update-alternatives --display mpi, mpirun), Open MPI's with the higher
# priority; installing MPICH leaves them Open MPI's, and the build below
# names MPICH's wrapper and launcher explicitly (configure --with-mpi=mpich).
[ "$mpi" = mpich ] && packages="$packages libmpich-dev mpich"
# the nodes (tests/nodes): sshd in each node, and Slurm across them
[ -n "$nodes" ] && packages="$packages openssh-server slurm-wlm munge"
missing=""
for p in $packages; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends$missing"
    if [ "$(id -u)" = 0 ]; then
        echo "quickstart: installing:$missing"
        sh -c "$cmd"
    else
        echo "quickstart: these Debian packages are missing:$missing" >&2
        echo "quickstart: install them as root, then run me again:" >&2
        echo "  sudo sh -c '$cmd'" >&2
        exit 1
    fi
fi

# ---- 2. configure and build ------------------------------------------------
# the same flags for demo and check: switching verbs never reconfigures
flags="--enable-werror --enable-test-hooks"
[ "${FTMPI_WERROR:-1}" = 0 ] && flags="--enable-test-hooks"
[ "$san" = 1 ] && flags="$flags --enable-sanitizers"
[ "$san" = thread ] && flags="$flags --enable-sanitizers=thread"
[ -n "$mpi" ] && flags="$flags --with-mpi=$mpi"
if [ ! -x "$here/configure" ] || [ "$here/configure.ac" -nt "$here/configure" ]; then
    echo "quickstart: ./autogen.sh"
    "$here/autogen.sh"
fi
mkdir -p "$build"
if [ ! -f "$build/Makefile" ] || [ "$(cat "$build/.quickstart-flags" 2>/dev/null)" != "$flags" ]; then
    echo "quickstart: configure $flags (in $build)"
    (cd "$build" && "$here/configure" $flags)
    echo "$flags" > "$build/.quickstart-flags"
fi
echo "quickstart: make -j$jobs"
make -C "$build" -j"$jobs"

# ---- 3. run ----------------------------------------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
if [ -n "$mpi" ]; then
    for alt in mpi mpirun; do
        update-alternatives --query "$alt" 2>/dev/null | sed -n 's/^Value: /quickstart: default '"$alt"': /p'
    done
fi
case "$verb" in
check)
    if [ -n "$nodes" ]; then
        echo "quickstart: make check-nodes"
        make -C "$build" -j"$jobs" check-nodes
        exit
    fi
    tests=()
    [ "$san" = thread ] && tests=(TESTS="$tsan_tests")
    [ -n "${ompi5:-}" ] && tests=(TESTS="$ompi5_tests")
    echo "quickstart: make check ${tests[*]}"
    if ! make -C "$build" -j"$jobs" check "${tests[@]}"; then
        echo "quickstart: make check failed; failing test logs:" >&2
        find "$build" -name '*.log' ! -name 'config.log' ! -name 'test-suite.log' -print0 |
            xargs -0 grep -l '^FAIL\|^ERROR' 2>/dev/null | while read -r f; do
                echo "==== $f" >&2
                tail -n 60 "$f" >&2
            done
        exit 1
    fi
    ;;
demo)
    # the launcher configure chose (the one of the MPI built against)
    # (scripts/demo.sh says Open MPI's mpirun words; under MPICH,
    # tests/integration/mpirun_hydra.sh says them to hydra)
    MPIRUN=$(sed -n 's/^MPIRUN = //p' "$build/Makefile")
    if [ "$(sed -n 's/^FTMPI_MPI_IMPL = //p' "$build/Makefile")" = mpich ]; then
        FTI_REAL_MPIRUN=$MPIRUN
        MPIRUN=$here/tests/integration/mpirun_hydra.sh
        export FTI_REAL_MPIRUN
    fi
    export MPIRUN
    exec "$here/scripts/demo.sh" "$build" "${@:2}"
    ;;
esac
