! shim_halo_f.f90 - an unmodified Fortran MPI program (`use mpi`, no
! libftmpi call) for tests/shim/test_shim_nohang.sh: a 1-D ring halo
! exchange (MPI_SENDRECV, and MPI_ISEND/MPI_IRECV + MPI_WAITALL on odd
! iterations) then an MPI_ALLREDUCE of the residual and an MPI_BARRIER,
! SHIM_P_ITERS (default 200) times with SHIM_P_SLEEP_MS (default 5) of
! sleep.  SHIM_P_DIE=R:I / SHIM_P_STOP=R:I: world rank R SIGKILLs /
! SIGSTOPs itself before iteration I.  Prints "patterns started" (rank 0)
! and "patterns halo_f rank=R iters=N value=V" at the end.
program shim_halo_f
  use mpi
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    function c_raise(sig) bind(C, name="raise")
      import :: c_int
      integer(c_int), value :: sig
      integer(c_int) :: c_raise
    end function
    function c_usleep(us) bind(C, name="usleep")
      import :: c_int
      integer(c_int), value :: us
      integer(c_int) :: c_usleep
    end function
  end interface
  integer, parameter :: n = 64
  double precision :: u(0:n+1), nu, res, total
  integer :: ierr, rank, nproc, left, right, it, i, iters, nap, rc
  integer :: die_rank, die_at, stop_rank, stop_at
  integer :: reqs(4)
  character(len=64) :: v

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nproc, ierr)
  iters = env_int('SHIM_P_ITERS', 200)
  nap = env_int('SHIM_P_SLEEP_MS', 5)
  die_rank = -1; die_at = -1; stop_rank = -1; stop_at = -1
  call get_environment_variable('SHIM_P_DIE', v)
  if (len_trim(v) > 0) call pair(v, die_rank, die_at)
  call get_environment_variable('SHIM_P_STOP', v)
  if (len_trim(v) > 0) call pair(v, stop_rank, stop_at)
  if (rank == 0) then
    print '(a)', 'patterns started'
    flush(6)
  end if
  do i = 0, n + 1
    u(i) = rank + i * 0.001d0
  end do
  left = mod(rank + nproc - 1, nproc)
  right = mod(rank + 1, nproc)
  total = 0
  do it = 0, iters - 1
    if (rank == die_rank .and. it == die_at) rc = c_raise(9_c_int)
    if (rank == stop_rank .and. it == stop_at) rc = c_raise(19_c_int)
    if (mod(it, 2) == 0) then
      call MPI_SENDRECV(u(n), 1, MPI_DOUBLE_PRECISION, right, 1, u(0), 1, MPI_DOUBLE_PRECISION, &
                        left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_SENDRECV(u(1), 1, MPI_DOUBLE_PRECISION, left, 2, u(n+1), 1, &
                        MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_IRECV(u(0), 1, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, reqs(1), ierr)
      call MPI_IRECV(u(n+1), 1, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, reqs(2), ierr)
      call MPI_ISEND(u(n), 1, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, reqs(3), ierr)
      call MPI_ISEND(u(1), 1, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, reqs(4), ierr)
      call MPI_WAITALL(4, reqs, MPI_STATUSES_IGNORE, ierr)
    end if
    res = 0
    do i = 1, n
      nu = 0.5d0 * u(i) + 0.25d0 * (u(i-1) + u(i+1))
      res = res + (nu - u(i))**2
      u(i) = nu
    end do
    call MPI_ALLREDUCE(res, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    rc = c_usleep(int(nap * 1000, c_int))
  end do
  print '(a,i0,a,i0,a,es25.17)', 'patterns halo_f rank=', rank, ' iters=', iters, ' value=', total
  call MPI_FINALIZE(ierr)

contains

  integer function env_int(name, def)
    character(len=*), intent(in) :: name
    integer, intent(in) :: def
    character(len=32) :: s
    integer :: st
    call get_environment_variable(name, s, status=st)
    env_int = def
    if (st == 0) read(s, *) env_int
  end function

  subroutine pair(s, a, b)
    character(len=*), intent(in) :: s
    integer, intent(out) :: a, b
    integer :: c
    c = index(s, ':')
    read(s(1:c-1), *) a
    read(s(c+1:), *) b
  end subroutine

end program shim_halo_f
