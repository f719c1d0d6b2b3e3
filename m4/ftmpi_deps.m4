# FTMPI_CHECK_DEPS: hwloc, libevent (+ pthreads), protobuf-c and protoc-c,
# OpenSSL's libcrypto (the control plane's HMAC-SHA256 challenge-response),
# cmocka (tests only), all through pkg-config.
AC_DEFUN([FTMPI_CHECK_DEPS], [
  PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [],
    [AC_MSG_ERROR([hwloc >= 2.0 not found (Debian: libhwloc-dev): $HWLOC_PKG_ERRORS])])
  PKG_CHECK_MODULES([LIBEVENT], [libevent >= 2.1 libevent_pthreads >= 2.1], [],
    [AC_MSG_ERROR([libevent >= 2.1 with pthreads not found (Debian: libevent-dev): $LIBEVENT_PKG_ERRORS])])
  PKG_CHECK_MODULES([PROTOBUF_C], [libprotobuf-c >= 1.3], [],
    [AC_MSG_ERROR([protobuf-c >= 1.3 not found (Debian: libprotobuf-c-dev): $PROTOBUF_C_PKG_ERRORS])])
  PKG_CHECK_MODULES([CRYPTO], [libcrypto >= 1.1.1], [],
    [AC_MSG_ERROR([OpenSSL libcrypto >= 1.1.1 not found (Debian: libssl-dev): $CRYPTO_PKG_ERRORS])])
  AC_PATH_PROG([PROTOC_C], [protoc-c], [])
  AS_IF([test -z "$PROTOC_C"], [AC_MSG_ERROR([protoc-c not found (Debian: protobuf-c-compiler)])])
  PKG_CHECK_MODULES([CMOCKA], [cmocka >= 1.1],
    [have_cmocka=yes; ftmpi_cmocka_summary="yes (`$PKG_CONFIG --modversion cmocka`)"],
    [have_cmocka=no; ftmpi_cmocka_summary="no: unit tests skip (Debian: libcmocka-dev)"])
  AM_CONDITIONAL([HAVE_CMOCKA], [test "x$have_cmocka" = xyes])
])
