! ftmpi_f.f90 - Fortran interfaces to libftmpi (ISO_C_BINDING), for
! examples/ft_sgd_f.f90 and any Fortran program to copy.
!
! FT_Quorum, FT_Commit, FT_Step, FT_Heal_count, FT_State_register and
! FT_Finalize are the C API itself, bound with BIND(C).  FT_Allreduce takes MPI_Datatype and
! MPI_Op handles whose C form differs between MPI libraries, so it is
! reached through examples/ftmpi_f_shim.c with the codes FTF_* below
! (ftmpi_f_allreduce: in place, across the replica groups); the shim also
! gives MPI_Init + FT_Init (ftmpi_f_init), FT_Finalize + MPI_Finalize
! (ftmpi_f_finalize), an in-group MPI_Allreduce, the group rank and the
! final line of the examples (ftmpi_f_print_final).  No MPI
! Fortran module is needed: link with the C libmpi and libftmpi.
module ftmpi_f
    use, intrinsic :: iso_c_binding
    implicit none
    private :: c_int, c_int64_t, c_size_t, c_ptr, c_char

    integer(c_int), parameter :: FT_SUCCESS = 0, FT_ERR_KILLED = -28
    integer(c_int), parameter :: FTF_REAL = 1, FTF_DOUBLE = 2
    integer(c_int), parameter :: FTF_SUM = 1, FTF_AVG = 2, FTF_MAX = 3, FTF_MIN = 4

    interface
        integer(c_int) function ftmpi_f_init() bind(C, name="ftmpi_f_init")
            import :: c_int
        end function
        integer(c_int) function ftmpi_f_finalize() bind(C, name="ftmpi_f_finalize")
            import :: c_int
        end function
        integer(c_int) function ft_quorum(flags) bind(C, name="FT_Quorum")
            import :: c_int
            integer(c_int), value :: flags
        end function
        integer(c_int) function ft_commit(committed) bind(C, name="FT_Commit")
            import :: c_int
            integer(c_int), intent(out) :: committed
        end function
        integer(c_int64_t) function ft_step() bind(C, name="FT_Step")
            import :: c_int64_t
        end function
        ! count: written only on FT_SUCCESS
        integer(c_int) function ft_heal_count(count) bind(C, name="FT_Heal_count")
            import :: c_int, c_int64_t
            integer(c_int64_t), intent(inout) :: count
        end function
        ! name: a C string (end it with c_null_char); buf: c_loc of the state
        integer(c_int) function ft_state_register(name, buf, bytes) &
                bind(C, name="FT_State_register")
            import :: c_int, c_ptr, c_size_t, c_char
            character(kind=c_char), dimension(*), intent(in) :: name
            type(c_ptr), value :: buf
            integer(c_size_t), value :: bytes
        end function
        integer(c_int) function ftmpi_f_allreduce(buf, count, type_code, op_code) &
                bind(C, name="ftmpi_f_allreduce")
            import :: c_int, c_ptr
            type(c_ptr), value :: buf
            integer(c_int), value :: count, type_code, op_code
        end function
        integer(c_int) function ftmpi_f_group_allreduce(buf, count, type_code, op_code) &
                bind(C, name="ftmpi_f_group_allreduce")
            import :: c_int, c_ptr
            type(c_ptr), value :: buf
            integer(c_int), value :: count, type_code, op_code
        end function
        integer(c_int) function ftmpi_f_group_rank() bind(C, name="ftmpi_f_group_rank")
            import :: c_int
        end function
        ! prints "final replica=ID rank=R step=S checksum=0x<FNV-1a of buf>"
        subroutine ftmpi_f_print_final(buf, bytes) bind(C, name="ftmpi_f_print_final")
            import :: c_ptr, c_size_t
            type(c_ptr), value :: buf
            integer(c_size_t), value :: bytes
        end subroutine
        integer(c_int) function ftmpi_replica_id(buf, len) bind(C, name="ftmpi_replica_id")
            import :: c_int, c_size_t, c_char
            character(kind=c_char), dimension(*), intent(out) :: buf
            integer(c_size_t), value :: len
        end function
    end interface
end module ftmpi_f
