! shim_errh_f.f90 - shim_errh.c in Fortran (`use mpi`) for test_shim_errh:
! an error handler of the program's own (MPI_COMM_CREATE_ERRHANDLER,
! MPI_COMM_SET_ERRHANDLER on MPI_COMM_WORLD), MPI_ALLREDUCE of ones every
! 10 ms, 300 times; world rank 2 SIGKILLs itself before call 100.  Prints
! after MPI_FINALIZE (not flushed) "errh_f rank=R handler=H comm=ok|bad errors=E class=STRING".
module errh_state
  implicit none
  integer :: handled = 0, comm_ok = 1
  character(len=256) :: class_text = 'none'
end module errh_state

subroutine handler(comm, code)
  use mpi
  use errh_state
  implicit none
  integer :: comm, code, cls, slen, ierr
  handled = handled + 1
  if (comm /= MPI_COMM_WORLD) comm_ok = 0
  call MPI_ERROR_CLASS(code, cls, ierr)
  call MPI_ERROR_STRING(code, class_text, slen, ierr)
  if (cls == MPI_ERR_OTHER .or. cls <= MPI_SUCCESS) class_text = ''
end subroutine handler

program errh_f
  use mpi
  use errh_state
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
  external :: handler
  integer :: ierr, rank, eh, i, one, total, errors, rc
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_CREATE_ERRHANDLER(handler, eh, ierr)
  call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, eh, ierr)
  if (rank == 0) print '(a)', 'errh_f started'
  flush(6)
  errors = 0
  do i = 0, 299
    if (rank == 2 .and. i == 100) rc = c_raise(9_c_int)
    one = 1
    call MPI_ALLREDUCE(one, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) errors = errors + 1
    rc = c_usleep(10000_c_int)
  end do
  call MPI_FINALIZE(ierr)
  ! after MPI_FINALIZE, not flushed: the drop-in's exit must flush it
  print '(a,i0,a,i0,a,a,a,i0,a,a)', 'errh_f rank=', rank, ' handler=', handled, ' comm=', trim(&
    merge('ok ', 'bad', comm_ok == 1)), ' errors=', errors, ' class=', trim(class_text)
end program errh_f
