# FTMPI_CHECK_CUDA_NCCL: optional CUDA runtime and NCCL.
# --with-cuda[=DIR] / --with-nccl[=DIR]; default: use /usr/local/cuda when it
# holds the headers and libraries, off otherwise.  GPU code must compile
# here even without a GPU; GPU tests skip (exit 77) at run time.
AC_DEFUN([FTMPI_CHECK_CUDA_NCCL], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [CUDA toolkit (default: /usr/local/cuda if present)])],
    [], [with_cuda=check])
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@], [NCCL (default: the CUDA directory if it has nccl.h)])],
    [], [with_nccl=check])
  have_cuda=no; have_nccl=no
  CUDA_CPPFLAGS=; CUDA_LIBS=; NCCL_CPPFLAGS=; NCCL_LIBS=
  ftmpi_cuda_summary="off"; ftmpi_nccl_summary="off"
  AS_CASE([$with_cuda], [yes|check], [cuda_dir=/usr/local/cuda], [no], [cuda_dir=], [cuda_dir=$with_cuda])
  AS_IF([test -n "$cuda_dir"], [
    cuda_libdir=$cuda_dir/lib64
    AS_IF([test -d "$cuda_dir/targets/x86_64-linux/lib"], [cuda_libdir=$cuda_dir/targets/x86_64-linux/lib])
    save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS -I$cuda_dir/include"; LIBS="-L$cuda_libdir -lcudart $LIBS"
    AC_MSG_CHECKING([for CUDA runtime in $cuda_dir])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>]], [[int n; cudaGetDeviceCount(&n);]])],
      [have_cuda=yes; CUDA_CPPFLAGS="-I$cuda_dir/include"; CUDA_LIBS="-L$cuda_libdir -Wl,-rpath,$cuda_libdir -lcudart"
       ftmpi_cuda_summary="yes ($cuda_dir)"],
      [ftmpi_cuda_summary="not found in $cuda_dir"])
    AC_MSG_RESULT([$have_cuda])
    CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS])
  AS_IF([test "x$with_cuda" = xyes && test "x$have_cuda" != xyes], [AC_MSG_ERROR([--with-cuda given but CUDA not found])])
  AS_CASE([$with_nccl], [yes|check], [nccl_dir=$cuda_dir], [no], [nccl_dir=], [nccl_dir=$with_nccl])
  AS_IF([test "x$have_cuda" = xyes && test -n "$nccl_dir"], [
    nccl_libdir=$nccl_dir/lib64
    AS_IF([test -d "$nccl_dir/targets/x86_64-linux/lib"], [nccl_libdir=$nccl_dir/targets/x86_64-linux/lib])
    save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS -I$nccl_dir/include"; LIBS="-L$nccl_libdir -lnccl $CUDA_LIBS $LIBS"
    AC_MSG_CHECKING([for NCCL >= 2.18 in $nccl_dir])
    dnl 2.18: the oldest NCCL the nccl backends run with; the later calls
    dnl (ncclCommShrink, ncclCommRevoke) are looked up at run time
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>
#if !defined(NCCL_VERSION_CODE) || NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "NCCL older than 2.18"
#endif]], [[int v; ncclGetVersion(&v);]])],
      [have_nccl=yes; NCCL_CPPFLAGS="-I$nccl_dir/include"; NCCL_LIBS="-L$nccl_libdir -Wl,-rpath,$nccl_libdir -lnccl"
       ftmpi_nccl_summary="yes ($nccl_dir)"],
      [ftmpi_nccl_summary="not found in $nccl_dir (or older than 2.18)"])
    AC_MSG_RESULT([$have_nccl])
    CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS])
  AS_IF([test "x$with_nccl" != xcheck && test "x$with_nccl" != xno && test "x$have_nccl" != xyes],
    [AC_MSG_ERROR([--with-nccl given but NCCL not found])])
  AS_IF([test "x$have_cuda" = xyes], [AC_DEFINE([FTMPI_HAVE_CUDA], [1], [CUDA runtime available])])
  AS_IF([test "x$have_nccl" = xyes], [AC_DEFINE([FTMPI_HAVE_NCCL], [1], [NCCL available])])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$have_cuda" = xyes])
  AM_CONDITIONAL([HAVE_NCCL], [test "x$have_nccl" = xyes])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LIBS])
  AC_SUBST([NCCL_CPPFLAGS])
  AC_SUBST([NCCL_LIBS])
])
