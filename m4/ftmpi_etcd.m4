# FTMPI_CHECK_ETCD: lighthouse failover through etcd (lighthouse/etcd.c,
# lighthouse/leader.c; DESIGN section 6).  --with-etcd (default: check)
# finds libcurl and json-c with pkg-config (Debian's libcurl4-openssl-dev
# and libjson-c-dev): the lighthouse talks to etcd's v3 JSON gateway over
# HTTP(S).  --without-etcd builds without it: ftmpi-lighthouse --etcd then
# exits 2 with a clear error and the etcd tests skip.  Only ftmpi-lighthouse
# and its tests link them (libfti_lh_etcd.la), never libftmpi.  Defines
# FTMPI_HAVE_ETCD, substitutes ETCD_CFLAGS and ETCD_LIBS, sets the
# conditional HAVE_ETCD and ftmpi_etcd_summary.
AC_DEFUN([FTMPI_CHECK_ETCD], [
  AC_ARG_WITH([etcd],
    [AS_HELP_STRING([--with-etcd], [standby lighthouses elected through etcd, with libcurl and json-c (default: when found)])],
    [], [with_etcd=check])
  have_etcd=no
  ftmpi_etcd_summary="off (--without-etcd)"
  AS_IF([test "x$with_etcd" != xno], [
    PKG_CHECK_MODULES([ETCD], [libcurl >= 7.68 json-c >= 0.13],
      [have_etcd=yes; ftmpi_etcd_summary="yes (libcurl $(pkg-config --modversion libcurl 2>/dev/null), json-c $(pkg-config --modversion json-c 2>/dev/null))"],
      [ftmpi_etcd_summary="not found (pkg-config libcurl json-c: Debian's libcurl4-openssl-dev libjson-c-dev)"])])
  AS_IF([test "x$with_etcd" = xyes && test "x$have_etcd" != xyes],
    [AC_MSG_ERROR([--with-etcd given but its libraries were not found: $ftmpi_etcd_summary])])
  AS_IF([test "x$have_etcd" != xyes], [ETCD_CFLAGS=; ETCD_LIBS=])
  AS_IF([test "x$have_etcd" = xyes],
    [AC_DEFINE([FTMPI_HAVE_ETCD], [1], [ftmpi-lighthouse --etcd is built (libcurl and json-c found)])])
  AC_DEFINE_UNQUOTED([FTMPI_ETCD_SUMMARY], ["$ftmpi_etcd_summary"], [etcd support as configure found it])
  AM_CONDITIONAL([HAVE_ETCD], [test "x$have_etcd" = xyes])
  AC_SUBST([ETCD_CFLAGS])
  AC_SUBST([ETCD_LIBS])
])
