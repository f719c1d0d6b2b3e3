#!/bin/sh
# test_install.sh - an install in a fresh prefix is usable as installed
# (issue 16, doc/INSTALL.md): `make install prefix=DIR` from the build tree,
# then a small program outside the tree, built once with
# `pkg-config --cflags --libs ftmpi` and plain cc and once with CMake's
# find_package(ftmpi) and ftmpi::ftmpi, runs one committed step under mpirun
# against the installed ftmpi-lighthouse, with LD_LIBRARY_PATH unset (the
# rpath finds libftmpi).  Also: the files name DIR, never /usr/local; a
# DESTDIR install names its final prefix, not the staging root; the
# modulefile's paths exist; the man pages are found; `make uninstall`
# leaves no file behind.
#
# With FTMPI_TEST_PREFIX set (`make installcheck`, which distcheck runs) it
# tests that existing install instead and installs nothing.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/integration/common.sh"

need_cmd timeout pkg-config cc
need_mpirun
lib_test_env
T=$TEST_TMPDIR
# nothing of the caller's may help the program find libftmpi
unset LD_LIBRARY_PATH LIBRARY_PATH CPATH C_INCLUDE_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH
unset FTMPI_GROUP_SIZE FTMPI_LIGHTHOUSE FTMPI_REPLICA_ID
# make check's make flags (jobserver, TESTS=...) are not for this make
unset MAKEFLAGS MFLAGS MAKELEVEL
MAKE=${MAKE_PROG:-make}

# ---- the install ---------------------------------------------------------
if [ -n "$FTMPI_TEST_PREFIX" ]; then
    P=$FTMPI_TEST_PREFIX
    PCDIR=${FTMPI_TEST_PKGCONFIGDIR:-$P/lib/pkgconfig}
else
    P=$T/prefix
    PCDIR=$P/lib/pkgconfig
    t0=$(date +%s)
    timeout 120 $MAKE -C "$top_builddir" install prefix="$P" >"$T/install.out" 2>&1 ||
        die "make install prefix=$P failed: $(tail -20 "$T/install.out")"
    echo "make install: $(($(date +%s) - t0)) s"
fi
for f in bin/ftmpi-lighthouse bin/ftmpi-run bin/ftmpi-info include/ftmpi.h include/ftmpi_errors.h \
    share/libftmpi/examples/ft_sgd.c share/libftmpi/slurm/ft_sgd_mode_a.sbatch \
    share/libftmpi/slurm/ft_sgd_mode_a_srun.sbatch share/libftmpi/slurm/ft_sgd_mode_b.sbatch \
    share/libftmpi/monitoring/grafana-ftmpi.json share/libftmpi/monitoring/prometheus-ftmpi-alerts.yml; do
    [ -f "$P/$f" ] || die "$P/$f not installed"
done
ls "$P"/lib*/libftmpi.so >/dev/null 2>&1 || die "no libftmpi.so in $P/lib*"
PC=$PCDIR/ftmpi.pc
[ -f "$PC" ] || die "$PC not installed"
CMAKEDIR=$(dirname "$PC")/../cmake/ftmpi
[ -f "$CMAKEDIR/ftmpiConfig.cmake" ] || die "no $CMAKEDIR/ftmpiConfig.cmake"
[ -f "$CMAKEDIR/ftmpiConfigVersion.cmake" ] || die "no $CMAKEDIR/ftmpiConfigVersion.cmake"
version=$(sed -n 's/^Version: //p' "$PC")
[ -n "$version" ] || die "no Version in $PC"

# the files name the prefix they were installed to
grep -qx "prefix=$P" "$PC" || die "$PC does not say prefix=$P: $(grep '^prefix=' "$PC")"
if [ -z "$FTMPI_TEST_PREFIX" ]; then
    ! grep -rl /usr/local "$PC" "$CMAKEDIR" "$P/share/modulefiles" >"$T/usrlocal" 2>/dev/null ||
        die "/usr/local in $(cat "$T/usrlocal")"
