#!/bin/sh
# test_ftmpi_info.sh - ftmpi-info names every variable of the FTMPI_* table
# (src/base/settings.c) with its current value, reports the build options, and
# refuses a bad value with exit 2 and a message naming the variable.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"

INFO=$top_builddir/ftmpi-info
[ -x "$INFO" ] || skip "$INFO not built"
need_cmd timeout
san_full_stacks # ftmpi-info loads hwloc's I/O plugins
T=$TEST_TMPDIR

# clear any FTMPI_* of the caller's environment
for v in $(env | sed -n 's/^\(FTMPI_[A-Z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done

# the names of the table, read from its source
grep -o '^ *{"FTMPI_[A-Z0-9_]*"' "$top_srcdir/src/base/settings.c" | sed 's/.*"\(FTMPI_[A-Z0-9_]*\)"/\1/' >"$T/names"
[ "$(wc -l <"$T/names")" -ge 10 ] || die "found only $(wc -l <"$T/names") FTMPI_* names in src/base/settings.c"

timeout 10 "$INFO" >"$T/out" 2>"$T/err" || die "ftmpi-info failed (exit $?): $(cat "$T/err")"
while read -r name; do
    grep -q "^  $name " "$T/out" || die "ftmpi-info does not list $name"
done <"$T/names"
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top_builddir/ftmpi_config.h")
[ -n "$version" ] || die "no PACKAGE_VERSION in $top_builddir/ftmpi_config.h"
grep -q "^libftmpi $version\$" "$T/out" || die "ftmpi-info does not print version $version"
# the build report: what configure recorded (ftmpi_config.h) is what it says
cfg=$top_builddir/ftmpi_config.h
cdef() { sed -n "s/^#define $1 \"\(.*\)\"\$/\1/p" "$cfg"; }
grep -Eq '^  MPI compiler +[^ ]' "$T/out" || die "no MPI compiler"
mpilib=$(cdef FTMPI_MPI_LIBRARY)
[ -n "$mpilib" ] || die "no FTMPI_MPI_LIBRARY in $cfg"
grep -Fq "  MPI library    $mpilib (MPI standard $(cdef FTMPI_MPI_STANDARD))" "$T/out" ||
    die "MPI library not shown as '$mpilib': $(grep 'MPI library' "$T/out")"
if [ -n "$MPIRUN" ] && "$MPIRUN" --version 2>/dev/null | grep -q 'Open MPI'; then
    v=$("$MPIRUN" --version | sed -n 's/.*(Open MPI) \([0-9.]*\).*/\1/p')
    [ "$mpilib" = "Open MPI $v" ] || die "built with '$mpilib', but mpirun is Open MPI $v"
fi
grep -Eq '^  prefix +/' "$T/out" || die "no install prefix"
grep -Eq '^  configure +[^ ]' "$T/out" || die "no configure line"
grep -Eq '^  backends +tcp, mpi, baby-tcp(, nccl, baby-nccl)?(, ucx)?$' "$T/out" || die "backends not 'tcp, mpi, baby-tcp[, nccl, baby-nccl][, ucx]': $(grep backends "$T/out")"
# CUDA and NCCL: as configure found them (used: device buffers, nccl backends)
grep -Eq '^  CUDA +(off|not found in .*|yes \(.*\))$' "$T/out" ||
    die "CUDA shown as: $(grep '^  CUDA' "$T/out")"
grep -Eq '^  NCCL +(off|not found in .*|yes \(.*\))$' "$T/out" ||
    die "NCCL shown as: $(grep '^  NCCL' "$T/out")"
if grep -q '^#define FTMPI_HAVE_CUDA 1' "$cfg"; then
    grep -Eq '^  CUDA +yes ' "$T/out" || die "configure found CUDA, ftmpi-info does not say so"
fi
if grep -q '^#define FTMPI_HAVE_NCCL 1' "$cfg"; then
    grep -Eq '^  backends +.*, nccl, baby-nccl(, ucx)?$' "$T/out" || die "built with NCCL, backends do not list nccl"
else
    grep -q 'nccl' "$T/out" && grep -Eq '^  backends +.*nccl' "$T/out" && die "no NCCL, yet nccl listed"
fi
# UCX (issue 37): as configure found it; built with it, the version UCX
# reports and the transports its context found (libucp loaded at run time)
grep -Eq '^  UCX +(off \(--without-ucx\)|not found .*|found by pkg-config .*|yes \(.*\))$' "$T/out" ||
    die "UCX shown as: $(grep '^  UCX ' "$T/out")"
if grep -q '^#define FTMPI_HAVE_UCX 1' "$cfg"; then
    grep -Eq '^  backends +.*, ucx$' "$T/out" || die "built with UCX, backends do not list ucx"
    grep -Eq '^  UCX runtime +[0-9]+\.[0-9]+\.[0-9]+ loaded, transports .*[a-z]+/[a-z0-9]+' "$T/out" ||
        die "built with UCX, no UCX version and transports: $(grep '^  UCX runtime' "$T/out")"
    timeout 10 "$INFO" --parsable | grep -Eq '^dep:ucx_transports:.+' ||
        die "--parsable has no dep:ucx_transports line"
else
    grep -Eq '^  backends +.*ucx' "$T/out" && die "no UCX, yet ucx listed"
    grep -q '^  UCX runtime' "$T/out" && die "no UCX, yet a UCX runtime line"
fi

# the current value comes from the environment, marked with *
FTMPI_TIMEOUT_MS=1234 FTMPI_BACKEND=TCP timeout 10 "$INFO" >"$T/out2" 2>&1 || die "ftmpi-info failed with good values"
grep -Eq '^  FTMPI_TIMEOUT_MS +10000 +1234\* ' "$T/out2" || die "FTMPI_TIMEOUT_MS=1234 not shown: $(grep FTMPI_TIMEOUT_MS "$T/out2")"
grep -Eq '^  FTMPI_BACKEND +auto +tcp\* ' "$T/out2" || die "FTMPI_BACKEND=TCP not shown as tcp"
grep -Eq '^  FTMPI_HEARTBEAT_MS +100 +100 ' "$T/out2" || die "an unset variable is not shown with its default"

# a bad value: exit 2, the message names the variable and the value
FTMPI_TIMEOUT_MS=abc timeout 10 "$INFO" >"$T/out3" 2>"$T/err3"
rc=$?
[ $rc -eq 2 ] || die "FTMPI_TIMEOUT_MS=abc: exit $rc, expected 2"
grep -q "FTMPI_TIMEOUT_MS='abc'" "$T/err3" || die "message does not name FTMPI_TIMEOUT_MS: $(cat "$T/err3")"
FTMPI_BACKEND=nccl9 timeout 10 "$INFO" >/dev/null 2>"$T/err4"
rc=$?
[ $rc -eq 2 ] || die "FTMPI_BACKEND=nccl9: exit $rc, expected 2"
grep -q FTMPI_BACKEND "$T/err4" || die "message does not name FTMPI_BACKEND"

# the markdown page names every variable too
timeout 10 "$INFO" --env-markdown >"$T/md" || die "--env-markdown failed"
while read -r name; do
    grep -q "^| \`$name\` |" "$T/md" || die "--env-markdown does not list $name"
done <"$T/names"

# --topology: an invented node (hwloc's HWLOC_SYNTHETIC), then this one
HWLOC_SYNTHETIC='pack:2 core:3 pu:2' timeout 10 "$INFO" --topology >"$T/topo" 2>&1 ||
    die "--topology failed: $(cat "$T/topo")"
grep -Eq '^  machine +2 packages, [0-9]+ NUMA nodes, 6 cores, 12 PUs$' "$T/topo" ||
    die "--topology on a synthetic 2x3x2 node: $(cat "$T/topo")"
grep -Eq '^  bound to +' "$T/topo" || die "--topology shows no binding"
timeout 10 "$INFO" --topology >"$T/topo2" 2>&1 || die "--topology failed here: $(cat "$T/topo2")"
grep -Eq '^  machine +[0-9]+ packages, [0-9]+ NUMA nodes, [1-9][0-9]* cores, [1-9][0-9]* PUs$' "$T/topo2" ||
    die "--topology here: $(cat "$T/topo2")"

timeout 10 "$INFO" --version | grep -q "(libftmpi) $version\$" || die "--version"
timeout 10 "$INFO" --bogus >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || die "--bogus: exit $rc, expected 2"
# --parsable: key:value lines with the build and every dependency
timeout 10 "$INFO" --parsable >"$T/parsable" 2>&1 || die "--parsable failed: $(cat "$T/parsable")"
for key in package:version package:git_revision package:build_date build:compiler build:cflags \
    dep:mpi dep:libevent dep:openssl dep:xxhash dep:hwloc env:FTMPI_LOG_LEVEL; do
    grep -q "^$key:." "$T/parsable" || die "--parsable has no $key: $(cat "$T/parsable")"
done
grep -q "^package:version:$version\$" "$T/parsable" || die "--parsable: wrong version"
# hwloc: the release built against (pkg-config's), not only the API version
if hv=$(pkg-config --modversion hwloc 2>/dev/null); then
    grep -q "^dep:hwloc:$hv " "$T/parsable" || die "--parsable: $(grep '^dep:hwloc' "$T/parsable"), hwloc is $hv"
fi
! grep -v '^[a-z-]*:[A-Za-z_0-9-]*:' "$T/parsable" | grep -q . ||
    die "--parsable: lines not key:value: $(grep -v '^[a-z-]*:[A-Za-z_0-9-]*:' "$T/parsable" | head -3)"

# --version on every tool: "<tool> (libftmpi) VERSION", exit 0
for tool in ftmpi-info ftmpi-run ftmpi-lighthouse ftmpi-ckpt ftmpi-baby; do
    out=$(timeout 10 "$top_builddir/$tool" --version 2>&1) || die "$tool --version: exit $?: $out"
    [ "$out" = "$tool (libftmpi) $version" ] || die "$tool --version printed '$out'"
done
echo "PASS ($TEST_NAME)"
