! shim_coll_f.f90 - an unmodified Fortran MPI program (`use mpi`, no
! libftmpi call) for tests/shim/test_shim_fortran.sh: the collectives the
! drop-in protects besides MPI_ALLREDUCE, from Fortran, on MPI_COMM_WORLD
! and on a duplicate of it.  Per iteration: an MPI_BCAST from a root that
! moves, an MPI_REDUCE (MPI_SUM of doubles, the root's send buffer
! MPI_IN_PLACE on odd iterations), an MPI_ALLGATHER (MPI_IN_PLACE on odd
! iterations) and an MPI_BARRIER; SHIM_P_ITERS (default 100) iterations
! with SHIM_P_SLEEP_MS (default 2) of sleep.  SHIM_P_DIE=R:I: world rank R
! SIGKILLs itself before iteration I.  Prints "coll_f started" (rank 0)
! and "coll_f rank=R iters=N bits=HEX" at the end: the bits of a sum of
! every result, for a bitwise comparison.
program shim_coll_f
  use mpi
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
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
  integer, parameter :: n = 16
  double precision :: a(n), r(n), g(64), acc
  integer :: ierr, rank, nproc, it, i, iters, nap, rc, root, die_rank, die_at, comm, dup
  character(len=64) :: v

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nproc, ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  iters = env_int('SHIM_P_ITERS', 100)
  nap = env_int('SHIM_P_SLEEP_MS', 2)
  die_rank = -1; die_at = -1
  call get_environment_variable('SHIM_P_DIE', v)
  if (len_trim(v) > 0) call pair(v, die_rank, die_at)
  if (rank == 0) then
    print '(a)', 'coll_f started'
    flush(6)
  end if
  acc = 0
  do it = 0, iters - 1
    if (rank == die_rank .and. it == die_at) rc = c_raise(9_c_int)
    comm = MPI_COMM_WORLD
    if (mod(it, 3) == 2) comm = dup
    root = mod(it, nproc)
    do i = 1, n
      a(i) = 1.0d0 / (rank + i + it) + 1.0d-3 * rank
    end do
    call MPI_BCAST(a, n, MPI_DOUBLE_PRECISION, root, comm, ierr)
    do i = 1, n
      a(i) = a(i) * (1.0d0 + 0.1d0 * rank) + 1.0d0 / 3.0d0
    end do
    if (mod(it, 2) == 1 .and. rank == root) then
      r = a
      call MPI_REDUCE(MPI_IN_PLACE, r, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, comm, ierr)
    else
      r = 0
      call MPI_REDUCE(a, r, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, comm, ierr)
    end if
    if (rank == root) acc = acc + sum(r)
    g = 0
    if (mod(it, 2) == 1) then
      g(rank + 1) = a(1) + rank
      call MPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, 1, MPI_DOUBLE_PRECISION, comm, ierr)
    else
      call MPI_ALLGATHER(a(2) + rank, 1, MPI_DOUBLE_PRECISION, g, 1, MPI_DOUBLE_PRECISION, comm, ierr)
    end if
    acc = acc + sum(g(1:nproc)) * 1.0d-2
    call MPI_BARRIER(comm, ierr)
    rc = c_usleep(int(nap * 1000, c_int))
  end do
  print '(a,i0,a,i0,a,z16.16)', 'coll_f rank=', rank, ' iters=', iters, ' bits=', &
    transfer(acc, 0_int64)
  call MPI_COMM_FREE(dup, ierr)
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

end program shim_coll_f
