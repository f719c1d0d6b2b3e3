# FTMPI_CHECK_MPI: find MPI through its compiler wrapper.
# --with-mpi=DIR looks for DIR/bin/mpicc; otherwise mpicc on the PATH.
# Sets MPI_CPPFLAGS and MPI_LIBS from the wrapper (Open MPI --showme, MPICH -show).
AC_DEFUN([FTMPI_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi=DIR], [MPI installation prefix (DIR/bin/mpicc); default: mpicc on the PATH])],
    [], [with_mpi=])
  AS_IF([test "x$with_mpi" = xno], [AC_MSG_ERROR([MPI is required; --without-mpi is not supported])])
  AS_IF([test -n "$with_mpi" && test "x$with_mpi" != xyes],
    [AC_PATH_PROG([MPICC], [mpicc], [], [$with_mpi/bin])],
    [AC_PATH_PROG([MPICC], [mpicc], [])])
  AS_IF([test -z "$MPICC"],
    [AC_MSG_ERROR([mpicc not found: install Open MPI (Debian: libopenmpi-dev openmpi-bin) or pass --with-mpi=DIR])])
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
  AC_MSG_RESULT([$MPI_LIBS])
  save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $MPI_CPPFLAGS"; LIBS="$MPI_LIBS $LIBS"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[MPI_Init(0, 0); MPI_Finalize();]])],
    [], [AC_MSG_ERROR([cannot compile and link an MPI program with $MPICC's flags])])
  AC_CHECK_DECLS([MPI_Comm_create_group], [], [], [[#include <mpi.h>]])
  CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS
  ftmpi_mpi_summary="$MPICC (`$MPICC --showme:version 2>/dev/null | head -n1`)"
  AC_SUBST([MPICC])
  AC_SUBST([MPI_CPPFLAGS])
  AC_SUBST([MPI_LIBS])
])
