/*
 * ring.h - the pure arithmetic of the ring allreduce (no sockets): how
 * count elements split into one segment per rank, which segment a rank
 * sends and receives at each step, and how a segment splits into chunks.
 *
 * The ring allreduce over n ranks runs 2(n-1) steps.  Steps 0..n-2 are the
 * reduce-scatter: at step t rank r sends segment r-t to rank r+1 and
 * receives segment r-t-1 from rank r-1, which it reduces into its own copy.
 * After them rank r holds the full reduction of segment r+1.  Steps
 * n-1..2n-3 are the all-gather: at step n-1+a rank r sends segment r+1-a
 * and receives segment r-a, which it copies (everything mod n).  At every
 * step t >= 1 the segment sent is the one received at step t-1, so the two
 * phases form one stream that can be pipelined chunk by chunk.
 */
#ifndef FTI_RING_H
#define FTI_RING_H

#include <stddef.h>

/* Segment i (0 <= i < n) of count elements split in n parts: the first
 * count % n segments hold one element more.  Segments may be empty when
 * count < n. */
void fti_ring_segment(size_t count, int n, int i, size_t *off_p, size_t *len_p);

/* Number of steps of the allreduce: 2(n-1) (0 for n <= 1). */
int fti_ring_nsteps(int n);

/* 1 if step t reduces what it receives (reduce-scatter), 0 if it copies. */
int fti_ring_step_reduces(int n, int t);

/* Segment rank sends / receives at step t. */
int fti_ring_send_seg(int rank, int n, int t);
int fti_ring_recv_seg(int rank, int n, int t);

/* Elements per pipeline chunk: chunk_bytes rounded down to whole elements,
 * at least one element. */
size_t fti_ring_chunk_elems(size_t chunk_bytes, size_t esize);

/* Number of chunks of a segment of len elements (0 for an empty one). */
size_t fti_ring_nchunks(size_t len, size_t chunk_elems);

/* Elements per chunk of a ring over n ranks (n >= 2) of count elements
 * whose messages are numbered step * per_step + chunk in fewer than
 * max_msgs numbers (a tag's bits): chunk_bytes's elements
 * (fti_ring_chunk_elems), made larger where the largest segment would
 * need more than max_msgs / nsteps chunks.  The same on every rank.
 * *per_step_p: the chunks of the largest segment (at least 1). */
size_t fti_ring_chunk_plan(size_t count, int n, size_t esize, size_t chunk_bytes,
                           size_t max_msgs, size_t *per_step_p);

#endif