fi
export PKG_CONFIG_PATH=$PCDIR
[ "$(pkg-config --modversion ftmpi)" = "$version" ] || die "pkg-config --modversion ftmpi"
libs=$(pkg-config --libs ftmpi)
libdir=$(pkg-config --variable=libdir ftmpi)
if ! echo "$libs" | grep -q -- "-Wl,-rpath,$libdir"; then
    # configure --disable-rpath (doc/INSTALL.md): the user sets the path
    grep -q "^FTMPI_RPATH = no" "$top_builddir/Makefile" 2>/dev/null ||
        die "no -Wl,-rpath,$libdir in pkg-config --libs ftmpi: $libs"
    echo "note: built with --disable-rpath; the programs run with LD_LIBRARY_PATH=$libdir"
    LD_LIBRARY_PATH=$libdir
    export LD_LIBRARY_PATH
fi

# the installed tools run without the build tree: ftmpi-info knows its prefix
timeout 10 "$P/bin/ftmpi-info" >"$T/info.out" 2>&1 || die "installed ftmpi-info failed: $(cat "$T/info.out")"
grep -Eq "^  prefix +$P( |\$)" "$T/info.out" || die "installed ftmpi-info: $(grep prefix "$T/info.out")"
# --parsable too: the prefix it runs from (the configured one may differ)
timeout 10 "$P/bin/ftmpi-info" --parsable >"$T/info.parsable" 2>&1 || die "installed ftmpi-info --parsable failed"
grep -qx "build:prefix:$P" "$T/info.parsable" ||
    die "installed ftmpi-info --parsable: $(grep prefix "$T/info.parsable") (installed in $P)"

# the man pages are where man looks under the prefix
if command -v man >/dev/null 2>&1; then
    for page in ftmpi-lighthouse ftmpi-run ftmpi-info ftmpi FT_Allreduce; do
        MANPATH=$P/share/man man -w "$page" >/dev/null 2>&1 || die "man -w $page: not found under $P/share/man"
    done
fi

# the modulefile: every path it adds exists in the install
MOD=$P/share/modulefiles/ftmpi/$version.lua
[ -f "$MOD" ] || die "no modulefile $MOD"
sed -n 's/^prepend_path("\([A-Z_]*\)", "\(.*\)")$/\1 \2/p' "$MOD" >"$T/modpaths"
[ "$(wc -l <"$T/modpaths")" -ge 4 ] || die "modulefile sets $(wc -l <"$T/modpaths") paths"
while read -r var dir; do
    [ -d "$dir" ] || die "modulefile: $var gets $dir, which does not exist"
done <"$T/modpaths"
grep -q 'LD_LIBRARY_PATH' "$MOD" && grep -q '^[a-z_]*("LD_LIBRARY_PATH"' "$MOD" &&
    die "modulefile sets LD_LIBRARY_PATH (the rpath makes it unneeded)"
# the Tcl modulefile beside it: the cookie, the same paths
TCL=$P/share/modulefiles/ftmpi/$version
[ -f "$TCL" ] || die "no Tcl modulefile $TCL"
head -n 1 "$TCL" | grep -q '^#%Module' || die "$TCL lacks the #%Module cookie"
sed -n 's/^prepend-path \([A-Z_]*\) "\(.*\)"$/\1 \2/p' "$TCL" >"$T/tclpaths"
cmp -s "$T/modpaths" "$T/tclpaths" || die "the Tcl modulefile's paths differ from the Lua one's: $(cat "$T/tclpaths")"

# the modulefiles name their MPI (issue 36 item 7): configure's MPI library
# in whatis, and a prereq on the MPI's module when one was given
# (FTMPI_MODULE_MPI, configure's --with-module-mpi, or at make install)
grep -q '^whatis("MPI: [A-Za-z]' "$MOD" || die "$MOD names no MPI: $(grep -n whatis "$MOD")"
grep -q '^module-whatis "MPI: [A-Za-z]' "$TCL" || die "$TCL names no MPI"
[ "$(sed -n 's/^whatis("MPI: \(.*\)")$/\1/p' "$MOD")" = \
    "$(sed -n 's/^module-whatis "MPI: \(.*\)"$/\1/p' "$TCL")" ] || die "the modulefiles name different MPIs"
