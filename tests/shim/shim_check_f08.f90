! shim_check_f08.f90 - an unmodified Fortran program (use mpi_f08) for the
! drop-in's tests: MPI_Allreduce of double precision and integer, in place
! and with separate buffers, with and without ierror; prints "fortran ok N"
! on rank 0, stops 1 on a wrong result.
program shim_check_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 1001
  integer :: ierr, rank, nprocs, i, ncalls
  double precision :: a(n), b(n)
  integer :: ia(n), ib(n)
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  ncalls = 0
  do i = 1, n
    a(i) = dble((rank + 1) * i)
    ia(i) = (rank + 1) * i
  end do
  call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  ncalls = ncalls + 1
  call MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  ncalls = ncalls + 1
  call MPI_Allreduce(ia, ib, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  ncalls = ncalls + 1
  call MPI_Allreduce(MPI_IN_PLACE, ia, n, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD)
  ncalls = ncalls + 1
  do i = 1, n
    if (a(i) /= b(i) .or. a(i) /= dble(i * nprocs * (nprocs + 1) / 2) .or. &
        ib(i) /= nprocs * i .or. ia(i) /= i) then
      print *, 'fortran mpi_f08: wrong result at', i, a(i), b(i), ib(i), ia(i)
      stop 1
    end if
  end do
  if (rank == 0) print '(a,i0)', 'fortran ok ', ncalls
  call MPI_Finalize()
end program shim_check_f08
