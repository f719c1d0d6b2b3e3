/*
 * errh.c - the drop-in's error class for a lost rank and the program's
 * error handlers (see shim.h; DESIGN section 10.5).
 *
 * The class: MPIX_ERR_PROC_FAILED where the MPI defines it (ULFM: Open MPI
 * 5 and MPICH's mpi-ext), so a program written for ULFM reads the class it
 * knows; otherwise a class of its own made with MPI_Add_error_class in
 * MPI_Init (the first dynamic class: 93 under Open MPI 4.1 when the
 * program added none before) and returned as a code of that class (94)
 * whose string is "MPI_ERR_PROC_FAILED: a rank of MPI_COMM_WORLD died
 * (libftmpi_pmpi)" (Open MPI keeps strings per code).  MPI_ERR_OTHER is not used: a
 * program could not tell a lost rank from any other error.
 */
#include "mpi_shim/shim.h"

#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* Open MPI: MPIX_ERR_PROC_FAILED where it has ULFM */
#endif
#endif

#define SHIM_ERR_TEXT "MPI_ERR_PROC_FAILED: a rank of MPI_COMM_WORLD died (libftmpi_pmpi)"

static int err_code = MPI_ERR_OTHER;

int fti_shim_err_code(void)
{
    static int made;
    if (made)
        return err_code;
    made = 1;
#ifdef MPIX_ERR_PROC_FAILED
    err_code = MPIX_ERR_PROC_FAILED;
#else
    /* Open MPI keeps strings per code: a code in the new class carries it
     * (the class's own string is set too where the MPI keeps one) */
    int c = MPI_ERR_OTHER, code = MPI_ERR_OTHER;
    if (PMPI_Add_error_class(&c) == MPI_SUCCESS &&
        PMPI_Add_error_code(c, &code) == MPI_SUCCESS) {
        err_code = code;
        (void)PMPI_Add_error_string(code, SHIM_ERR_TEXT);
        (void)PMPI_Add_error_string(c, SHIM_ERR_TEXT);
    }
#endif
    return err_code;
}

int fti_shim_raise(MPI_Comm comm, int rc)
{
    if (rc == MPI_SUCCESS || rc != err_code || comm == MPI_COMM_NULL)
        return rc;
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (PMPI_Comm_get_errhandler(comm, &eh) != MPI_SUCCESS)
        return rc;
    /* the program's own handler (C or Fortran: MPI calls it in its
     * language) and MPI_ERRORS_RETURN; never MPI_ERRORS_ARE_FATAL: a
     * program under return or continue set explicitly gets the code */
    bool call = eh != MPI_ERRORS_ARE_FATAL && eh != MPI_ERRORS_RETURN;
    PMPI_Errhandler_free(&eh);
    if (call)
        (void)PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}
