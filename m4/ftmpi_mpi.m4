# FTMPI_CHECK_MPI: find MPI, tell which implementation it is, and pick the
# launcher of that same implementation (doc/INSTALL.md, "MPI and launcher").
#
#   --with-mpi=openmpi     Open MPI's wrapper (mpicc.openmpi, else an mpicc
#                          that is Open MPI's)
#   --with-mpi=mpich       MPICH's wrapper (mpicc.mpich, else an mpicc that is
#                          MPICH's or a derivative's)
#   --with-mpi=DIR         DIR/bin/mpicc (or DIR/bin/mpicc.*); without one, DIR
#                          holding include/mpi.h and lib/libmpi* or
#                          lib/libmpich* (Debian's /usr/lib/x86_64-linux-gnu/mpich)
#   MPICC=WRAPPER          that wrapper, as given
#   --with-mpirun=PATH     the launcher the tests and the demo use; default:
#                          the one of the implementation found above
#
# Sets MPICC, MPI_CPPFLAGS, MPI_LIBS, MPIRUN, FTMPI_MPI_IMPL (openmpi, mpich,
# unknown), ftmpi_mpi_library ("MPICH 4.0.2"), ftmpi_mpi_standard, and
# HAVE_MPIX_ULFM (the MPIX_Comm_revoke/shrink/agree/failure_ack/
# failure_get_acked calls of the fault-tolerance extensions).  A launcher
# of another implementation than mpi.h's is refused: Open MPI's mpirun
# starts MPICH programs as singletons (every rank is rank 0 of a world of 1).
AC_DEFUN([FTMPI_CHECK_MPI], [
  AC_REQUIRE([AC_PROG_CPP])
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi=openmpi|mpich|DIR],
      [the MPI to build against: Open MPI's or MPICH's wrapper, or an installation prefix (DIR/bin/mpicc, or DIR/include/mpi.h and DIR/lib); default: MPICC, else mpicc on the PATH])],
    [], [with_mpi=])
  AC_ARG_WITH([mpirun],
    [AS_HELP_STRING([--with-mpirun=PATH],
      [the launcher of the tests and the demo (default: the one of the MPI found; it must belong to that MPI)])],
    [], [with_mpirun=])
  AS_IF([test "x$with_mpi" = xno], [AC_MSG_ERROR([MPI is required; --without-mpi is not supported])])
  AS_IF([test "x$with_mpi" = xyes], [with_mpi=])
  ftmpi_want_impl=
  ftmpi_mpi_dir=
  AS_CASE([$with_mpi],
    [openmpi|ompi|open-mpi], [ftmpi_want_impl=openmpi],
    [mpich], [ftmpi_want_impl=mpich],
    [""], [],
    [/*], [ftmpi_mpi_dir=$with_mpi],
    [AC_MSG_ERROR([--with-mpi=$with_mpi: say openmpi, mpich or an absolute directory])])

  # 1. the wrapper (or, for a prefix without one, the flags directly)
  MPI_CPPFLAGS=; MPI_LIBS=
  AS_IF([test -n "$MPICC"], [
      ftmpi_cc_word=${MPICC%% *}
      AS_IF([test -x "$ftmpi_cc_word" || command -v "$ftmpi_cc_word" >/dev/null 2>&1], [],
        [AC_MSG_ERROR([MPICC=$MPICC: not found or not executable])])],
    [test "x$ftmpi_want_impl" = xopenmpi], [
      AC_PATH_PROGS([MPICC], [mpicc.openmpi mpicc], [])],
    [test "x$ftmpi_want_impl" = xmpich], [
      AC_PATH_PROGS([MPICC], [mpicc.mpich mpicc], [])],
    [test -n "$ftmpi_mpi_dir"], [
      AC_PATH_PROGS([MPICC], [mpicc mpicc.mpich mpicc.openmpi], [], [$ftmpi_mpi_dir/bin])
      AS_IF([test -z "$MPICC"], [
        AS_IF([test -f "$ftmpi_mpi_dir/include/mpi.h"], [],
          [AC_MSG_ERROR([--with-mpi=$ftmpi_mpi_dir: neither $ftmpi_mpi_dir/bin/mpicc nor $ftmpi_mpi_dir/include/mpi.h exists])])
        MPI_CPPFLAGS="-I$ftmpi_mpi_dir/include"
        ftmpi_libdir=
        for ftmpi_d in "$ftmpi_mpi_dir/lib" "$ftmpi_mpi_dir/lib64" "$ftmpi_mpi_dir/lib/x86_64-linux-gnu" "$ftmpi_mpi_dir/.."; do
          for ftmpi_l in mpich mpi; do
            AS_IF([test -z "$ftmpi_libdir" && ls "$ftmpi_d"/lib$ftmpi_l.so* >/dev/null 2>&1],
              [ftmpi_libdir=$ftmpi_d; MPI_LIBS="-L$ftmpi_d -l$ftmpi_l"])
          done
        done
        AS_IF([test -z "$MPI_LIBS"],
          [AC_MSG_ERROR([--with-mpi=$ftmpi_mpi_dir: no libmpich.so or libmpi.so under $ftmpi_mpi_dir/lib, lib64 or its parent])])])],
    [AC_PATH_PROG([MPICC], [mpicc], [])])
  AS_IF([test -z "$MPICC" && test -z "$MPI_LIBS"],
    [AC_MSG_ERROR([no MPI C compiler wrapper found${with_mpi:+ for --with-mpi=$with_mpi}: install Open MPI (Debian: libopenmpi-dev openmpi-bin) or MPICH (libmpich-dev mpich), or pass --with-mpi=DIR or MPICC=])])
  AS_IF([test -n "$MPICC"], [
    AC_MSG_CHECKING([MPI compile flags])
    MPI_CPPFLAGS=`$MPICC --showme:compile 2>/dev/null`
    AS_IF([test $? -ne 0 || test -z "$MPI_CPPFLAGS"], [
      # MPICH-style wrapper: keep the -I/-D words of "mpicc -show"
      MPI_CPPFLAGS=`$MPICC -show 2>/dev/null | tr ' ' '\n' | grep -E '^-(I|D)' | tr '\n' ' '`])
    AC_MSG_RESULT([$MPI_CPPFLAGS])
    AC_MSG_CHECKING([MPI link flags])
    MPI_LIBS=`$MPICC --showme:link 2>/dev/null`
    AS_IF([test $? -ne 0 || test -z "$MPI_LIBS"], [
      MPI_LIBS=`$MPICC -show 2>/dev/null | tr ' ' '\n' | grep -E '^-(L|l|Wl)' | tr '\n' ' '`])
    AC_MSG_RESULT([$MPI_LIBS])])

  # 2. which implementation mpi.h belongs to, read by the preprocessor
  # (nothing runs, so cross builds work too)
  AC_MSG_CHECKING([which MPI library mpi.h belongs to])
  cat > conftest.c <<_FTEOF
#include <mpi.h>
#if defined(OPEN_MPI)
ftmpi_lib "Open MPI" OMPI_MAJOR_VERSION.OMPI_MINOR_VERSION.OMPI_RELEASE_VERSION
ftmpi_impl openmpi
#elif defined(I_MPI_VERSION)
ftmpi_lib "Intel MPI" I_MPI_VERSION
ftmpi_impl mpich
#elif defined(MVAPICH2_VERSION)
ftmpi_lib "MVAPICH2" MVAPICH2_VERSION
ftmpi_impl mpich
#elif defined(MPICH_VERSION)
ftmpi_lib "MPICH" MPICH_VERSION
ftmpi_impl mpich
#endif
ftmpi_std MPI_VERSION.MPI_SUBVERSION
_FTEOF
  ftmpi_cpp_out=$($CPP $CPPFLAGS $MPI_CPPFLAGS conftest.c 2>/dev/null)
  ftmpi_mpi_library=$(printf '%s\n' "$ftmpi_cpp_out" | sed -n 's/^ftmpi_lib "\(@<:@^"@:>@*\)" *"*\(@<:@^"@:>@*\)"*.*$/\1 \2/p' | sed 's/ *\. */./g')
  ftmpi_mpi_standard=$(printf '%s\n' "$ftmpi_cpp_out" | sed -n 's/^ftmpi_std *\(.*\)$/\1/p' | sed 's/ //g')
  FTMPI_MPI_IMPL=$(printf '%s\n' "$ftmpi_cpp_out" | sed -n 's/^ftmpi_impl *\(@<:@a-z@:>@*\).*$/\1/p')
  rm -f conftest.c
  AS_IF([test -z "$ftmpi_mpi_library"], [ftmpi_mpi_library=unknown])
  AS_IF([test -z "$ftmpi_mpi_standard"], [ftmpi_mpi_standard=unknown])
  AS_IF([test -z "$FTMPI_MPI_IMPL"], [FTMPI_MPI_IMPL=unknown])
  AC_MSG_RESULT([$ftmpi_mpi_library (MPI $ftmpi_mpi_standard)])
  AS_IF([test -n "$ftmpi_want_impl" && test "x$FTMPI_MPI_IMPL" != "x$ftmpi_want_impl"],
    [AC_MSG_ERROR([--with-mpi=$with_mpi: $MPICC builds against $ftmpi_mpi_library, not $ftmpi_want_impl (Debian: install libmpich-dev mpich or libopenmpi-dev openmpi-bin; or pass MPICC=)])])

  save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $MPI_CPPFLAGS"; LIBS="$MPI_LIBS $LIBS"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[MPI_Init(0, 0); MPI_Finalize();]])],
    [], [AC_MSG_ERROR([cannot compile and link an MPI program with the flags of ${MPICC:-$with_mpi} ($MPI_CPPFLAGS $MPI_LIBS)])])
  AC_CHECK_DECLS([MPI_Comm_create_group], [], [], [[#include <mpi.h>]])
  # 3. the fault-tolerance extensions (ULFM): MPICH declares them in mpi.h,
  # Open MPI 5 in mpi-ext.h (with MPIX_ERR_PROC_FAILED).  Declared and
  # linkable, all five, or mode B does not use them.
  AC_CHECK_HEADERS([mpi-ext.h], [], [], [[#include <mpi.h>]])
  ftmpi_have_ulfm=yes
  m4_foreach_w([ftmpi_fn], [MPIX_Comm_revoke MPIX_Comm_shrink MPIX_Comm_agree MPIX_Comm_failure_ack MPIX_Comm_failure_get_acked], [
    AC_CHECK_DECL(ftmpi_fn, [], [ftmpi_have_ulfm=no], [[#include <mpi.h>
#ifdef HAVE_MPI_EXT_H
#include <mpi-ext.h>
#endif]])])
  AS_IF([test "x$ftmpi_have_ulfm" = xyes], [
    AC_MSG_CHECKING([whether the MPIX_Comm_* fault-tolerance calls link])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#ifdef HAVE_MPI_EXT_H
#include <mpi-ext.h>
#endif]], [[MPI_Comm c; MPI_Group g; int f = 1;
      MPIX_Comm_revoke(MPI_COMM_WORLD); MPIX_Comm_shrink(MPI_COMM_WORLD, &c);
      MPIX_Comm_agree(MPI_COMM_WORLD, &f); MPIX_Comm_failure_ack(MPI_COMM_WORLD);
      MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &g); return MPIX_ERR_PROC_FAILED + MPIX_ERR_REVOKED;]])],
      [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); ftmpi_have_ulfm=no])])
  AS_IF([test "x$ftmpi_have_ulfm" = xyes],
    [AC_DEFINE([HAVE_MPIX_ULFM], [1], [the MPI has MPIX_Comm_revoke, _shrink, _agree, _failure_ack, _failure_get_acked])])
  # the newer failed-process query (MPICH 4.2, Open MPI 5) and the
  # non-blocking agreement (mode B's commit decision under ULFM, polled
  # against its deadline), used where declared
  AC_CHECK_DECLS([MPIX_Comm_get_failed, MPIX_Comm_iagree], [], [], [[#include <mpi.h>
#ifdef HAVE_MPI_EXT_H
#include <mpi-ext.h>
#endif]])
  CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS

  # 4. the launcher: the one of the same implementation, found next to the
  # wrapper first, then on the PATH under the implementation's own name
  ftmpi_cc_dir=
  AS_IF([test -n "$MPICC"], [
    ftmpi_cc_path=${MPICC%% *}
    ftmpi_cc_path=`command -v "$ftmpi_cc_path" 2>/dev/null`
    ftmpi_cc_dir=`dirname "$ftmpi_cc_path" 2>/dev/null`])
  AS_IF([test -n "$ftmpi_mpi_dir"], [ftmpi_cc_dir="$ftmpi_mpi_dir/bin${ftmpi_cc_dir:+:$ftmpi_cc_dir}"])
  AS_IF([test -n "$with_mpirun"], [
      AS_IF([test -x "$with_mpirun"], [MPIRUN=$with_mpirun],
        [MPIRUN=`command -v "$with_mpirun" 2>/dev/null`])
      AS_IF([test -z "$MPIRUN"], [AC_MSG_ERROR([--with-mpirun=$with_mpirun: not found or not executable])])],
    [test -n "$MPIRUN"], [],
    [test "x$FTMPI_MPI_IMPL" = xopenmpi || test "x$FTMPI_MPI_IMPL" = xmpich], [
      # the first candidate that is this implementation's (plain mpirun
      # first for Open MPI: the drop-in recognises its launcher by that name)
      AS_IF([test "x$FTMPI_MPI_IMPL" = xopenmpi],
        [ftmpi_cands="mpirun orterun mpirun.openmpi mpiexec"],
        [ftmpi_cands="mpiexec.hydra mpiexec.mpich mpirun.mpich mpiexec mpirun"])
      AC_MSG_CHECKING([for the launcher of $ftmpi_mpi_library])
      for ftmpi_c in $ftmpi_cands; do
        ftmpi_save_IFS=$IFS; IFS=:
        for ftmpi_d in $ftmpi_cc_dir:$PATH; do
          IFS=$ftmpi_save_IFS
          AS_IF([test -z "$MPIRUN" && test -n "$ftmpi_d" && test -x "$ftmpi_d/$ftmpi_c"], [
            AS_CASE([`"$ftmpi_d/$ftmpi_c" --version 2>&1 </dev/null | head -n 5`],
              [*"Open MPI"*|*OpenRTE*|*PRRTE*], [ftmpi_ci=openmpi],
              [*HYDRA*|*Hydra*|*"Intel(R) MPI"*|*MPICH*], [ftmpi_ci=mpich],
              [ftmpi_ci=unknown])
            AS_IF([test "x$ftmpi_ci" = "x$FTMPI_MPI_IMPL"], [MPIRUN=$ftmpi_d/$ftmpi_c])])
        done
        IFS=$ftmpi_save_IFS
      done
      AC_MSG_RESULT([${MPIRUN:-none}])],
    [AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [], [$ftmpi_cc_dir:$PATH])])
  # which implementation the launcher belongs to: its --version
  FTMPI_MPIRUN_IMPL=unknown
  AS_IF([test -n "$MPIRUN"], [
    AC_MSG_CHECKING([which MPI $MPIRUN belongs to])
    ftmpi_run_ver=`"$MPIRUN" --version 2>&1 </dev/null | head -n 5`
    AS_CASE([$ftmpi_run_ver],
      [*"Open MPI"*|*OpenRTE*|*"Open RTE"*|*PRRTE*], [FTMPI_MPIRUN_IMPL=openmpi],
      [*HYDRA*|*Hydra*|*"Intel(R) MPI"*|*MPICH*], [FTMPI_MPIRUN_IMPL=mpich])
    AC_MSG_RESULT([$FTMPI_MPIRUN_IMPL])
    AS_IF([test "x$FTMPI_MPIRUN_IMPL" != xunknown && test "x$FTMPI_MPI_IMPL" != xunknown &&
           test "x$FTMPI_MPIRUN_IMPL" != "x$FTMPI_MPI_IMPL"],
      [AC_MSG_ERROR([the launcher $MPIRUN is $FTMPI_MPIRUN_IMPL's but mpi.h is $ftmpi_mpi_library's: it would start every rank as a singleton (world size 1).  Pass --with-mpirun=PATH naming the launcher of $ftmpi_mpi_library (Debian: mpiexec.hydra for MPICH, mpirun.openmpi for Open MPI)])])])

  ftmpi_mpi_summary="${MPICC:-$MPI_CPPFLAGS $MPI_LIBS} ($ftmpi_mpi_library)"
  AC_SUBST([MPICC])
  AC_SUBST([MPI_CPPFLAGS])
  AC_SUBST([MPI_LIBS])
  AC_SUBST([MPIRUN])
  AC_SUBST([FTMPI_MPI_IMPL])
  AC_DEFINE_UNQUOTED([FTMPI_MPI_LIBRARY], ["$ftmpi_mpi_library"], [the MPI library of mpi.h and its version])
  AC_DEFINE_UNQUOTED([FTMPI_MPI_STANDARD], ["$ftmpi_mpi_standard"], [MPI_VERSION.MPI_SUBVERSION of mpi.h])
  AC_DEFINE_UNQUOTED([FTMPI_MPIRUN], ["$MPIRUN"], [the launcher configure chose (ftmpi-info, messages)])
])