if [ -z "$FTMPI_TEST_PREFIX" ]; then
    timeout 120 $MAKE -C "$top_builddir" install-ftmpi-dist prefix="$T/modmpi" \
        FTMPI_MODULE_MPI=openmpi/4.1.4 >"$T/modmpi.out" 2>&1 ||
        die "make install-ftmpi-dist FTMPI_MODULE_MPI=...: $(tail -5 "$T/modmpi.out")"
    grep -qx 'local mpi_module = "openmpi/4.1.4"' "$T/modmpi/share/modulefiles/ftmpi/$version.lua" &&
        grep -qx 'set mpi_module "openmpi/4.1.4"' "$T/modmpi/share/modulefiles/ftmpi/$version" ||
        die "FTMPI_MODULE_MPI=openmpi/4.1.4: the modulefiles do not require it"
    if command -v tclsh >/dev/null 2>&1; then
        # Environment Modules' view of the Tcl file: the prereq it declares
        printf '%s\n' 'proc prereq {args} { puts "prereq $args" }' \
            'foreach p {module-whatis conflict setenv prepend-path} { proc $p {args} {} }' \
            'source [lindex $argv 0]' >"$T/mod.tcl"
        [ "$(tclsh "$T/mod.tcl" "$T/modmpi/share/modulefiles/ftmpi/$version")" = "prereq openmpi/4.1.4" ] ||
            die "the Tcl modulefile declares no prereq openmpi/4.1.4"
        [ -z "$(tclsh "$T/mod.tcl" "$TCL")" ] || die "the Tcl modulefile declares a prereq without a module named"
    fi
fi

# ---- a program outside the tree ------------------------------------------
mkdir -p "$T/app"
cat >"$T/app/app.c" <<'EOF'
/* one committed step of libftmpi, as a user's program would do it */
#include <ftmpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    float w[4] = {1, 2, 3, 4}, g[4] = {1, 1, 1, 1};
    int committed = 0, rc;

    MPI_Init(&argc, &argv);
    rc = FT_Init(&argc, &argv);
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "FT_Init: %s\n", FT_Error_string(rc));
        return 1;
    }
    if ((rc = FT_State_register("w", w, sizeof(w))) == FT_SUCCESS &&
        (rc = FT_Quorum(0)) == FT_SUCCESS &&
        (rc = FT_Allreduce(MPI_IN_PLACE, g, 4, MPI_FLOAT, MPI_SUM, FT_COMM_REPLICAS)) == FT_SUCCESS)
        rc = FT_Commit(&committed);
    printf("libftmpi %s rc %s committed %d step %lld g0 %g\n", ftmpi_version(),
           FT_Error_string(rc), committed, (long long)FT_Step(), g[0]);
    FT_Finalize();
    MPI_Finalize();
    return rc == FT_SUCCESS && committed ? 0 : 1;
}
EOF
cat >"$T/app/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(ftmpi_install_test C)
find_package(ftmpi 0.1 REQUIRED)
add_executable(app_cmake app.c)
target_link_libraries(app_cmake PRIVATE ftmpi::ftmpi)
install(TARGETS app_cmake DESTINATION bin)
EOF

# pkg-config and plain cc (the .pc carries MPI's flags)
# shellcheck disable=SC2046
cc -o "$T/app/app_pc" "$T/app/app.c" $(pkg-config --cflags --libs ftmpi) >"$T/cc.out" 2>&1 ||
    die "cc with pkg-config --cflags --libs ftmpi failed: $(cat "$T/cc.out")"

# CMake: find_package(ftmpi) through CMAKE_PREFIX_PATH; then installed
APPS="$T/app/app_pc"
if command -v cmake >/dev/null 2>&1; then
    t0=$(date +%s)
    (cd "$T/app" && mkdir build && cd build &&
        timeout 120 cmake -DCMAKE_PREFIX_PATH="$P" -DCMAKE_INSTALL_PREFIX="$T/appprefix" .. &&
        timeout 120 cmake --build . && timeout 60 cmake --install .) >"$T/cmake.out" 2>&1 ||
        die "cmake build against $P failed: $(tail -30 "$T/cmake.out")"
    echo "cmake configure, build, install: $(($(date +%s) - t0)) s"
    APPS="$APPS $T/app/build/app_cmake $T/appprefix/bin/app_cmake"
