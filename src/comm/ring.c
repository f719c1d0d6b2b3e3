/* ring.c - segment, step and chunk arithmetic of the ring allreduce (ring.h). */
#include "comm/ring.h"

static int ring_mod(int x, int n)
{
    int m = x % n;
    return m < 0 ? m + n : m;
}

void fti_ring_segment(size_t count, int n, int i, size_t *off_p, size_t *len_p)
{
    size_t un = (size_t)n, ui = (size_t)i;
    size_t base = count / un, rem = count % un;
    *off_p = ui * base + (ui < rem ? ui : rem);
    *len_p = base + (ui < rem ? 1 : 0);
}

int fti_ring_nsteps(int n)
{
    return n > 1 ? 2 * (n - 1) : 0;
}

int fti_ring_step_reduces(int n, int t)
{
    return t < n - 1;
}

int fti_ring_send_seg(int rank, int n, int t)
{
    if (t < n - 1)
        return ring_mod(rank - t, n);
    return ring_mod(rank + 1 - (t - (n - 1)), n);
}

int fti_ring_recv_seg(int rank, int n, int t)
{
    if (t < n - 1)
        return ring_mod(rank - t - 1, n);
    return ring_mod(rank - (t - (n - 1)), n);
}

size_t fti_ring_chunk_elems(size_t chunk_bytes, size_t esize)
{
    size_t e = esize ? chunk_bytes / esize : 0;
    return e ? e : 1;
}

size_t fti_ring_nchunks(size_t len, size_t chunk_elems)
{
    return (len + chunk_elems - 1) / chunk_elems;
}

size_t fti_ring_chunk_plan(size_t count, int n, size_t esize, size_t chunk_bytes,
                           size_t max_msgs, size_t *per_step_p)
{
    size_t steps = (size_t)fti_ring_nsteps(n), ce = fti_ring_chunk_elems(chunk_bytes, esize);
    size_t maxseg = n > 0 ? (count + (size_t)n - 1) / (size_t)n : count;
    size_t budget = steps ? max_msgs / steps : max_msgs, per = fti_ring_nchunks(maxseg, ce);
    if (budget == 0)
        budget = 1;
    if (per > budget) {
        ce = (maxseg + budget - 1) / budget;
        per = fti_ring_nchunks(maxseg, ce);
    }
    *per_step_p = per ? per : 1;
    return ce;
}
