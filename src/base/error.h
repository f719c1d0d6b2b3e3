/* error.h - internal helpers of the error enum (src/ftmpi_errors.h). */
#ifndef FTI_ERROR_H
#define FTI_ERROR_H

/* The enum name of an FT_Error value ("FT_ERR_PROC_FAILED"), for logs and
 * event logs; "FT_ERR_UNKNOWN" for a value outside the enum.  Static
 * storage, any thread. */
const char *fti_error_name(int code);

#endif
