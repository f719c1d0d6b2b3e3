! shim_check_mpifh.f90 - an unmodified Fortran program (mpif.h) for the
! drop-in's tests: MPI_ALLREDUCE of double precision and integer, in place
! and with separate buffers; prints "fortran ok N" on rank 0, stops 1 on a
! wrong result.
program shim_check_mpifh
  implicit none
  include 'mpif.h'
  integer, parameter :: n = 1001
  integer :: ierr, rank, nprocs, i, ncalls
  double precision :: a(n), b(n)
  integer :: ia(n), ib(n)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  ncalls = 0
  do i = 1, n
    a(i) = dble((rank + 1) * i)
    ia(i) = (rank + 1) * i
  end do
  call MPI_ALLREDUCE(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  ncalls = ncalls + 1
  call MPI_ALLREDUCE(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  ncalls = ncalls + 1
  call MPI_ALLREDUCE(ia, ib, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  ncalls = ncalls + 1
  call MPI_ALLREDUCE(MPI_IN_PLACE, ia, n, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  ncalls = ncalls + 1
  do i = 1, n
    if (a(i) /= b(i) .or. a(i) /= dble(i * nprocs * (nprocs + 1) / 2) .or. &
        ib(i) /= nprocs * i .or. ia(i) /= i) then
      print *, 'fortran mpif.h: wrong result at', i, a(i), b(i), ib(i), ia(i)
      stop 1
    end if
  end do
  if (rank == 0) print '(a,i0)', 'fortran ok ', ncalls
  call MPI_FINALIZE(ierr)
end program shim_check_mpifh
