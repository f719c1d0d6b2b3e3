/*
 * tcp.h - the `tcp` data plane (DESIGN section 5): a ring of TCP
 * connections in replica-rank order.  The table entry fti_backend_tcp
 * (comm.h) builds it through the quorum's store (slice.h); the calls below
 * build one from addresses known some other way (tests, benchmarks).
 */
#ifndef FTI_TCP_H
#define FTI_TCP_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"

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
 * deadline_ms; with key (the job's; NULL: none) both neighbours prove it
 * first (fti_auth_ring).  size == 1 needs no addresses (allreduce is a
 * no-op copy).  chunk_bytes is the pipeline chunk.  Failures are logged
 * here.  Release with fti_comm_destroy. */
int fti_tcp_ring_create(fti_tcp_listener_h l, int rank, int size, const char *next_addr,
                        size_t chunk_bytes, const fti_auth_key_t *key, int64_t deadline_ms,
                        fti_comm_h *comm_p);

/* Tuning for tests and benchmarks: an allreduce of bytes with
 * bytes * (size-1) <= small_max (default 64 KiB) gathers whole buffers
 * around the ring and reduces them locally in rank order (size-1 hops);
 * larger ones run the ring reduce-scatter + all-gather (2(size-1) hops).
 * 0 sends everything through the ring.  Every rank must use the same value.
 * No-op on a comm that is not tcp. */
void fti_tcp_set_small_max(fti_comm_h comm, size_t small_max);

/* What a ring communicator's ops point to: allreduce and destroy of the
 * ring (no create: fti_backend_tcp, slice.c, builds rings through the
 * quorum's store). */
extern const struct fti_comm_backend fti_tcp_ring_ops;
int fti_tcp_ring_allreduce(fti_comm_h comm, void *buf, size_t count, enum fti_dtype dtype,
                           enum fti_op op, int64_t deadline_ms);
void fti_tcp_ring_destroy(fti_comm_h comm);
/* The failed_peer op (comm.h): the neighbour (next or previous replica
 * rank) whose connection the ring's first failure was on, and its
 * listener's address (next: the address the ring was built with; previous:
 * fti_tcp_set_prev_address, or the next one in a ring of two). */
int fti_tcp_ring_failed_peer(fti_comm_h comm, int *replica_rank_p, char *addr, size_t len);

/* Remembers the previous rank's listener address for
 * fti_tcp_ring_failed_peer (the rendezvous knows it, the ring does not:
 * the previous rank connects from an ephemeral port).  No-op on a comm
 * that is not a tcp ring. */
void fti_tcp_set_prev_address(fti_comm_h comm, const char *addr);

#endif
