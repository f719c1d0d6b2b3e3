/*
 * heal/heal.h - the registered state of a rank and live healing (DESIGN
 * section 7): registration, serving (heal/serve.c, through the rank
 * server's handler) and fetching in two phases, stage then install or
 * discard, so that a group heals as a whole or not at all (heal/fetch.c).
 * Errors: FT_ERR_* codes; a failed stage leaves the registered memory
 * untouched.  Test hooks (configure --enable-test-hooks only; heal_int.h):
 * FTMPI_TEST_HEAL_CORRUPT, FTMPI_TEST_HEAL_SERVE_DELAY_MS,
 * FTMPI_TEST_HEAL_GET_DELAY_MS.
 *
 * Threads: fti_heal_register, fti_heal_set_step and the fetching calls
 * run on the application thread; fti_heal_handle on the RPC server's loop
 * thread.  Mirrors (fti_heal_register_copy) are refreshed by one thread at
 * a time under their own mutex; a fetch of a mirror not refreshed for the
 * served step is refused.  A mutex guards the buffer list and the served
 * step; the buffers' contents are read without it (the application does
 * not change them while the step is open), also by the summing thread,
 * which the loop thread starts and joins.
 */
#ifndef FTI_HEAL_H
#define FTI_HEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/rpc.h"
#include "base/sizes.h"

#define FTI_HEAL_MAX_NAME 256
/* Bytes per HEAL_FETCH call: small enough that the healer's checksum of
 * the last chunk (after the transfer) is short, large enough that the
 * round trip between chunks does not show. */
#define FTI_HEAL_CHUNK_BYTES ((size_t)8 << 20)
/* A buffer's checksum is fti_heal_sum chained over pieces of this many
 * bytes (each piece's sum is the seed of the next, 0 for the first; an
 * empty buffer's is fti_heal_sum of nothing with seed 0); part of the wire
 * contract between source and healer.  The libFuzzer build (tests/fuzz)
 * sets it to a few bytes, for the whole build, so that its small buffers
 * have several pieces. */
#ifndef FTI_HEAL_SUM_BYTES
#define FTI_HEAL_SUM_BYTES ((size_t)8 << 20)
#endif

/* The heal checksum of [data, +len): xxHash's XXH3, 64 bits, with the
 * seed (libxxhash).  Both ends of a heal read the whole state once for it,
 * beside the transfer; it replaced fti_checksum64 here for its speed (50
 * against 31 GB/s from the cache, 11 against 8 GB/s from memory, on this
 * machine), which a heal over loopback on 2 cores is bound by. */
uint64_t fti_heal_sum(const void *data, size_t len, uint64_t seed);

/* The most sources one heal stripes over. */
#define FTI_HEAL_MAX_SOURCES 32

typedef struct fti_heal *fti_heal_h;

/* An empty registry (closed, step 0).  Release with fti_heal_destroy once
 * the RPC server that serves it is gone (it joins the summing thread). */
int fti_heal_create(fti_heal_h *h_p);
void fti_heal_destroy(fti_heal_h h);

/* Registers len bytes at buf under name (1..FTI_HEAL_MAX_NAME-1 bytes,
 * unique: FT_ERR_EXISTS otherwise).  The caller keeps ownership; buf must
 * stay valid until fti_heal_destroy. */
int fti_heal_register(fti_heal_h h, const char *name, void *buf, size_t len);

/* A buffer the heal code cannot read or write itself (device memory):
 * it serves `mirror` (host memory of the buffer's length) instead,
 * refreshed through copy_out at most once per served step (the step's
 * first metadata request, or fti_heal_refresh before it), and installs a
 * heal through copy_in.  Both copy synchronously, log their failure once
 * and return an FT_ERR_ code.  copy_out runs on the application thread
 * (foreign false) or on the RPC server's loop thread (foreign true: a
 * thread with no device of its own, which may be left on the buffer's);
 * copy_in on the application thread. */
typedef struct fti_heal_copy {
    int (*copy_out)(void *ctx, void *mirror, const void *buf, size_t len, bool foreign);
    int (*copy_in)(void *ctx, void *buf, const void *src, size_t len);
    void (*release)(void *ctx, void *mirror); /* at fti_heal_destroy */
    void *ctx;
    void *mirror;
} fti_heal_copy_t;

/* fti_heal_register of a buffer copied through *copy (see above).  On
 * success the registry owns copy->ctx and copy->mirror and hands them to
 * copy->release in fti_heal_destroy; on failure the caller keeps them. */
int fti_heal_register_copy(fti_heal_h h, const char *name, void *buf, size_t len,
                           const fti_heal_copy_t *copy);

/* Brings the mirrors up to the served step now, on the application thread
 * (a source that knows healers will come: they then find the mirrors
 * ready instead of waiting on the loop thread).  Nothing when the step is
 * not served or no buffer has a mirror.  A failure is logged (the loop
 * thread tries again when asked). */
int fti_heal_refresh(fti_heal_h h);

