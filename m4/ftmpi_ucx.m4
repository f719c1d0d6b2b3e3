# FTMPI_CHECK_UCX: the optional UCX backend (src/comm/ucx*.c, DESIGN
# section 5).  --with-ucx (default: check) finds UCX's ucp with pkg-config
# (`ucx`, Debian's libucx-dev); --without-ucx builds without it.  Only API
# of UCX 1.13 (Debian's) is used.  Defines FTMPI_HAVE_UCX, substitutes
# UCX_CFLAGS and UCX_LIBS, sets the conditional HAVE_UCX and
# ftmpi_ucx_summary for configure's summary and ftmpi-info.  UCX_LIBS is
# for the link check only: the library loads libucp at run time
# (FTMPI_UCX_LIBUCP).
AC_DEFUN([FTMPI_CHECK_UCX], [
  AC_ARG_WITH([ucx],
    [AS_HELP_STRING([--with-ucx], [the ucx backend, UCX found with pkg-config (default: when found)])],
    [], [with_ucx=check])
  have_ucx=no
  ftmpi_ucx_summary="off (--without-ucx)"
  AS_IF([test "x$with_ucx" != xno], [
    PKG_CHECK_MODULES([UCX], [ucx >= 1.13],
      [have_ucx=yes; ftmpi_ucx_summary="yes ($(pkg-config --modversion ucx 2>/dev/null))"],
      [ftmpi_ucx_summary="not found (pkg-config ucx: Debian's libucx-dev)"])])
  AS_IF([test "x$have_ucx" = xyes], [
    save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $UCX_CFLAGS"; LIBS="$UCX_LIBS $LIBS"
    AC_MSG_CHECKING([whether ucp links])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <ucp/api/ucp.h>]],
        [[ucp_params_t p; p.field_mask = 0; (void)p; return ucp_get_version_string() == 0;]])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no]); have_ucx=no; ftmpi_ucx_summary="found by pkg-config but ucp does not link"])
    CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS])
  AS_IF([test "x$with_ucx" = xyes && test "x$have_ucx" != xyes],
    [AC_MSG_ERROR([--with-ucx given but UCX was not found: $ftmpi_ucx_summary])])
  AS_IF([test "x$have_ucx" != xyes], [UCX_CFLAGS=; UCX_LIBS=])
  AS_IF([test "x$have_ucx" = xyes], [
    AC_DEFINE([FTMPI_HAVE_UCX], [1], [the ucx backend is built (UCX found)])
    # loaded at run time, not linked (src/comm/ucx.h says why): the full
    # name where pkg-config's libdir has it, else the soname for ld.so
    ucx_libucp=libucp.so.0
    ucx_libdir=$(pkg-config --variable=libdir ucx 2>/dev/null)
    AS_IF([test -n "$ucx_libdir" && test -e "$ucx_libdir/libucp.so.0"], [ucx_libucp=$ucx_libdir/libucp.so.0])
    AC_DEFINE_UNQUOTED([FTMPI_UCX_LIBUCP], ["$ucx_libucp"], [the libucp the ucx backend loads])])
  AM_CONDITIONAL([HAVE_UCX], [test "x$have_ucx" = xyes])
  AC_SUBST([UCX_CFLAGS])
  AC_SUBST([UCX_LIBS])
])
