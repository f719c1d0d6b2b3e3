#!/bin/sh
# test_layering.sh - the layers of README "Layout" hold in the built objects:
# src/base, src/control, src/comm (but for the mpi backend's own library),
# lighthouse/ and the tools carry no MPI symbol, and their sources include
# neither mpi.h nor ftmpi.h (they are compiled without MPI's include path, so
# an include would not even build; this names the offender if one sneaks in
# through a header that guards it).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"

need_cmd nm
B=$top_builddir
checked=0
for lib in libfti_base libfti_control libfti_comm libfti_lighthouse; do
    a=$B/.libs/$lib.a
    [ -f "$a" ] || die "$a not built"
    syms=$(nm -A "$a" 2>/dev/null | grep -E ' [UTDBR] (P?MPI_|ompi_|MPIX_)' || true)
    [ -z "$syms" ] || die "$lib uses MPI: $(echo "$syms" | head -5)"
    checked=$((checked + 1))
done
for prog in ftmpi-lighthouse ftmpi-run ftmpi-info ftmpi-baby; do
    bin=$B/.libs/$prog
    [ -x "$bin" ] || bin=$B/$prog
    [ -x "$bin" ] || die "$prog not built"
    syms=$(nm "$bin" 2>/dev/null | grep -E ' [UTDBR] (P?MPI_|ompi_)' || true)
    [ -z "$syms" ] || die "$prog uses MPI: $(echo "$syms" | head -5)"
    if command -v ldd >/dev/null 2>&1 && ldd "$bin" 2>/dev/null | grep -q 'libmpi'; then
        die "$prog is linked against libmpi"
    fi
    checked=$((checked + 1))
done
# the mpi backend's library is the one place in src/comm that does use MPI
nm "$B/.libs/libfti_comm_mpi.a" | grep -q ' U PMPI_\| U MPI_' || die "libfti_comm_mpi.a has no MPI symbol: the check above would prove nothing"

S=$top_srcdir
bad=$(grep -lE '#include [<"](mpi|ftmpi)\.h[>"]' "$S"/src/base/* "$S"/src/control/*.[ch] \
    "$S"/src/comm/*.[ch] "$S"/lighthouse/*.[ch] "$S"/tools/ftmpi-run.c "$S"/tools/ftmpi-info.c \
    "$S"/tools/ftmpi-baby.c 2>/dev/null |
    grep -v 'src/comm/mpi\(_backend\.h\|\.c\)$' || true)
[ -z "$bad" ] || die "MPI-free layers include mpi.h/ftmpi.h: $bad"
# ftmpi-baby links only src/base and src/comm: no control plane (protobuf,
# libevent's server) in the child either
bin=$B/ftmpi-baby
[ -x "$bin" ] || die "ftmpi-baby not built"
syms=$(nm "$bin" 2>/dev/null | grep -E ' [TU] (protobuf_c_|ftmpi__|fti_store_|fti_manager_|fti_lighthouse)' || true)
[ -z "$syms" ] || die "ftmpi-baby links the control plane: $(echo "$syms" | head -5)"
if command -v ldd >/dev/null 2>&1 && ldd "$bin" 2>/dev/null | grep -Eq 'libmpi|libprotobuf-c'; then
    die "ftmpi-baby is linked against libmpi or protobuf-c"
fi
echo "ok: $checked libraries and programs without MPI"