else
    echo "note: no cmake; the CMake package is not tested"
fi

# ---- each program runs one step against the installed lighthouse ---------
"$P/bin/ftmpi-lighthouse" --bind 127.0.0.1:0 --min-replicas 1 --join-timeout-ms 100 \
    >"$T/lh.out" 2>"$T/lh.err" </dev/null &
LH_PID=$!
register_pid $LH_PID
wait_until 10 file_has "$T/lh.out" '^ftmpi-lighthouse listening on ' ||
    die "installed lighthouse did not start: $(cat "$T/lh.err")"
LH_ADDR=$(sed -n 's/^ftmpi-lighthouse listening on \([^ ]*\) .*/\1/p' "$T/lh.out")

# configure --enable-sanitizers: the installed libftmpi needs ASan's runtime
# first in these programs, built without it; only the runtime is preloaded
set --
ASAN_RT=$(san_runtime "$libdir/libftmpi.so")
[ -n "$ASAN_RT" ] && set -- -x LD_PRELOAD="$ASAN_RT" && echo "note: sanitizer build; the programs run with LD_PRELOAD=$ASAN_RT"

n=0
for app in $APPS; do
    n=$((n + 1))
    # linked against the installed library, found through the rpath
    ldd "$app" >"$T/ldd$n" 2>&1 || die "ldd $app: $(cat "$T/ldd$n")"
    grep -q "libftmpi\.so.* => $libdir/libftmpi\.so" "$T/ldd$n" ||
        die "$app does not load $libdir's libftmpi: $(grep -i ftmpi "$T/ldd$n")"
    FTMPI_LIGHTHOUSE=$LH_ADDR FTMPI_REPLICA_ID=app$n \
        timeout 60 "$MPIRUN" -np 1 "$@" "$app" >"$T/run$n.out" 2>"$T/run$n.err" ||
        die "$app under mpirun -np 1 failed (exit $?): $(cat "$T/run$n.out" "$T/run$n.err" | tail -20)"
    grep -Eq "^libftmpi $version rc [^ ]+ committed 1 step 1 g0 1\$" "$T/run$n.out" ||
        die "$app: unexpected output: $(cat "$T/run$n.out")"
done
echo "ran $n programs built against $P without LD_LIBRARY_PATH"
kill -TERM $LH_PID
wait_pid_timeout $LH_PID 10 || die "installed lighthouse did not stop on SIGTERM"
wait $LH_PID
rc=$?
[ $rc -eq 0 ] || die "installed lighthouse exited $rc on SIGTERM: $(tail -5 "$T/lh.err")"

# ---- DESTDIR: the files name the final prefix, not the staging root ------
if [ -z "$FTMPI_TEST_PREFIX" ]; then
    timeout 120 $MAKE -C "$top_builddir" install DESTDIR="$T/stage" prefix=/opt/ftmpi-test \
        >"$T/destdir.out" 2>&1 || die "make install DESTDIR=... failed: $(tail -20 "$T/destdir.out")"
    S=$T/stage/opt/ftmpi-test
    grep -qx 'prefix=/opt/ftmpi-test' "$S/lib/pkgconfig/ftmpi.pc" || die "DESTDIR: ftmpi.pc says $(grep '^prefix=' "$S/lib/pkgconfig/ftmpi.pc")"
    grep -q '"/opt/ftmpi-test/lib"' "$S/lib/cmake/ftmpi/ftmpiConfig.cmake" || die "DESTDIR: ftmpiConfig.cmake names another libdir"
    ! grep -rl "$T/stage" "$S/lib/pkgconfig" "$S/lib/cmake" "$S/share/modulefiles" >"$T/stagerefs" ||
        die "DESTDIR: the staging root is named in $(cat "$T/stagerefs")"

    # uninstall leaves nothing but directories
    timeout 120 $MAKE -C "$top_builddir" uninstall prefix="$P" >"$T/uninstall.out" 2>&1 ||
        die "make uninstall failed: $(tail -20 "$T/uninstall.out")"
    left=$(find "$P" ! -type d | head -5)
    [ -z "$left" ] || die "make uninstall left: $left"
fi
echo "PASS ($TEST_NAME)"
