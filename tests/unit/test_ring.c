/* test_ring.c - the segment, step and chunk arithmetic of comm/ring.c, and a
 * lock-step simulation of the whole ring allreduce built on it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "comm/ring.h"

static void test_segments_partition(void **state)
{
    (void)state;
    for (int n = 1; n <= 9; n++) {
        for (size_t count = 0; count <= 40; count++) {
            size_t next = 0, minl = (size_t)-1, maxl = 0;
            for (int i = 0; i < n; i++) {
                size_t off, len;
                fti_ring_segment(count, n, i, &off, &len);
                assert_int_equal(off, next); /* contiguous, in order */
                next = off + len;
                minl = len < minl ? len : minl;
                maxl = len > maxl ? len : maxl;
            }
            assert_int_equal(next, count); /* covers everything */
            assert_true(maxl - minl <= 1);  /* balanced */
        }
    }
    /* uneven: 10 over 4 = 3,3,2,2 */
    size_t off, len;
    fti_ring_segment(10, 4, 1, &off, &len);
    assert_int_equal(off, 3);
    assert_int_equal(len, 3);
    fti_ring_segment(10, 4, 3, &off, &len);
    assert_int_equal(off, 8);
    assert_int_equal(len, 2);
    /* count < n: trailing segments are empty */
    fti_ring_segment(2, 5, 4, &off, &len);
    assert_int_equal(off, 2);
    assert_int_equal(len, 0);
}

static void test_steps(void **state)
{
    (void)state;
    assert_int_equal(fti_ring_nsteps(1), 0);
    assert_int_equal(fti_ring_nsteps(2), 2);
    assert_int_equal(fti_ring_nsteps(5), 8);
    for (int n = 2; n <= 8; n++) {
        int T = fti_ring_nsteps(n);
        for (int r = 0; r < n; r++) {
            int seen_rs = 0, seen_ag = 0;
            for (int t = 0; t < T; t++) {
                int s = fti_ring_send_seg(r, n, t), v = fti_ring_recv_seg(r, n, t);
                assert_in_range(s, 0, n - 1);
                assert_in_range(v, 0, n - 1);
                /* what rank r receives at t is what r-1 sends at t */
                assert_int_equal(v, fti_ring_send_seg((r - 1 + n) % n, n, t));
                /* the stream property: send(t) = recv(t-1) */
                if (t > 0)
                    assert_int_equal(s, fti_ring_recv_seg(r, n, t - 1));
                assert_int_equal(fti_ring_step_reduces(n, t), t < n - 1);
                if (t < n - 1)
                    seen_rs |= 1 << v;
                else
                    seen_ag |= 1 << v;
            }
            /* reduce-scatter touches every segment but r's own; the
             * all-gather receives every segment but the one r finished,
             * r+1 */
            assert_int_equal(seen_rs, ((1 << n) - 1) & ~(1 << r));
            assert_int_equal(seen_ag, ((1 << n) - 1) & ~(1 << ((r + 1) % n)));
            assert_int_equal(fti_ring_send_seg(r, n, 0), r);
        }
    }
}

static void test_chunks(void **state)
{
    (void)state;
    assert_int_equal(fti_ring_chunk_elems(262144, 4), 65536);
    assert_int_equal(fti_ring_chunk_elems(10, 4), 2);   /* whole elements */
    assert_int_equal(fti_ring_chunk_elems(3, 8), 1);    /* at least one */
    assert_int_equal(fti_ring_chunk_elems(0, 8), 1);
    assert_int_equal(fti_ring_nchunks(0, 5), 0);
    assert_int_equal(fti_ring_nchunks(1, 5), 1);
    assert_int_equal(fti_ring_nchunks(10, 5), 2);
    assert_int_equal(fti_ring_nchunks(11, 5), 3);
}

/* The ucx ring's chunks: chunk_bytes's when the tag's message numbers
 * suffice, larger when not; every message number of every step below
 * max_msgs, and every segment covered. */
