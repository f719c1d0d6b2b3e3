! shim_stencil_f.f90 - examples/shim_stencil.c in Fortran (`use mpi`, no
! libftmpi call): a 2-D Jacobi iteration on a 96 x 96 grid split into
! blocks of columns (Fortran's contiguous direction), a halo exchange with
! MPI_SENDRECV, an MPI_ALLREDUCE of the residual every iteration, and a
! restart file every K iterations (DIR/stencil_f.RANK.SLOT, two slots,
! written to a temporary file and renamed).  At start the ranks agree on
! the newest iteration all of them hold (MPI_ALLREDUCE of MIN) and resume
! from it, so a run killed and restarted under
!     ftmpi-run --replica-id stencil --max-restarts 3 -- \
!         mpirun -np 4 -x LD_PRELOAD=libftmpi_pmpi.so ./shim_stencil_f 400 20 ckpt
! ends with the same bits as one that was not.  Rank 0 prints
! "stencil resume it=I" and "stencil done iters=N residual=R sum=S".
! Usage: shim_stencil_f [ITERS [K [DIR]]]; SHIM_STENCIL_SLEEP_MS sleeps
! that long each iteration.
program shim_stencil_f
  use mpi
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    function c_rename(a, b) bind(C, name="rename")
      import :: c_int, c_char
      character(kind=c_char), dimension(*) :: a, b
      integer(c_int) :: c_rename
    end function
    function c_usleep(us) bind(C, name="usleep")
      import :: c_int
      integer(c_int), value :: us
      integer(c_int) :: c_usleep
    end function
  end interface
  integer, parameter :: nx = 96, ny = 96, magic = 1398031694
  double precision, allocatable :: u(:,:), v(:,:)
  double precision :: residual, local, total
  integer :: ierr, rank, nproc, cols, first, left, right, iters, every, nap
  integer :: it, i, j, g, s0, s1, mine, start, rc
  character(len=1024) :: dir, arg

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nproc, ierr)
  iters = 400; every = 20; dir = '.'
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg); read(arg, *) iters
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg); read(arg, *) every
  end if
  if (command_argument_count() >= 3) call get_command_argument(3, dir)
  every = max(every, 1)
  call get_environment_variable('SHIM_STENCIL_SLEEP_MS', arg, status=rc)
  nap = 0
  if (rc == 0) read(arg, *) nap
  ! columns of this rank (1-based global columns first .. first+cols-1)
  cols = nx / nproc
  if (rank < mod(nx, nproc)) cols = cols + 1
  first = rank * (nx / nproc) + min(rank, mod(nx, nproc)) + 1
  left = MPI_PROC_NULL; right = MPI_PROC_NULL
  if (rank > 0) left = rank - 1
  if (rank < nproc - 1) right = rank + 1
  allocate(u(ny, 0:cols+1), v(ny, 0:cols+1))
  u = 0; residual = 0
  u(1, :) = 1.0d0  ! the top edge
  s0 = slot(0, .false.); s1 = slot(1, .false.)
  mine = max(s0, s1)
  call MPI_ALLREDUCE(mine, start, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  if (start >= 0) then
    if (start == s0) then
      rc = slot(0, .true.)
    else
      rc = slot(1, .true.)
    end if
    if (rc /= start) then
      print '(a,i0)', 'stencil: cannot read the restart file of rank ', rank
      call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
    end if
  end if
  start = max(start, 0)
  if (rank == 0) then
    print '(a,i0)', 'stencil resume it=', start
    flush(6)
  end if
  v = u
  do it = start, iters - 1
    call MPI_SENDRECV(u(1, cols), ny, MPI_DOUBLE_PRECISION, right, 1, u(1, 0), ny, &
                      MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_SENDRECV(u(1, 1), ny, MPI_DOUBLE_PRECISION, left, 2, u(1, cols+1), ny, &
                      MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    local = 0
    do j = 1, cols
      g = first + j - 1
      do i = 1, ny
        if (g == 1 .or. g == nx .or. i == 1 .or. i == ny) then
          v(i, j) = u(i, j)
        else
          v(i, j) = 0.25d0 * (u(i-1, j) + u(i+1, j) + u(i, j-1) + u(i, j+1))
          local = local + (v(i, j) - u(i, j))**2
        end if
      end do
    end do
    u(:, 1:cols) = v(:, 1:cols)
    call MPI_ALLREDUCE(local, residual, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (mod(it + 1, every) == 0) call save(it + 1)
    if (nap > 0) rc = c_usleep(int(nap * 1000, c_int))
  end do
  local = sum(u(:, 1:cols))
  call MPI_REDUCE(local, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a,es25.17,a,es25.17)', 'stencil done iters=', iters, &
      ' residual=', residual, ' sum=', total
  call MPI_FINALIZE(ierr)

contains

  function path(s) result(p)
    integer, intent(in) :: s
    character(len=1100) :: p
    write(p, '(a,a,i0,a,i0)') trim(dir), '/stencil_f.', rank, '.', s
  end function

  subroutine save(iter)
    integer, intent(in) :: iter
    integer :: un, st
    character(len=1100) :: p
    p = path(mod(iter / every, 2))
    open(newunit=un, file=trim(p)//'.tmp', access='stream', form='unformatted', &
         status='replace', iostat=st)
    if (st == 0) write(un, iostat=st) magic, iter, ny, cols, residual, u
    if (st == 0) close(un, iostat=st)
    if (st == 0) st = c_rename(trim(p)//'.tmp'//c_null_char, trim(p)//c_null_char)
    if (st /= 0) then
      print '(a,i0)', 'stencil: cannot write the restart file of rank ', rank
      call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
    end if
  end subroutine

  ! the iteration in slot s (-1 if none); with load, u and residual from it
  integer function slot(s, load)
    integer, intent(in) :: s
    logical, intent(in) :: load
    integer :: un, st, h(4)
    double precision :: r
    slot = -1
    open(newunit=un, file=trim(path(s)), access='stream', form='unformatted', status='old', &
         action='read', iostat=st)
    if (st /= 0) return
    read(un, iostat=st) h, r
    if (st == 0 .and. h(1) == magic .and. h(3) == ny .and. h(4) == cols) then
      slot = h(2)
      if (load) then
        read(un, iostat=st) u
        if (st /= 0) slot = -1
        residual = r
      end if
    end if
    close(un)
  end function

end program shim_stencil_f
