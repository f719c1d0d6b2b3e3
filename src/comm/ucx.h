/*
 * ucx.h - the `ucx` data plane (DESIGN section 5): what programs outside
 * the backend may ask of it.  The backend itself is the table entry
 * fti_backend_ucx (comm.h), built only with UCX (configure found it with
 * pkg-config: FTMPI_HAVE_UCX).
 *
 * UCX is loaded when first needed (dlopen of libucp), not linked: loading
 * libucs installs its own handlers for SIGSEGV, SIGBUS, SIGFPE and SIGILL
 * (UCX_ERROR_SIGNALS), which a rank on another backend must not get.
 * Threads: any thread; the process-wide context is made once.
 */
#ifndef FTI_UCX_H
#define FTI_UCX_H

#include <stddef.h>

/* What the loaded UCX is: its version ("1.13.1") into version and the
 * transports its context found, comma-separated without repeats
 * ("self, tcp, sysv, posix, cma"), into tls (each cut to its len).
 * FT_ERR_UNSUPPORTED when the build has no UCX or libucp cannot be loaded
 * (why into version), FT_ERR_SYSTEM when the context cannot be made.
 * Loads UCX and makes the context (fti_ucx_context) if not done yet. */
int fti_ucx_describe(char *version, size_t vlen, char *tls, size_t tlen);

/* Whether this process can run the ucx backend: loads UCX and makes the
 * context (fti_ucx_context, with timeout_ms: FTMPI_TIMEOUT_MS sets UCX's
 * keepalive, as the first slice would) if not done yet.  FT_SUCCESS, or the
 * error of fti_ucx_describe with why into why (cut to wlen). */
int fti_ucx_available(int timeout_ms, char *why, size_t wlen);

#endif
