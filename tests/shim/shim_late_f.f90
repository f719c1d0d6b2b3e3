! shim_late_f.f90 - for test_shim_hot: an unmodified Fortran program (`use
! mpi`) that sums ones over the world every 5 ms, 300 times, under the
! default error handler (MPI_ERRORS_ARE_FATAL: the failure mode auto is
! abort, the drop-in's hot path runs the calls) and sets MPI_ERRORS_RETURN
! with MPI_COMM_SET_ERRHANDLER before call 20; world rank 2 SIGKILLs itself
! before call 100.  Each survivor prints "late_f rank=R errors=E" (E = 1:
! the call returned the error, as under return; the drop-in must see the
! handler change made from Fortran, which reaches PMPI_ past a C wrapper).
! Built with -cpp -DSHIM_LATE_MPI1 the handler is set with MPI-1's
! MPI_ERRHANDLER_SET (removed in MPI-3.0, still in Open MPI 4.1).
program late_f
  use mpi
  use iso_c_binding
  implicit none
  interface
    integer(c_int) function c_raise(sig) bind(C, name='raise')
      import :: c_int
      integer(c_int), value :: sig
    end function c_raise
    integer(c_int) function c_usleep(us) bind(C, name='usleep')
      import :: c_int
      integer(c_int), value :: us
    end function c_usleep
  end interface
  integer :: ierr, rank, i, one, total, errors, rc
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  errors = 0
  do i = 0, 299
#ifdef SHIM_LATE_MPI1
    if (i == 20) call MPI_ERRHANDLER_SET(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
#else
    if (i == 20) call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
#endif
    if (rank == 2 .and. i == 100) rc = c_raise(9_c_int)
    one = 1
    call MPI_ALLREDUCE(one, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) errors = errors + 1
    rc = c_usleep(5000_c_int)
  end do
  print '(a,i0,a,i0)', 'late_f rank=', rank, ' errors=', errors
  flush(6)
  call MPI_FINALIZE(ierr)
end program late_f