static void test_chunk_plan(void **state)
{
    (void)state;
    size_t per = 0;
    /* 2 ranks, 8 MiB of doubles: 4 MiB segments in 16 chunks of 256 KiB */
    assert_int_equal(fti_ring_chunk_plan(1u << 20, 2, 8, 262144, 65536, &per), 32768);
    assert_int_equal(per, 16);
    /* 3 ranks, 7919 elements: segments of 2640 at most, one element chunks */
    assert_int_equal(fti_ring_chunk_plan(7919, 3, 8, 8, 65536, &per), 1);
    assert_int_equal(per, 2640);
    /* too many chunks for 16 bits: 2 steps of at most 32768 */
    size_t ce = fti_ring_chunk_plan((size_t)1 << 31, 2, 4, 4096, 65536, &per);
    assert_true(per <= 32768);
    assert_true(ce * per >= (size_t)1 << 30);
    /* 4096 ranks: 8190 steps, 8 chunks each at most */
    ce = fti_ring_chunk_plan((size_t)1 << 30, 4096, 4, 4096, 65536, &per);
    assert_true(per * 8190 <= 65536);
    assert_true(ce * per >= ((size_t)1 << 30) / 4096);
    /* an empty segment still has one message number */
    assert_int_equal(fti_ring_chunk_plan(1, 2, 8, 4096, 65536, &per), 512);
    assert_int_equal(per, 1);
}

/*
 * Lock-step simulation: n ranks, each contributing 1 << rank in every
 * element; step by step every rank sends its segment, every receiver
 * reduces (SUM) or copies chunk by chunk.  At the end every element of every
 * rank must be (1 << n) - 1: each contribution exactly once.
 */
static void simulate(int n, size_t count, size_t chunk)
{
    uint32_t *buf = calloc((size_t)n * (count + 1), sizeof(uint32_t));
    uint32_t *msg = calloc((size_t)n * (count + 1), sizeof(uint32_t));
    assert_non_null(buf);
    assert_non_null(msg);
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < count; i++)
            buf[(size_t)r * (count + 1) + i] = 1u << r;
    for (int t = 0; t < fti_ring_nsteps(n); t++) {
        size_t off, len;
        for (int r = 0; r < n; r++) { /* every rank sends */
            fti_ring_segment(count, n, fti_ring_send_seg(r, n, t), &off, &len);
            memcpy(msg + (size_t)((r + 1) % n) * (count + 1),
                   buf + (size_t)r * (count + 1) + off, len * sizeof(uint32_t));
        }
        for (int r = 0; r < n; r++) { /* every rank receives */
            fti_ring_segment(count, n, fti_ring_recv_seg(r, n, t), &off, &len);
            uint32_t *dst = buf + (size_t)r * (count + 1) + off;
            const uint32_t *src = msg + (size_t)r * (count + 1);
            size_t nch = fti_ring_nchunks(len, chunk);
            for (size_t c = 0; c < nch; c++) {
                size_t a = c * chunk, b = a + chunk < len ? a + chunk : len;
                for (size_t i = a; i < b; i++)
                    dst[i] = fti_ring_step_reduces(n, t) ? dst[i] + src[i] : src[i];
            }
        }
    }
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < count; i++)
            assert_int_equal(buf[(size_t)r * (count + 1) + i], (1u << n) - 1);
    free(buf);
    free(msg);
}

static void test_simulated_allreduce(void **state)
{
    (void)state;
    static const size_t counts[] = {0, 1, 2, 3, 7, 10, 64, 101};
    for (int n = 1; n <= 7; n++)
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
            for (size_t chunk = 1; chunk <= 8; chunk *= 2)
                simulate(n, counts[k], chunk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segments_partition),
        cmocka_unit_test(test_steps),
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_chunk_plan),
        cmocka_unit_test(test_simulated_allreduce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