/* The SDC check's fingerprints (DESIGN section 11) of the served step
 * (call with the step open, fti_heal_set_step): the heal checksum of each
 * of the first max buffers in registration order (their
 * HealBuffer.checksum) into sums[], their names (valid until
 * fti_heal_destroy) into names[] when not NULL, the count into *n_p.
 * Mirrored (device) buffers are refreshed first (fti_heal_refresh: its
 * error is returned).  Application thread; reads the whole state once. */
int fti_heal_fingerprint(fti_heal_h h, size_t max, uint64_t *sums, const char **names,
                         size_t *n_p);

/* Number of buffers and bytes registered. */
void fti_heal_totals(fti_heal_h h, size_t *count_p, uint64_t *bytes_p);

/* The step this rank is at and whether it serves it.  Every call drops
 * the cached checksums (the state may have changed). */
void fti_heal_set_step(fti_heal_h h, int64_t step, bool open);

/* Waits until n healers have received a complete copy of the state since
 * the last fti_heal_set_step (the checksum reply a healer asks for after
 * its last fetch, or the metadata when no bytes are registered), or until deadline_ms
 * (FT_ERR_TIMEOUT).  A source calls it before it ends the step, so that a
 * step without a cross-group collective cannot close the state its
 * healers are still copying. */
int fti_heal_wait_served(fti_heal_h h, int n, int64_t deadline_ms);

/* fti_heal_handle with h as a void pointer: the rank server's heal handler
 * (fti_rank_server_start(..., fti_heal_rpc, h, ...)). */
void fti_heal_rpc(void *h, fti_rpc_call_h call, uint16_t method, const uint8_t *payload,
                  size_t len);

/* RPC dispatch for HEAL_METADATA and HEAL_FETCH (loop thread; takes over
 * call). */
void fti_heal_handle(fti_heal_h h, fti_rpc_call_h call, uint16_t method, const uint8_t *payload,
                     size_t len);

/* A one-sided transport a heal can fetch over instead of HEAL_FETCH (DESIGN
 * section 7.1): the UCX one is comm/ucx_heal.c's (fti_ucx_heal_*), which the
 * step hands in (this layer does not link UCX).  The metadata and the
 * checksums still go through the authenticated RPC; the transport only
 * moves the bytes, and every piece is checked as over HEAL_FETCH.
 * Errors are FT_ERR_ codes, logged by the transport. */
typedef struct fti_heal_rma {
    const char *name; /* "ucx", in log lines */
    /* Source, loop thread: makes [bases[i], +lens[i]) (i < n) readable by
     * a healer; this process's address into *addr_p, *alen_p and each
     * region's packed remote key into rkeys[i], rklens[i], all owned by
     * the transport and valid until the next expose or release. */
    int (*expose)(void *const *bases, const size_t *lens, size_t n, const void **addr_p,
                  size_t *alen_p, const void **rkeys, size_t *rklens);
    /* Source: forgets what expose made (fti_heal_destroy). */
    void (*release)(void);
    /* Healer, a fetching thread: a connection to the source at addr
     * (release with disconnect). */
    int (*connect)(const void *addr, size_t alen, int64_t deadline_ms, void **conn_p);
    /* Healer: copies len bytes at raddr in the source's region of rkey into
     * dst, before deadline_ms; FT_ERR_PROC_FAILED when the source died
     * (UCX's peer error callback), FT_ERR_TIMEOUT at the deadline. */
    int (*get)(void *conn, const void *rkey, size_t rklen, uint64_t raddr, void *dst, size_t len,
               int64_t deadline_ms);
    void (*disconnect)(void *conn);
} fti_heal_rma_t;

/* The transport this rank serves over when a healer asks for it (NULL:
 * HEAL_FETCH only, the default).  Call before serving starts. */
void fti_heal_set_rma(fti_heal_h h, const fti_heal_rma_t *rma);

typedef struct fti_heal_opts {
    int connect_timeout_ms;
    size_t max_reply;   /* cap of metadata replies */
    size_t chunk_bytes; /* per fetch; 0 = FTI_HEAL_CHUNK_BYTES */
    /* true: the bytes stream straight into the registered memory of every
     * buffer without a mirror (no staging copy, no install copy); serving
     * closes before the first byte lands.  A heal that fails once a fetch
     * into the registered memory began leaves this rank's state partly
     * overwritten (stats->torn).
     * false: staged, all or nothing (below). */
    bool direct;
    const fti_auth_key_t *key; /* the job's key for the sources' servers; NULL: none */
    /* a one-sided transport to fetch over from every source that serves
     * it (the others stream over HEAL_FETCH); NULL: HEAL_FETCH only */
    const fti_heal_rma_t *rma;
} fti_heal_opts_t;

