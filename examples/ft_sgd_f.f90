! ft_sgd_f.f90 - a small Fortran user of libftmpi (module ftmpi_f): the
! step protocol on a double precision array.  The gradient of a step is a
! deterministic function of (step, group rank), summed in the group and
! averaged across the replica groups, so every rank holds the same w after
! every committed step.  Arguments: [steps] [sleep-ms] (default 100 0).
! Output like ft_sgd_cpp: "initial loss", "step N loss" every 10 steps,
! and "final replica=ID rank=R step=S checksum=0x..." on every rank.
program ft_sgd_f
    use, intrinsic :: iso_c_binding
    use ftmpi_f
    implicit none
    integer, parameter :: n = 256
    real(c_double), target, allocatable :: w(:), grad(:)
    integer(c_int64_t) :: steps, s
    integer(c_int) :: rc, rc2, committed, rank
    integer :: i, failures, sleep_ms, nlen
    logical :: killed
    character(len=32) :: arg
    character(kind=c_char, len=64) :: id

    steps = 100
    sleep_ms = 0
    if (command_argument_count() >= 1) then
        call get_command_argument(1, arg)
        read (arg, *) steps
    end if
    if (command_argument_count() >= 2) then
        call get_command_argument(2, arg)
        read (arg, *) sleep_ms
    end if

    rc = ftmpi_f_init()
    if (rc /= FT_SUCCESS) then
        write (0, '(a,i0)') 'ft_sgd_f: FT_Init failed: ', rc
        stop 2
    end if
    rank = ftmpi_f_group_rank()
    id = ''
    rc = ftmpi_replica_id(id, int(len(id), c_size_t))
    nlen = index(id, c_null_char) - 1
    if (nlen < 0) nlen = len_trim(id)

    allocate (w(n), grad(n))
    w = 0.0d0
    rc = ft_state_register('w'//c_null_char, c_loc(w), int(8 * n, c_size_t))
    if (rank == 0) write (*, '(a,f10.6,a,a)') 'initial loss ', loss(w), ' replica ', id(1:nlen)

    failures = 0
    killed = .false.
    do while (ft_step() < steps .and. failures < 1000)
        rc = ft_quorum(0)
        if (rc == FT_ERR_KILLED) then
            write (*, '(a)') 'the lighthouse killed this group: leaving'
            killed = .true.
            exit
        end if
        if (rc /= FT_SUCCESS) then
            failures = failures + 1
            cycle
        end if
        s = ft_step()
        do i = 1, n
            grad(i) = (w(i) - target(i)) * (1.0d0 + 0.1d0 * cos(real(s + rank, c_double)))
        end do
        rc = ftmpi_f_group_allreduce(c_loc(grad), int(n, c_int), FTF_DOUBLE, FTF_SUM)
        if (rc == FT_SUCCESS) rc = ftmpi_f_allreduce(c_loc(grad), int(n, c_int), FTF_DOUBLE, FTF_AVG)
        rc2 = ft_commit(committed)
        if (rc /= FT_SUCCESS .or. rc2 /= FT_SUCCESS .or. committed == 0) then
            failures = failures + 1
            cycle
        end if
        w = w - 0.05d0 * grad
        if (rank == 0 .and. mod(ft_step(), 10_c_int64_t) == 0) &
            write (*, '(a,i0,a,f10.6)') 'step ', ft_step(), ' loss ', loss(w)
        if (sleep_ms > 0) call sleep_ms_(sleep_ms)
    end do

    call ftmpi_f_print_final(c_loc(w), int(8 * n, c_size_t))
    s = ft_step()
    rc = ftmpi_f_finalize()
    if (killed) stop 5
    if (s < steps) stop 1

contains

    pure real(c_double) function target(i)
        integer, intent(in) :: i
        target = sin(0.01d0 * real(i - 1, c_double))
    end function

    real(c_double) function loss(v)
        real(c_double), intent(in) :: v(:)
        integer :: k
        loss = 0
        do k = 1, size(v)
            loss = loss + (v(k) - target(k))**2
        end do
        loss = loss / size(v)
    end function

    subroutine sleep_ms_(ms)
        integer, intent(in) :: ms
        integer(c_int64_t) :: t0, t, rate
        call system_clock(t0, rate)
        do
            call system_clock(t)
            if ((t - t0) * 1000 >= ms * rate) exit
        end do
    end subroutine
end program ft_sgd_f
