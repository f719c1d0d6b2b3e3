/*
 * ucx_heal.h - the heal's one-sided transport over UCX (DESIGN section
 * 7.1): a source maps its registered state (ucp_mem_map) and hands out
 * its serving worker's address and the packed remote keys; a healer
 * connects an endpoint (UCP_ERR_HANDLING_MODE_PEER) and reads ranges with
 * ucp_get_nbx.  The signatures are those of fti_heal_rma_t (heal/heal.h),
 * whose table the step fills with them: src/heal does not link UCX.
 * Built only with UCX (FTMPI_HAVE_UCX).
 * Threads: the source's calls on one thread at a time (the rank server's
 * loop thread; release after it is gone), a progress thread of its own
 * serving the worker meanwhile; each healer connection on one thread.
 */
#ifndef FTI_UCX_HEAL_H
#define FTI_UCX_HEAL_H

#include <stddef.h>
#include <stdint.h>

/* Source: maps [bases[i], +lens[i]) (a region of 0 bytes gets an empty
 * key) unless the same regions are mapped already, starts the serving
 * worker and its progress thread the first time; *addr_p, rkeys[i] are
 * valid until the next call or fti_ucx_heal_release.  Logs its failure. */
int fti_ucx_heal_expose(void *const *bases, const size_t *lens, size_t n, const void **addr_p,
                        size_t *alen_p, const void **rkeys, size_t *rklens);
/* Source: unmaps, stops the progress thread, destroys the worker. */
void fti_ucx_heal_release(void);

/* Healer: a worker of its own and an endpoint to the source at addr
 * (peer error handling: a dead source fails the next get). */
int fti_ucx_heal_connect(const void *addr, size_t alen, int64_t deadline_ms, void **conn_p);
/* Healer: ucp_get_nbx of [raddr, +len) under rkey into dst, waited for
 * on the worker's event fd, never past deadline_ms.  FT_ERR_PROC_FAILED
 * (the source's endpoint failed), FT_ERR_TIMEOUT; on either the endpoint
 * is closed (forced) and dst is not written after the call returns. */
int fti_ucx_heal_get(void *conn, const void *rkey, size_t rklen, uint64_t raddr, void *dst,
                     size_t len, int64_t deadline_ms);
void fti_ucx_heal_disconnect(void *conn);

#endif
