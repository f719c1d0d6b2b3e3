/*
 * comm.h - the data-plane interface (DESIGN section 5): one struct of
 * function pointers per backend.  A slice communicator connects the ranks
 * with the same group rank across the groups of one quorum.
 *
 * Errors: any failure (peer closed, deadline passed) returns an FT_ERR_*
 * code; after one the communicator is dead and only destroy may be called.
 * Threads: one thread at a time per communicator.
 */
#ifndef FTI_COMM_H
#define FTI_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "reduce.h"

typedef struct fti_comm *fti_comm_h;

struct fti_comm_ops {
    const char *name;
    /* allreduce in place on buf (count elements of dtype) */
    int (*allreduce)(fti_comm_h comm, void *buf, size_t count, enum fti_dtype dtype,
                     enum fti_op op, int64_t deadline_ms);
    void (*destroy)(fti_comm_h comm);
};

struct fti_comm {
    const struct fti_comm_ops *ops;
    int rank; /* replica rank in the slice */
    int size; /* participants */
};

static inline int fti_comm_allreduce(fti_comm_h c, void *buf, size_t count, enum fti_dtype dt,
                                     enum fti_op op, int64_t deadline_ms)
{
    return c->ops->allreduce(c, buf, count, dt, op, deadline_ms);
}

static inline void fti_comm_destroy(fti_comm_h c)
{
    if (c)
        c->ops->destroy(c);
}

/* ---- tcp backend (comm/tcp.c) ------------------------------------------ */

/* A listening socket a rank opens before the rendezvous, on bind_host
 * (NULL or "" = 127.0.0.1) and an ephemeral port; its address is
 * "bind_host:port" ("[v6]:port"), so bind a host the peers can reach.
 * Release with fti_tcp_listener_destroy (once the ring is built or
 * abandoned). */
typedef struct fti_tcp_listener *fti_tcp_listener_h;
int fti_tcp_listener_create(const char *bind_host, fti_tcp_listener_h *l_p);
const char *fti_tcp_listener_address(fti_tcp_listener_h l); /* "host:port" */
void fti_tcp_listener_destroy(fti_tcp_listener_h l);

/* Builds the ring: connects to next_addr (the listener of rank (rank+1)%size)
 * and accepts one connection from rank (rank-1+size)%size on l, before
 * deadline_ms.  size == 1 needs no addresses (allreduce is a no-op copy).
 * chunk_bytes is the pipeline chunk.  Release with fti_comm_destroy. */
int fti_tcp_ring_create(fti_tcp_listener_h l, int rank, int size, const char *next_addr,
                        size_t chunk_bytes, int64_t deadline_ms, fti_comm_h *comm_p);

/* Tuning for tests and benchmarks: an allreduce of bytes with
 * bytes * (size-1) <= small_max (default 64 KiB) gathers whole buffers
 * around the ring and reduces them locally in rank order (size-1 hops);
 * larger ones run the ring reduce-scatter + all-gather (2(size-1) hops).
 * 0 sends everything through the ring.  Every rank must use the same value.
 * No-op on a comm that is not tcp. */
void fti_tcp_set_small_max(fti_comm_h comm, size_t small_max);

#endif
