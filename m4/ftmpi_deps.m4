# FTMPI_CHECK_DEPS: hwloc, libevent (+ pthreads), protobuf-c and protoc-c,
# OpenSSL's libcrypto (the control plane's HMAC-SHA256 challenge-response),
# xxHash (the heal checksum, src/heal/serve.c),
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
  PKG_CHECK_MODULES([XXHASH], [libxxhash >= 0.8], [],
    [AC_MSG_ERROR([xxHash >= 0.8 not found (Debian: libxxhash-dev): $XXHASH_PKG_ERRORS])])
  AC_PATH_PROG([PROTOC_C], [protoc-c], [])
  AS_IF([test -z "$PROTOC_C"], [AC_MSG_ERROR([protoc-c not found (Debian: protobuf-c-compiler)])])
  PKG_CHECK_MODULES([CMOCKA], [cmocka >= 1.1],
    [have_cmocka=yes; ftmpi_cmocka_summary="yes (`$PKG_CONFIG --modversion cmocka`)"],
    [have_cmocka=no; ftmpi_cmocka_summary="no: unit tests skip (Debian: libcmocka-dev)"])
  AM_CONDITIONAL([HAVE_CMOCKA], [test "x$have_cmocka" = xyes])
  FTMPI_CHECK_SANITIZERS
])

# FTMPI_CHECK_SANITIZERS: --enable-sanitizers builds everything (library,
# programs, tests) with AddressSanitizer and UndefinedBehaviorSanitizer;
# any UB report aborts the program, so `make check` fails on it.
# --enable-sanitizers=thread builds with ThreadSanitizer instead, for the
# threaded parts' unit tests (./quickstart.sh check-tsan runs those).
AC_DEFUN([FTMPI_CHECK_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers@<:@=address|thread@:>@],
      [build with -fsanitize=address,undefined (yes, address) or -fsanitize=thread (make check then fails on memory errors, UB or data races)])],
    [], [enable_sanitizers=no])
  AS_CASE([$enable_sanitizers],
    [no], [ftmpi_san=""],
    [yes|address], [ftmpi_san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"],
    [thread], [ftmpi_san="-fsanitize=thread -fno-omit-frame-pointer"],
    [AC_MSG_ERROR([--enable-sanitizers=$enable_sanitizers: say address or thread])])
  AS_IF([test -n "$ftmpi_san"], [
    CFLAGS="$CFLAGS $ftmpi_san"
    LDFLAGS="$LDFLAGS $ftmpi_san"
    AC_MSG_CHECKING([whether $CC can build with $ftmpi_san])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])], [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no]); AC_MSG_ERROR([--enable-sanitizers: $CC cannot build with $ftmpi_san])])
  ])
])