typedef struct fti_heal_stats {
    uint64_t bytes;
    int64_t ms;         /* the whole heal */
    int64_t install_ms; /* of which copying the staged state into place */
    char source[FTI_ADDRESS_SIZE]; /* heal address of the first source rank
                                    * that delivered bytes (else reached) */
    int sources;        /* sources that delivered bytes */
    int refetched;      /* pieces that failed their checksum, fetched again */
    int rma_sources;    /* sources that delivered bytes over opts->rma */
    bool torn;          /* opts->direct: it failed once a fetch into the
                         * registered memory began (this rank's state is lost) */
} fti_heal_stats_t;

/* A complete, verified copy of a source's state in staging memory (as
 * large as the whole registered state), waiting to be installed. */
typedef struct fti_heal_staged *fti_heal_staged_h;

/* Phase 1 of a heal: copies the state of step `step` from the rank with
 * group rank `group_rank` of the group whose manager is src_manager into
 * staging memory, before deadline_ms, and verifies it.  Nothing of this
 * rank changes: the registered memory, the served step and whether it is
 * served are exactly as before the call, whatever its outcome (unless
 * opts->direct: then the buffers without a mirror are written in place,
 * serving is closed from the start, and a failure once a fetch into them
 * began sets stats->torn; one before that changes nothing).
 *
 * On success *staged_p is a complete copy whose every buffer matched its
 * checksum; the caller owns it and passes it to exactly one of
 * fti_heal_install or fti_heal_discard (both free it), with no
 * fti_heal_register in between.  On failure nothing is left to free and
 * *staged_p is not set.
 *
 * The source's metadata must list every registered buffer exactly once,
 * with its length, and nothing else.  FT_ERR_TIMEOUT on the deadline,
 * FT_ERR_CHECKSUM when a buffer does not match its checksum, FT_ERR_ARG
 * when the source's buffers differ from the registered ones (a repeated
 * name included), FT_ERR_NO_MEMORY when the staging memory cannot be had,
 * FT_ERR_PROC_FAILED for any other failure of the source.  Each failure is
 * logged once, here.  *stats (may be NULL) is filled in every case
 * (install_ms 0). */
int fti_heal_stage(fti_heal_h h, const char *src_manager, int group_rank, int64_t step,
                   const fti_heal_opts_t *opts, int64_t deadline_ms, fti_heal_staged_h *staged_p,
                   fti_heal_stats_t *stats);

/* fti_heal_stage striped over n_src sources (1..FTI_HEAL_MAX_SOURCES:
 * src_managers[j] is the manager of source group j, the primary first).
 * The state is cut into ranges of opts->chunk_bytes; one thread per
 * source (one connection each) opens its source (heal address, metadata:
 * the step and the buffers' names and lengths must be this rank's, else
 * the source is dropped, logged once) and fetches the next range nobody
 * has, so the sources share the ranges by their speed.  A source that
 * fails (connection closed, error reply, deadline) is dropped and its
 * range fetched from another.  Each buffer's pieces are summed in order
 * as they arrive; after the last range every live source sends its
 * checksums, chained over the pieces (HealBuffer.piece_sums): the live
 * sources must agree (the odd one is dropped and its ranges fetched
 * again), and a piece that fails its sum drops the source that sent it
 * and is fetched from another.  Fails only when some range could not be
 * fetched and verified from any source, with the gravest code a source
 * gave (FT_ERR_NO_MEMORY, FT_ERR_ARG, FT_ERR_CHECKSUM, FT_ERR_TIMEOUT,
 * else FT_ERR_PROC_FAILED).  With one source it is fti_heal_stage exactly.
 * A source counts this healer served once it sent its checksums. */
int fti_heal_stage_multi(fti_heal_h h, const char *const *src_managers, int n_src, int group_rank,
                         int64_t step, const fti_heal_opts_t *opts, int64_t deadline_ms,
                         fti_heal_staged_h *staged_p, fti_heal_stats_t *stats);

/* Phase 2, the group agreed: closes serving (the old state is about to
 * change: requests for it are refused from now on), copies every staged
 * buffer into its registered memory (copy_in for a buffer with a mirror)
 * and frees staged.  The caller then sets the healed step with
 * fti_heal_set_step.  Returns the milliseconds the copy took (>= 0), or
 * the negative FT_ERR_ code of a copy_in that failed (logged; the
 * registered state is then partly overwritten: this rank's state is
 * lost).  Host buffers alone: cannot fail. */
int64_t fti_heal_install(fti_heal_h h, fti_heal_staged_h staged);

/* Phase 2, the group did not agree: frees staged (NULL: nothing); the
 * rank keeps its state, its step and its serving. */
void fti_heal_discard(fti_heal_staged_h staged);

/* A heal of this rank alone: fti_heal_stage, then fti_heal_install on
 * success (same codes, and a failed copy_in's; stats also carry
 * install_ms).  On failure nothing
 * of this rank changed. */
int fti_heal_fetch(fti_heal_h h, const char *src_manager, int group_rank, int64_t step,
                   const fti_heal_opts_t *opts, int64_t deadline_ms, fti_heal_stats_t *stats);

#endif
