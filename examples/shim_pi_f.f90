! shim_pi_f.f90 - the Monte-Carlo estimator of pi in Fortran with `use mpi`
! (no FT_ call; see shim_pi.c): every rank throws points into the unit
! square, hits and throws are summed with MPI_ALLREDUCE on MPI_COMM_WORLD
! after each batch.  Under the drop-in (LD_PRELOAD=libftmpi_pmpi.so) the
! shim sees these calls through its Fortran entry points.
!
!   mpifort -o shim_pi_f shim_pi_f.f90
!   mpirun --enable-recovery -np 4 -x LD_PRELOAD=libftmpi_pmpi.so ./shim_pi_f
!
! Prints "pi_f rank=R batches=B throws=T estimate=E ok|WRONG" per rank and
! stops with code 1 when the estimate is off by more than 6 standard
! deviations.
program shim_pi_f
  use mpi
  implicit none
  integer, parameter :: dp = kind(1.0d0), i8 = selected_int_kind(18)
  integer, parameter :: batches = 100, samples = 50000
  real(dp), parameter :: pi_ref = 3.14159265358979323846_dp
  integer :: ierr, rank, nranks, b, i
  integer(i8) :: seed
  real(dp) :: mine(2), hits, throws, x, y, est, sigma

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  hits = 0
  throws = 0
  do b = 0, batches - 1
    ! Park-Miller, a stream per (rank, batch): the same with and without the shim
    seed = 1_i8 + mod(int(rank, i8) * 1000003_i8 + int(b, i8) * 7919_i8, 2147483646_i8)
    mine = 0
    do i = 1, samples
      seed = mod(16807_i8 * seed, 2147483647_i8)
      x = real(seed, dp) / 2147483647.0_dp
      seed = mod(16807_i8 * seed, 2147483647_i8)
      y = real(seed, dp) / 2147483647.0_dp
      if (x * x + y * y <= 1.0_dp) mine(1) = mine(1) + 1
    end do
    mine(2) = samples
    call MPI_ALLREDUCE(MPI_IN_PLACE, mine, 2, MPI_DOUBLE_PRECISION, MPI_SUM, &
                       MPI_COMM_WORLD, ierr)
    hits = hits + mine(1)
    throws = throws + mine(2)
  end do
  est = 4 * hits / throws
  sigma = 4 * sqrt(pi_ref / 4 * (1 - pi_ref / 4) / throws)
  if (abs(est - pi_ref) <= 6 * sigma) then
    write (*, '(a,i0,a,i0,a,i0,a,f12.10,a)') 'pi_f rank=', rank, ' batches=', batches, &
      ' throws=', int(throws, i8), ' estimate=', est, ' ok'
  else
    write (*, '(a,i0,a,i0,a,i0,a,f12.10,a)') 'pi_f rank=', rank, ' batches=', batches, &
      ' throws=', int(throws, i8), ' estimate=', est, ' WRONG'
  end if
  call MPI_FINALIZE(ierr)
  if (abs(est - pi_ref) > 6 * sigma) stop 1
end program shim_pi_f
