/*
 * ucx_lib.h - UCX as the ucx backend's files call it (private to
 * src/comm/ucx*.c): the libucp functions they use, resolved from the
 * library dlopen'ed once (see ucx.h for why it is not linked), and the
 * process-wide UCP context.  Only API present in UCX 1.13.
 * Threads: fti_ucx_context may run on any thread (once); the table is
 * read only after it.
 */
#ifndef FTI_UCX_LIB_H
#define FTI_UCX_LIB_H

#include <ucp/api/ucp.h>

/* The functions of libucp (and libucs) used, by their UCX names less the
 * "ucp_" prefix. */
struct fti_ucx_fns {
    __typeof__(&ucp_config_read) config_read;
    __typeof__(&ucp_config_release) config_release;
    __typeof__(&ucp_config_modify) config_modify;
    __typeof__(&ucp_init_version) init_version;
    __typeof__(&ucp_get_version_string) get_version_string;
    __typeof__(&ucp_context_print_info) context_print_info;
    __typeof__(&ucp_worker_create) worker_create;
    __typeof__(&ucp_worker_destroy) worker_destroy;
    __typeof__(&ucp_worker_get_efd) worker_get_efd;
    __typeof__(&ucp_worker_arm) worker_arm;
    __typeof__(&ucp_worker_progress) worker_progress;
    __typeof__(&ucp_worker_query) worker_query;
    __typeof__(&ucp_worker_release_address) worker_release_address;
    __typeof__(&ucp_ep_create) ep_create;
    __typeof__(&ucp_ep_close_nbx) ep_close_nbx;
    __typeof__(&ucp_tag_send_nbx) tag_send_nbx;
    __typeof__(&ucp_tag_recv_nbx) tag_recv_nbx;
    __typeof__(&ucp_request_free) request_free;
    __typeof__(&ucp_request_cancel) request_cancel;
    __typeof__(&ucp_request_check_status) request_check_status;
    __typeof__(&ucs_status_string) status_string;
    /* the heal's one-sided reads (comm/ucx_heal.c) */
    __typeof__(&ucp_mem_map) mem_map;
    __typeof__(&ucp_mem_unmap) mem_unmap;
    __typeof__(&ucp_rkey_pack) rkey_pack;
    __typeof__(&ucp_rkey_buffer_release) rkey_buffer_release;
    __typeof__(&ucp_ep_rkey_unpack) ep_rkey_unpack;
    __typeof__(&ucp_rkey_destroy) rkey_destroy;
    __typeof__(&ucp_get_nbx) get_nbx;
    /* the lanes an endpoint took, logged once (fti_ucx_ep_lanes) */
    __typeof__(&ucp_ep_print_info) ep_print_info;
};
extern struct fti_ucx_fns fti_ucx;

/* Loads libucp and makes the process-wide context (shared by workers of
 * several threads; features TAG,
 * RMA and WAKEUP; workers in UCS_THREAD_MODE_SERIALIZED) the first time; the
 * context afterwards.  With timeout_ms > 0 (the first call's counts) and
 * UCX_KEEPALIVE_INTERVAL not set by the user: UCX's keepalive every
 * quarter of it (at least 50 ms), so that a dead peer is found within it
 * on a transport that sees no closed connection (shared memory).  Logs its failure once (the first call) and returns
 * FT_ERR_UNSUPPORTED (no libucp) or FT_ERR_SYSTEM every time.  The
 * context lives until the process ends. */
int fti_ucx_context(int timeout_ms, ucp_context_h *ctx_p);

/* "tl/dev (roles), ..." of the lanes ep took (ucp_ep_print_info's lane
 * lines: "tcp/lo.0 (am am_bw#0 keepalive wireup), cma/memory.0 (rma_bw#0)")
 * into buf; "" where UCX printed none. */
void fti_ucx_ep_lanes(ucp_ep_h ep, char *buf, size_t len);

#endif
