/*
 * test_heal.c - healing over real sockets in one process (src/heal/serve.c,
 * src/rank_server.c): a "source" rank server (a manager, so it also
 * answers CHECKPOINT_METADATA) serves registered buffers; a second
 * registry fetches them.  Covers chunked fetches, the step and open
 * checks, registrations that differ, a stale checksum (also in a buffer of
 * several checksum pieces), the count of
 * complete copies a source waits for, the manager's kill flag, a source
 * that is gone, and the two phases of a heal (fti_heal_stage changes
 * nothing of the healer, fti_heal_discard keeps it so, fti_heal_install
 * copies the state into place and closes serving of the old step).
 *
 * A fake source (a thread with its own listening socket on 127.0.0.1 that
 * speaks the frames of rpc.h by hand) plays what a real rank server never
 * does: metadata that names a buffer twice or a buffer that is not
 * registered, a wrong checksum after a complete transfer, dying in the
 * middle of a reply (the socket closed half way through the bytes) and
 * stalling (the socket kept open, never answered).  In each case the heal
 * fails by its deadline and the healer's registered buffers stay bitwise
 * as they were.
 *
 * Mirrored buffers (fti_heal_register_copy, what device memory uses) are
 * played by a fake device: page-aligned memory kept PROT_NONE except
 * inside the copy callbacks, so any direct access by heal/serve.c crashes the
 * test.  The source serves through its mirror (copied out once per step,
 * on the loop thread or by fti_heal_refresh), the healer installs through
 * copy_in, the bytes equal; failing copies fail the heal.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "ftmpi.h"
#include "heal/heal.h"
#include "control/proto/ftmpi.pb-c.h"
#include "control/rank_server.h"
#include "base/rpc.h"
#include "base/sizes.h"
#include "base/util.h"
#include "control/message.h"

#define N_A 100000 /* doubles */
#define N_B 777    /* bytes */

struct fixture {
    fti_heal_h src, dst;
    fti_rank_server_h srv;
    double a_src[N_A], a_dst[N_A];
    unsigned char b_src[N_B], b_dst[N_B];
    fti_heal_opts_t opts;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    for (int i = 0; i < N_A; i++)
        f->a_src[i] = i * 0.5;
    for (int i = 0; i < N_B; i++)
        f->b_src[i] = (unsigned char)(i * 7);
    assert_int_equal(fti_heal_create(&f->src), FT_SUCCESS);
    assert_int_equal(fti_heal_create(&f->dst), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->src, "a", f->a_src, sizeof(f->a_src)), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->src, "b", f->b_src, sizeof(f->b_src)), FT_SUCCESS);
    /* registered in the other order at the destination: matched by name */
    assert_int_equal(fti_heal_register(f->dst, "b", f->b_dst, sizeof(f->b_dst)), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->dst, "a", f->a_dst, sizeof(f->a_dst)), FT_SUCCESS);
    assert_int_equal(
        fti_rank_server_start("127.0.0.1", 1 << 20, NULL, true, fti_heal_rpc, f->src, &f->srv),
        FT_SUCCESS);
    const char *peers[] = {fti_rank_server_address(f->srv)};
    assert_int_equal(fti_rank_server_set_peers(f->srv, peers, 1), FT_SUCCESS);
    f->opts.connect_timeout_ms = 1000;
    f->opts.max_reply = 1 << 20;
    f->opts.chunk_bytes = 4096 * 3 + 8; /* many chunks, not a multiple of the sizes */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    fti_rank_server_stop(f->srv);
    fti_heal_destroy(f->src);
    fti_heal_destroy(f->dst);
    free(f);
    return 0;
}

static int fetch(struct fixture *f, int64_t step, fti_heal_stats_t *st)
{
    return fti_heal_fetch(f->dst, fti_rank_server_address(f->srv), 0, step, &f->opts,
                          fti_now_ms() + 5000, st);
}

static void test_register(void **state)
{
    struct fixture *f = *state;
    char x;
    assert_int_equal(fti_heal_register(f->dst, "a", &x, 1), FT_ERR_EXISTS);
    assert_int_equal(fti_heal_register(f->dst, "", &x, 1), FT_ERR_ARG);
    assert_int_equal(fti_heal_register(f->dst, "n", NULL, 1), FT_ERR_ARG);
    size_t n;
    uint64_t bytes;
    fti_heal_totals(f->dst, &n, &bytes);
    assert_int_equal(n, 2);
    assert_int_equal(bytes, sizeof(f->a_dst) + N_B);
}

static void test_heal_ok(void **state)
{
    struct fixture *f = *state;
    fti_heal_stats_t st;
    fti_heal_set_step(f->src, 42, true);
    assert_int_equal(fetch(f, 42, &st), FT_SUCCESS);
    assert_memory_equal(f->a_dst, f->a_src, sizeof(f->a_src));
    assert_memory_equal(f->b_dst, f->b_src, sizeof(f->b_src));
    assert_int_equal(st.bytes, sizeof(f->a_src) + N_B);
    assert_string_equal(st.source, fti_rank_server_address(f->srv));
}

/* A rank server of its own for f->dst (the healer), so that a third
 * registry can check what the healer serves; *reg_p is that registry
 * (with "a" and "b" registered), both released by third_stop. */
struct third {
    fti_rank_server_h srv;
    fti_heal_h reg;
    double a[N_A];
    unsigned char b[N_B];
};

static struct third *third_start(struct fixture *f)
{
    struct third *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    assert_int_equal(
        fti_rank_server_start("127.0.0.1", 1 << 20, NULL, true, fti_heal_rpc, f->dst, &t->srv),
        FT_SUCCESS);
    const char *peers[] = {fti_rank_server_address(t->srv)};
    assert_int_equal(fti_rank_server_set_peers(t->srv, peers, 1), FT_SUCCESS);
    assert_int_equal(fti_heal_create(&t->reg), FT_SUCCESS);
    assert_int_equal(fti_heal_register(t->reg, "a", t->a, sizeof(t->a)), FT_SUCCESS);
    assert_int_equal(fti_heal_register(t->reg, "b", t->b, sizeof(t->b)), FT_SUCCESS);
    return t;
}

static void third_stop(struct third *t)
{
    fti_rank_server_stop(t->srv);
    fti_heal_destroy(t->reg);
    free(t);
}

/* fti_heal_fetch from the healer's own server into the third registry. */
static int third_fetch(struct fixture *f, struct third *t, int64_t step)
{
    fti_heal_stats_t st;
    int rc = fti_heal_fetch(t->reg, fti_rank_server_address(t->srv), 0, step, &f->opts,
                            fti_now_ms() + 5000, &st);
    if (rc == FT_SUCCESS) {
        assert_memory_equal(t->a, f->a_dst, sizeof(t->a));
        assert_memory_equal(t->b, f->b_dst, sizeof(t->b));
    }
    return rc;
}

/* Phase 1 changes nothing of the healer: its memory stays bitwise as it
 * was and it goes on serving its own step; fti_heal_discard keeps it so. */
static void test_stage_then_discard(void **state)
{
    struct fixture *f = *state;
    struct third *t = third_start(f);
    memset(f->a_dst, 0x5a, sizeof(f->a_dst));
    memset(f->b_dst, 0xa5, sizeof(f->b_dst));
    double a0[N_A];
    unsigned char b0[N_B];
    memcpy(a0, f->a_dst, sizeof(a0));
    memcpy(b0, f->b_dst, sizeof(b0));
    fti_heal_set_step(f->src, 42, true);
    fti_heal_set_step(f->dst, 3, true);

    fti_heal_staged_h staged = NULL;
    fti_heal_stats_t st;
    assert_int_equal(fti_heal_stage(f->dst, fti_rank_server_address(f->srv), 0, 42, &f->opts,
                                    fti_now_ms() + 5000, &staged, &st),
                     FT_SUCCESS);
    assert_non_null(staged);
    assert_int_equal(st.bytes, sizeof(f->a_src) + N_B);
    assert_int_equal(st.install_ms, 0);
    assert_memory_equal(f->a_dst, a0, sizeof(a0));
    assert_memory_equal(f->b_dst, b0, sizeof(b0));
    assert_int_equal(third_fetch(f, t, 3), FT_SUCCESS); /* still serves step 3 */
    fti_heal_discard(staged);
    assert_memory_equal(f->a_dst, a0, sizeof(a0));
    assert_memory_equal(f->b_dst, b0, sizeof(b0));
    assert_int_equal(third_fetch(f, t, 3), FT_SUCCESS);
    fti_heal_discard(NULL); /* nothing */
    third_stop(t);
}

/* Phase 2: fti_heal_install copies the staged state into place and closes
 * serving of the old step. */
static void test_stage_then_install(void **state)
{
    struct fixture *f = *state;
    struct third *t = third_start(f);
    fti_heal_set_step(f->src, 42, true);
    fti_heal_set_step(f->dst, 3, true);
    fti_heal_staged_h staged = NULL;
    assert_int_equal(fti_heal_stage(f->dst, fti_rank_server_address(f->srv), 0, 42, &f->opts,
                                    fti_now_ms() + 5000, &staged, NULL),
                     FT_SUCCESS);
    assert_int_not_equal(memcmp(f->a_dst, f->a_src, sizeof(f->a_src)), 0);
    assert_true(fti_heal_install(f->dst, staged) >= 0);
    assert_memory_equal(f->a_dst, f->a_src, sizeof(f->a_src));
    assert_memory_equal(f->b_dst, f->b_src, sizeof(f->b_src));
    assert_int_not_equal(third_fetch(f, t, 3), FT_SUCCESS); /* the old step is gone */
    fti_heal_set_step(f->dst, 42, true);
    assert_int_equal(third_fetch(f, t, 42), FT_SUCCESS);
    third_stop(t);
}

/* A failed phase 1 leaves nothing to free and does not set *staged_p. */
static void test_stage_fails(void **state)
{
    struct fixture *f = *state;
    fti_heal_set_step(f->src, 42, true);
    fti_heal_staged_h staged = (fti_heal_staged_h)&staged; /* a sentinel */
    fti_heal_stats_t st;
    assert_int_not_equal(fti_heal_stage(f->dst, fti_rank_server_address(f->srv), 0, 41,
                                        &f->opts, fti_now_ms() + 5000, &staged, &st),
                         FT_SUCCESS);
    assert_ptr_equal(staged, (fti_heal_staged_h)&staged);
    assert_int_equal(st.install_ms, 0);
}

static void test_wait_served(void **state)
{
    struct fixture *f = *state;
    fti_heal_stats_t st;
    fti_heal_set_step(f->src, 9, true);
    assert_int_equal(fti_heal_wait_served(f->src, 1, fti_now_ms() + 50), FT_ERR_TIMEOUT);
    assert_int_equal(fetch(f, 9, &st), FT_SUCCESS);
    assert_int_equal(fti_heal_wait_served(f->src, 1, fti_now_ms() + 2000), FT_SUCCESS);
    assert_int_equal(fti_heal_wait_served(f->src, 2, fti_now_ms() + 50), FT_ERR_TIMEOUT);
    assert_int_equal(fetch(f, 9, &st), FT_SUCCESS);
    assert_int_equal(fti_heal_wait_served(f->src, 2, fti_now_ms() + 2000), FT_SUCCESS);
    fti_heal_set_step(f->src, 9, true); /* a new generation counts from 0 */
    assert_int_equal(fti_heal_wait_served(f->src, 1, fti_now_ms() + 50), FT_ERR_TIMEOUT);
    assert_int_equal(fti_heal_wait_served(f->src, 0, fti_now_ms()), FT_SUCCESS);
}

static void test_wait_served_nothing_registered(void **state)
{
    struct fixture *f = *state;
    fti_heal_h empty_src, empty_dst;
    fti_rank_server_h srv;
    fti_heal_stats_t st;
    assert_int_equal(fti_heal_create(&empty_src), FT_SUCCESS);
    assert_int_equal(fti_heal_create(&empty_dst), FT_SUCCESS);
    assert_int_equal(
        fti_rank_server_start("127.0.0.1", 1 << 20, NULL, true, fti_heal_rpc, empty_src, &srv),
        FT_SUCCESS);
    const char *peers[] = {fti_rank_server_address(srv)};
    assert_int_equal(fti_rank_server_set_peers(srv, peers, 1), FT_SUCCESS);
    fti_heal_set_step(empty_src, 1, true);
    assert_int_equal(fti_heal_fetch(empty_dst, peers[0], 0, 1, &f->opts, fti_now_ms() + 5000,
                                    &st),
                     FT_SUCCESS);
    assert_int_equal(st.bytes, 0);
    assert_int_equal(fti_heal_wait_served(empty_src, 1, fti_now_ms() + 2000), FT_SUCCESS);
    fti_rank_server_stop(srv);
    fti_heal_destroy(empty_src);
    fti_heal_destroy(empty_dst);
}

static void test_wrong_step_or_closed(void **state)
{
    struct fixture *f = *state;
    fti_heal_stats_t st;
    fti_heal_set_step(f->src, 42, true);
    assert_int_equal(fetch(f, 41, &st), FT_ERR_PROC_FAILED);
    assert_int_equal(st.bytes, 0);
    fti_heal_set_step(f->src, 42, false); /* committed: nothing served */
    assert_int_equal(fetch(f, 42, &st), FT_ERR_PROC_FAILED);
}

static void test_stale_checksum(void **state)
{
    struct fixture *f = *state;
    fti_heal_stats_t st;
    fti_heal_set_step(f->src, 5, true);
    assert_int_equal(fetch(f, 5, &st), FT_SUCCESS); /* caches the checksums */
    f->a_src[1234] += 1.0; /* changed behind the library's back */
    assert_int_equal(fetch(f, 5, &st), FT_ERR_CHECKSUM);
    fti_heal_set_step(f->src, 5, true); /* drops the cache */
    assert_int_equal(fetch(f, 5, &st), FT_SUCCESS);
    assert_memory_equal(f->a_dst, f->a_src, sizeof(f->a_src));
}

/* A buffer of several checksum pieces (FTI_HEAL_SUM_BYTES): verified on
 * the healer's helper thread while later chunks stream; a change in the
 * first or the last piece is caught. */
static void test_big_buffer(void **state)
{
    (void)state;
    size_t len = 2 * FTI_HEAL_SUM_BYTES + 4099;
    unsigned char *src = malloc(len), *dst = calloc(1, len);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < len; i++)
        src[i] = (unsigned char)(i * 131 + (i >> 12));
    fti_heal_h hs, hd;
    fti_rank_server_h srv;
    assert_int_equal(fti_heal_create(&hs), FT_SUCCESS);
    assert_int_equal(fti_heal_create(&hd), FT_SUCCESS);
    assert_int_equal(fti_heal_register(hs, "big", src, len), FT_SUCCESS);
    assert_int_equal(fti_heal_register(hd, "big", dst, len), FT_SUCCESS);
    assert_int_equal(
        fti_rank_server_start("127.0.0.1", 1 << 20, NULL, true, fti_heal_rpc, hs, &srv),
        FT_SUCCESS);
    const char *peers[] = {fti_rank_server_address(srv)};
    assert_int_equal(fti_rank_server_set_peers(srv, peers, 1), FT_SUCCESS);
    fti_heal_opts_t o = {1000, 1 << 20, (3u << 20) + 5, false, NULL, NULL}; /* chunks across the pieces */
    fti_heal_stats_t st;
    const size_t spots[] = {0, len - 1, FTI_HEAL_SUM_BYTES};
    for (size_t k = 0; k < FTI_ARRAY_SIZE(spots); k++) {
        fti_heal_set_step(hs, 3, true);
        memset(dst, 0, len);
        assert_int_equal(fti_heal_fetch(hd, fti_rank_server_address(srv), 0, 3, &o,
                                        fti_now_ms() + 10000, &st),
                         FT_SUCCESS);
        assert_int_equal(st.bytes, len);
        assert_memory_equal(dst, src, len);
        src[spots[k]] ^= 0x04; /* behind the cached checksum's back */
        assert_int_equal(fti_heal_fetch(hd, fti_rank_server_address(srv), 0, 3, &o,
                                        fti_now_ms() + 10000, &st),
                         FT_ERR_CHECKSUM);
    }
    fti_rank_server_stop(srv);
    fti_heal_destroy(hs);
    fti_heal_destroy(hd);
    free(src);
    free(dst);
}

/* ---- the source's checksums, whatever it was asked ----------------------- */

/* What a source must answer for buffer [d, +len): the chained sum after
 * each piece, the last one the buffer's (heal.h). */
static uint64_t chain_sums(const unsigned char *d, size_t len, uint64_t *pieces)
{
    uint64_t sum = fti_heal_sum(d, 0, 0);
    for (size_t off = 0, k = 0; off < len; off += FTI_HEAL_SUM_BYTES, k++) {
        sum = fti_heal_sum(d + off, FTI_MIN(FTI_HEAL_SUM_BYTES, len - off), k ? sum : 0);
        pieces[k] = sum;
    }
    return sum;
}

/* Asks c for [off, +len) of `name` in step and checks the bytes. */
static void raw_fetch(fti_rpc_client_h c, int64_t step, const char *name, const unsigned char *want,
                      size_t off, size_t len)
{
    Ftmpi__HealFetchRequest req = FTMPI__HEAL_FETCH_REQUEST__INIT;
    req.step = step;
    req.name = (char *)name;
    req.offset = off;
    req.length = len;
    uint8_t buf[FTI_HEAL_MAX_NAME + 64];
    size_t n = ftmpi__heal_fetch_request__pack(&req, buf);
    void *rep = NULL;
    size_t rlen = 0;
    assert_int_equal(fti_rpc_call(c, FTMPI__METHOD__HEAL_FETCH, buf, n, 10000, &rep, &rlen),
                     FT_SUCCESS);
    assert_int_equal(rlen, len);
    assert_memory_equal(rep, want + off, len);
    free(rep);
}

/* The sums a real source sends do not depend on which of its bytes went
 * out, in what order, or in what pieces: its summing cursor is moved by
 * the sending (the bytes in the cache), by its summing thread (the ranges
 * it was not asked for, the bytes sent while the thread held the cursor)
 * and by the checksum request (the rest).  Each pattern is a fresh step;
 * a healer striping over sources asks each for scattered ranges. */
static void test_sums_whatever_was_sent(void **state)
{
    (void)state;
    const size_t S = FTI_HEAL_SUM_BYTES;
    size_t lx = 2 * S + 4099, ly = 777;
    unsigned char *x = malloc(lx), y[777];
    assert_non_null(x);
    for (size_t i = 0; i < lx; i++)
        x[i] = (unsigned char)(i * 131 + (i >> 12));
    for (size_t i = 0; i < ly; i++)
        y[i] = (unsigned char)(i * 7 + 1);
    uint64_t px[3], py[1], pz[1];
    uint64_t sx = chain_sums(x, lx, px), sy = chain_sums(y, ly, py), sz = chain_sums(y, 0, pz);
    fti_heal_h hs;
    fti_rank_server_h srv;
    fti_rpc_client_h c;
    assert_int_equal(fti_heal_create(&hs), FT_SUCCESS);
    assert_int_equal(fti_heal_register(hs, "x", x, lx), FT_SUCCESS);
    assert_int_equal(fti_heal_register(hs, "z", y, 0), FT_SUCCESS); /* empty */
    assert_int_equal(fti_heal_register(hs, "y", y, ly), FT_SUCCESS);
    assert_int_equal(
        fti_rank_server_start("127.0.0.1", 1 << 20, NULL, true, fti_heal_rpc, hs, &srv),
        FT_SUCCESS);
    assert_int_equal(fti_rpc_client_create(fti_rank_server_address(srv), NULL, 1000, 8u << 20, &c),
                     FT_SUCCESS);
    enum { P_NONE, P_ALL, P_SCATTERED, P_BACKWARDS, P_PARTS };
    for (int pat = P_NONE; pat <= P_PARTS; pat++) {
        int64_t step = 10 + pat;
        fti_heal_set_step(hs, step, true);
        Ftmpi__HealMetadataRequest mreq = FTMPI__HEAL_METADATA_REQUEST__INIT;
        mreq.step = step;
        Ftmpi__HealMetadataResponse *m = NULL;
        assert_int_equal(fti_rpc_call_msg(c, FTMPI__METHOD__HEAL_METADATA, &mreq.base,
                                          &ftmpi__heal_metadata_response__descriptor, 10000,
                                          (ProtobufCMessage **)&m),
                         FT_SUCCESS);
        assert_true(m->sums_deferred);
        ftmpi__heal_metadata_response__free_unpacked(m, NULL);
        switch (pat) {
        case P_ALL: /* in order, as a heal from one source */
            raw_fetch(c, step, "x", x, 0, S);
            raw_fetch(c, step, "x", x, S, S);
            raw_fetch(c, step, "x", x, 2 * S, lx - 2 * S);
            raw_fetch(c, step, "y", y, 0, ly);
            break;
        case P_SCATTERED: /* the second source of three */
            raw_fetch(c, step, "x", x, S, S);
            raw_fetch(c, step, "y", y, 0, ly);
            break;
        case P_BACKWARDS:
            raw_fetch(c, step, "y", y, 0, ly);
            raw_fetch(c, step, "x", x, 2 * S, lx - 2 * S);
            raw_fetch(c, step, "x", x, 0, S);
            break;
        case P_PARTS: /* odd pieces, one byte twice */
            raw_fetch(c, step, "x", x, 0, 4097);
            raw_fetch(c, step, "x", x, 4096, S);
            raw_fetch(c, step, "x", x, S + 4096, 3);
            break;
        default:
            break;
        }
        Ftmpi__HealFetchRequest sreq = FTMPI__HEAL_FETCH_REQUEST__INIT;
        sreq.step = step;
        sreq.sums = true;
        assert_int_equal(fti_rpc_call_msg(c, FTMPI__METHOD__HEAL_FETCH, &sreq.base,
                                          &ftmpi__heal_metadata_response__descriptor, 10000,
                                          (ProtobufCMessage **)&m),
                         FT_SUCCESS);
        assert_int_equal(m->n_buffers, 3);
        for (size_t i = 0; i < m->n_buffers; i++) {
            const Ftmpi__HealBuffer *b = m->buffers[i];
            bool isx = !strcmp(b->name, "x"), isy = !strcmp(b->name, "y");
            const uint64_t *want = isx ? px : isy ? py : pz;
            assert_int_equal(b->checksum, isx ? sx : isy ? sy : sz);
            assert_int_equal(b->n_piece_sums, isx ? 3 : isy ? 1 : 0);
            for (size_t k = 0; k < b->n_piece_sums; k++)
                assert_int_equal(b->piece_sums[k], want[k]);
        }
        ftmpi__heal_metadata_response__free_unpacked(m, NULL);
    }
    fti_rpc_client_destroy(c);
    fti_rank_server_stop(srv);
    fti_heal_destroy(hs);
    free(x);
}

/* ---- mirrored buffers: a fake device ---------------------------------- */

#define DEV_LEN (3 * 4096 + 123)

struct fake_dev {
    unsigned char *mem; /* PROT_NONE outside the callbacks */
    size_t map_len;
    int outs, ins, releases;
    bool foreign_out; /* the last copy_out's flag */
    int fail_out, fail_in; /* an FT_ERR_ code to return instead of copying */
};

static void dev_open(struct fake_dev *d, int prot)
{
    assert_int_equal(mprotect(d->mem, d->map_len, prot), 0);
}

static int fake_out(void *ctx, void *mirror, const void *buf, size_t len, bool foreign)
{
    struct fake_dev *d = ctx;
    assert_ptr_equal(buf, d->mem);
    d->outs++;
    d->foreign_out = foreign;
    if (d->fail_out)
        return d->fail_out;
    dev_open(d, PROT_READ);
    memcpy(mirror, buf, len);
    dev_open(d, PROT_NONE);
    return FT_SUCCESS;
}

static int fake_in(void *ctx, void *buf, const void *src, size_t len)
{
    struct fake_dev *d = ctx;
    assert_ptr_equal(buf, d->mem);
    d->ins++;
    if (d->fail_in)
        return d->fail_in;
    dev_open(d, PROT_READ | PROT_WRITE);
    memcpy(buf, src, len);
    dev_open(d, PROT_NONE);
    return FT_SUCCESS;
}

static void fake_release(void *ctx, void *mirror)
{
    ((struct fake_dev *)ctx)->releases++;
    free(mirror);
}

/* A fake device buffer of DEV_LEN bytes filled from seed, registered as
 * "d" in h with a mirror of its own. */
static void fake_register(fti_heal_h h, struct fake_dev *d, unsigned seed)
{
    memset(d, 0, sizeof(*d));
    d->map_len = (DEV_LEN + 4095) & ~(size_t)4095;
    d->mem = mmap(NULL, d->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(d->mem != MAP_FAILED);
    for (size_t i = 0; i < DEV_LEN; i++)
        d->mem[i] = (unsigned char)(i * seed + (i >> 8));
    dev_open(d, PROT_NONE);
    fti_heal_copy_t c = {fake_out, fake_in, fake_release, d, malloc(DEV_LEN)};
    assert_non_null(c.mirror);
    assert_int_equal(fti_heal_register_copy(h, "d", d->mem, DEV_LEN, &c), FT_SUCCESS);
}

/* Do the two fake devices hold the same bytes? */
static bool fake_equal(struct fake_dev *a, struct fake_dev *b)
{
    dev_open(a, PROT_READ);
    dev_open(b, PROT_READ);
    bool eq = memcmp(a->mem, b->mem, DEV_LEN) == 0;
    dev_open(a, PROT_NONE);
    dev_open(b, PROT_NONE);
    return eq;
}

/* The SDC check's fingerprints (fti_heal_fingerprint): the heal checksum
 * of each buffer in registration order, a mirrored (device) buffer's
 * through its mirror, refreshed from the device first; a flipped byte
 * changes its sum. */
static void test_fingerprint(void **state)
{
    (void)state;
    struct fake_dev d;
    unsigned char host[N_B];
    for (int i = 0; i < N_B; i++)
        host[i] = (unsigned char)(i * 5);
    fti_heal_h h;
    assert_int_equal(fti_heal_create(&h), FT_SUCCESS);
    assert_int_equal(fti_heal_register(h, "h", host, sizeof(host)), FT_SUCCESS);
    fake_register(h, &d, 13);
    fti_heal_set_step(h, 3, true);
    uint64_t sums[4];
    const char *names[4];
    size_t n = 0;
    assert_int_equal(fti_heal_fingerprint(h, 4, sums, names, &n), FT_SUCCESS);
    assert_int_equal(n, 2);
    assert_string_equal(names[0], "h");
    assert_string_equal(names[1], "d");
    assert_true(sums[0] == fti_heal_sum(host, sizeof(host), 0));
    assert_int_equal(d.outs, 1); /* the mirror was brought up to step 3 */
    dev_open(&d, PROT_READ | PROT_WRITE);
    uint64_t dev_sum = fti_heal_sum(d.mem, DEV_LEN, 0);
    d.mem[DEV_LEN / 2] ^= 0x10; /* a flipped bit on the device */
    dev_open(&d, PROT_NONE);
    assert_true(sums[1] == dev_sum);
    fti_heal_set_step(h, 4, true);
    uint64_t again[4];
    assert_int_equal(fti_heal_fingerprint(h, 1, again, NULL, &n), FT_SUCCESS);
    assert_int_equal(n, 1); /* at most max buffers */
    assert_true(again[0] == sums[0]);
    assert_int_equal(fti_heal_fingerprint(h, 4, again, NULL, &n), FT_SUCCESS);
    assert_int_equal(d.outs, 2);
    assert_true(again[1] != sums[1]);
    /* a device copy that fails is the fingerprint's error */
    fti_heal_set_step(h, 5, true);
    d.fail_out = FT_ERR_SYSTEM;
    assert_int_equal(fti_heal_fingerprint(h, 4, again, NULL, &n), FT_ERR_SYSTEM);
    fti_heal_destroy(h);
    dev_open(&d, PROT_READ | PROT_WRITE);
    munmap(d.mem, d.map_len);
}

static void test_mirrored(void **state)
{
    (void)state;
    struct fake_dev ds, dd;
    unsigned char hs_buf[N_B], hd_buf[N_B];
    for (int i = 0; i < N_B; i++)
        hs_buf[i] = (unsigned char)(i * 3);
    memset(hd_buf, 0, sizeof(hd_buf));
    fti_heal_h hs, hd;
    fti_rank_server_h srv;
    assert_int_equal(fti_heal_create(&hs), FT_SUCCESS);
    assert_int_equal(fti_heal_create(&hd), FT_SUCCESS);
    fake_register(hs, &ds, 7);
    fake_register(hd, &dd, 11);
    assert_int_equal(fti_heal_register(hs, "h", hs_buf, sizeof(hs_buf)), FT_SUCCESS);
    assert_int_equal(fti_heal_register(hd, "h", hd_buf, sizeof(hd_buf)), FT_SUCCESS);
    fti_heal_copy_t bad = {fake_out, NULL, fake_release, &ds, hs_buf};
    assert_int_equal(fti_heal_register_copy(hs, "x", hs_buf, 1, &bad), FT_ERR_ARG);
    assert_int_equal(
        fti_rank_server_start("127.0.0.1", 1 << 20, NULL, true, fti_heal_rpc, hs, &srv),
        FT_SUCCESS);
    const char *peers[] = {fti_rank_server_address(srv)};
    assert_int_equal(fti_rank_server_set_peers(srv, peers, 1), FT_SUCCESS);
    fti_heal_opts_t o = {1000, 1 << 20, 4096 + 17, false, NULL, NULL};
    const char *addr = fti_rank_server_address(srv);

    /* served through the mirror, copied out on the loop thread once */
    fti_heal_set_step(hs, 5, true);
    assert_false(fake_equal(&ds, &dd));
    assert_int_equal(fti_heal_fetch(hd, addr, 0, 5, &o, fti_now_ms() + 5000, NULL), FT_SUCCESS);
    assert_true(fake_equal(&ds, &dd));
    assert_memory_equal(hd_buf, hs_buf, sizeof(hs_buf));
    assert_int_equal(ds.outs, 1);
    assert_true(ds.foreign_out);
    assert_int_equal(dd.ins, 1);
    assert_int_equal(fti_heal_fetch(hd, addr, 0, 5, &o, fti_now_ms() + 5000, NULL), FT_SUCCESS);
    assert_int_equal(ds.outs, 1); /* the mirror holds step 5 */

    /* a new step: fti_heal_refresh copies out on the application thread,
     * new contents go out */
    fti_heal_set_step(hs, 6, true);
    dev_open(&ds, PROT_READ | PROT_WRITE);
    ds.mem[0] ^= 0xff;
    ds.mem[DEV_LEN - 1] ^= 0x0f;
    dev_open(&ds, PROT_NONE);
    assert_int_equal(fti_heal_refresh(hs), FT_SUCCESS);
    assert_int_equal(ds.outs, 2);
    assert_false(ds.foreign_out);
    assert_false(fake_equal(&ds, &dd));
    assert_int_equal(fti_heal_fetch(hd, addr, 0, 6, &o, fti_now_ms() + 5000, NULL), FT_SUCCESS);
    assert_int_equal(ds.outs, 2);
    assert_true(fake_equal(&ds, &dd));

    /* a failed copy out: no heal, nothing of the healer changes */
    fti_heal_set_step(hs, 7, true);
    dev_open(&ds, PROT_READ | PROT_WRITE);
    ds.mem[1] ^= 0xff;
    dev_open(&ds, PROT_NONE);
    ds.fail_out = FT_ERR_SYSTEM;
    assert_int_not_equal(fti_heal_fetch(hd, addr, 0, 7, &o, fti_now_ms() + 5000, NULL),
                         FT_SUCCESS);
    assert_int_equal(dd.ins, 3);
    assert_false(fake_equal(&ds, &dd));
    ds.fail_out = 0; /* the next request tries again */
    assert_int_equal(fti_heal_fetch(hd, addr, 0, 7, &o, fti_now_ms() + 5000, NULL), FT_SUCCESS);
    assert_true(fake_equal(&ds, &dd));

    /* a failed copy in: the heal reports it */
    dd.fail_in = FT_ERR_SYSTEM;
    assert_int_equal(fti_heal_fetch(hd, addr, 0, 7, &o, fti_now_ms() + 5000, NULL),
                     FT_ERR_SYSTEM);

    /* closed: nothing copied out */
    int outs = ds.outs;
    fti_heal_set_step(hs, 8, false);
    assert_int_equal(fti_heal_refresh(hs), FT_SUCCESS);
    assert_int_equal(ds.outs, outs);

    fti_rank_server_stop(srv);
    fti_heal_destroy(hs);
    fti_heal_destroy(hd);
    assert_int_equal(ds.releases, 1);
    assert_int_equal(dd.releases, 1);
    munmap(ds.mem, ds.map_len);
    munmap(dd.mem, dd.map_len);
}

static void test_mismatch(void **state)
{
    struct fixture *f = *state;
    fti_heal_h other;
    char small[8];
    fti_heal_stats_t st;
    assert_int_equal(fti_heal_create(&other), FT_SUCCESS);
    assert_int_equal(fti_heal_register(other, "a", small, sizeof(small)), FT_SUCCESS);
    assert_int_equal(fti_heal_register(other, "b", small, sizeof(small)), FT_SUCCESS);
    fti_heal_set_step(f->src, 3, true);
    assert_int_equal(fti_heal_fetch(other, fti_rank_server_address(f->srv), 0, 3, &f->opts,
                                    fti_now_ms() + 5000, &st),
                     FT_ERR_ARG);
    fti_heal_destroy(other);
}

static void test_no_such_group_rank(void **state)
{
    struct fixture *f = *state;
    fti_heal_stats_t st;
    fti_heal_set_step(f->src, 3, true);
    assert_int_equal(fti_heal_fetch(f->dst, fti_rank_server_address(f->srv), 1, 3, &f->opts,
                                    fti_now_ms() + 5000, &st),
                     FT_ERR_PROC_FAILED);
}

static void test_kill(void **state)
{
    struct fixture *f = *state;
    fti_rpc_client_h c;
    char msg[FTI_REASON_SIZE] = "";
    assert_false(fti_rank_server_killed(f->srv, msg, sizeof(msg)));
    assert_int_equal(fti_rpc_client_create(fti_rank_server_address(f->srv), NULL, 1000, 4096, &c),
                     FT_SUCCESS);
    Ftmpi__KillRequest req = FTMPI__KILL_REQUEST__INIT;
    ProtobufCMessage *resp = NULL;
    req.msg = "stop now";
    assert_int_equal(fti_rpc_call_msg(c, FTMPI__METHOD__MANAGER_KILL, &req.base,
                                      &ftmpi__kill_response__descriptor, 2000, &resp),
                     FT_SUCCESS);
    protobuf_c_message_free_unpacked(resp, NULL);
    fti_rpc_client_destroy(c);
    assert_true(fti_rank_server_killed(f->srv, msg, sizeof(msg)));
    assert_string_equal(msg, "stop now");
}

static void test_source_gone(void **state)
{
    struct fixture *f = *state;
    fti_heal_stats_t st;
    char addr[FTI_ADDRESS_SIZE];
    fti_strlcpy(addr, fti_rank_server_address(f->srv), sizeof(addr));
    fti_rank_server_stop(f->srv);
    f->srv = NULL;
    assert_int_equal(fti_heal_fetch(f->dst, addr, 0, 3, &f->opts, fti_now_ms() + 2000, &st),
                     FT_ERR_PROC_FAILED);
    /* restart for teardown */
    assert_int_equal(
        fti_rank_server_start("127.0.0.1", 1 << 20, NULL, true, fti_heal_rpc, f->src, &f->srv),
        FT_SUCCESS);
}

/* ---- a fake source ------------------------------------------------------ */

#define FAKE_MAX_BUFS 4

/* What the fake source says and does.  It answers the manager's
 * CHECKPOINT_METADATA with its own address, HEAL_METADATA with the buffers
 * below (checksums inline, computed over data unless bad_sum), and
 * HEAL_FETCH with the bytes of the first buffer of that name.  After
 * die_after bytes of data it sends only part of the reply and then closes
 * every socket and ends (a source that died), or, with stall, stops
 * answering and keeps its sockets open until the test ends. */
struct fake {
    size_t n;
    const char *names[FAKE_MAX_BUFS];
    uint64_t lens[FAKE_MAX_BUFS];
    const unsigned char *data[FAKE_MAX_BUFS];
    int64_t step;
    int bad_sum; /* index of a buffer whose checksum is off by one; -1 none */
    uint64_t die_after;
    bool stall;
    /* run time */
    int lfd;
    char addr[FTI_ADDRESS_SIZE];
    pthread_t tid;
    atomic_bool stop; /* set by the test; the thread polls it */
    int fetches;        /* HEAL_FETCH data requests seen */
    bool bad;           /* a request the fake did not expect (checked by the test) */
    uint64_t sent;      /* data bytes sent */
    bool died;
};

/* As heal.h's wire contract: fti_heal_sum chained over pieces. */
static uint64_t fake_sum(const unsigned char *d, uint64_t len)
{
    if (len == 0)
        return fti_heal_sum(d, 0, 0);
    uint64_t sum = 0;
    for (uint64_t off = 0; off < len; off += FTI_HEAL_SUM_BYTES)
        sum = fti_heal_sum(d + off, FTI_MIN(FTI_HEAL_SUM_BYTES, len - off), sum);
    return sum;
}

/* Waits until fd is readable or the test says stop (false then). */
static bool fake_wait(struct fake *f, int fd)
{
    while (!f->stop) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 20) > 0)
            return true;
    }
    return false;
}

static bool fake_read(struct fake *f, int fd, void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        if (!fake_wait(f, fd))
            return false;
        ssize_t r = recv(fd, p, len, 0);
        if (r <= 0)
            return false;
        p += r;
        len -= (size_t)r;
    }
    return true;
}

static bool fake_write(int fd, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t r = send(fd, p, len, MSG_NOSIGNAL);
        if (r <= 0)
            return false;
        p += r;
        len -= (size_t)r;
    }
    return true;
}

static bool fake_reply_head(int fd, uint16_t method, uint32_t len)
{
    fti_rpc_header_t h = {FTI_RPC_MAGIC, FTI_RPC_F_REPLY, method, 0, len};
    uint8_t hb[FTI_RPC_HEADER_LEN];
    fti_rpc_header_encode(&h, hb);
    return fake_write(fd, hb, sizeof(hb));
}

static bool fake_reply_msg(int fd, uint16_t method, const ProtobufCMessage *msg)
{
    size_t len = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = malloc(len ? len : 1);
    if (buf == NULL)
        return false;
    protobuf_c_message_pack(msg, buf);
    bool ok = fake_reply_head(fd, method, (uint32_t)len) && fake_write(fd, buf, len);
    free(buf);
    return ok;
}

static bool fake_metadata(struct fake *f, int fd, uint16_t method)
{
    Ftmpi__HealMetadataResponse m = FTMPI__HEAL_METADATA_RESPONSE__INIT;
    Ftmpi__HealBuffer hb[FAKE_MAX_BUFS], *hbp[FAKE_MAX_BUFS];
    for (size_t i = 0; i < f->n; i++) {
        ftmpi__heal_buffer__init(&hb[i]);
        hb[i].name = (char *)f->names[i];
        hb[i].length = f->lens[i];
        hb[i].checksum = fake_sum(f->data[i], f->lens[i]) + ((int)i == f->bad_sum);
        hbp[i] = &hb[i];
    }
    m.step = f->step;
    m.n_buffers = f->n;
    m.buffers = hbp;
    return fake_reply_msg(fd, method, &m.base);
}

/* Sends the bytes a fetch asks for; false once the fake died or stalls. */
static bool fake_fetch(struct fake *f, int fd, const Ftmpi__HealFetchRequest *req)
{
    size_t i = 0;
    while (i < f->n && strcmp(f->names[i], req->name) != 0)
        i++;
    f->fetches++;
    if (i == f->n || req->offset > f->lens[i] || req->length > f->lens[i] - req->offset) {
        f->bad = true;
        return false;
    }
    uint64_t n = req->length;
    bool cut = f->sent + n > f->die_after;
    if (cut)
        n = f->die_after - f->sent; /* part of the reply, then silence */
    if (!fake_reply_head(fd, FTMPI__METHOD__HEAL_FETCH, (uint32_t)req->length) ||
        !fake_write(fd, f->data[i] + req->offset, n))
        return false;
    f->sent += n;
    if (!cut)
        return true;
    while (f->stall && !f->stop)
        fti_sleep_ms(10);
    f->died = true;
    return false;
}

/* Serves one connection until it closes; false when the fake ends. */
static bool fake_serve(struct fake *f, int fd)
{
    for (;;) {
        uint8_t hb[FTI_RPC_HEADER_LEN];
        fti_rpc_header_t h;
        if (!fake_read(f, fd, hb, sizeof(hb)))
            return !f->stop;
        fti_rpc_header_decode(hb, &h);
        uint8_t *p = h.magic == FTI_RPC_MAGIC && h.length <= (1u << 20) ? malloc(h.length + 1)
                                                                        : NULL;
        bool ok = p != NULL && fake_read(f, fd, p, h.length);
        if (ok && h.method == FTMPI__METHOD__MANAGER_CHECKPOINT_METADATA) {
            Ftmpi__CheckpointMetadataResponse r = FTMPI__CHECKPOINT_METADATA_RESPONSE__INIT;
            r.heal_address = f->addr;
            ok = fake_reply_msg(fd, h.method, &r.base);
        } else if (ok && h.method == FTMPI__METHOD__HEAL_METADATA) {
            ok = fake_metadata(f, fd, h.method);
        } else if (ok && h.method == FTMPI__METHOD__HEAL_FETCH) {
            Ftmpi__HealFetchRequest *req = ftmpi__heal_fetch_request__unpack(NULL, h.length, p);
            ok = req != NULL && (req->sums ? fake_metadata(f, fd, h.method) : fake_fetch(f, fd, req));
            if (req != NULL)
                ftmpi__heal_fetch_request__free_unpacked(req, NULL);
        } else {
            ok = false;
        }
        if (!ok && !f->died && !f->stop)
            f->bad = true; /* garbage, an unknown method, or the healer went away */
        free(p);
        if (!ok)
            return !f->died && !f->stop;
    }
}

static void *fake_main(void *arg)
{
    struct fake *f = arg;
    bool more = true;
    while (more && fake_wait(f, f->lfd)) {
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        more = fake_serve(f, fd);
        close(fd); /* a dead source: every socket closes */
    }
    close(f->lfd);
    return NULL;
}

static void fake_start(struct fake *f)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    socklen_t sl = sizeof(sa);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(f->lfd >= 0);
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(f->lfd, 8), 0);
    assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&sa, &sl), 0);
    snprintf(f->addr, sizeof(f->addr), "127.0.0.1:%u", ntohs(sa.sin_port));
    assert_int_equal(pthread_create(&f->tid, NULL, fake_main, f), 0);
}

static void fake_stop(struct fake *f)
{
    f->stop = true;
    pthread_join(f->tid, NULL);
}

/* The healer of the fake-source tests: buffers "a" (256 KiB + 5, several
 * chunks) and "b" (128 KiB + 3) full of 1s, and a copy of them to compare
 * with; the fake serves "a" and "b" full of 7s.  Small, so that a loaded
 * machine does not make the transfers meet their deadlines. */
struct torn {
    fti_heal_h h;
    uint64_t la, lb;
    unsigned char *a, *b, *a0, *b0, *a7, *b7;
    fti_heal_opts_t opts;
};

static void torn_init(struct torn *t, struct fake *f)
{
    memset(t, 0, sizeof(*t));
    t->la = (256u << 10) + 5;
    t->lb = (128u << 10) + 3;
    t->a = malloc(t->la), t->a0 = malloc(t->la), t->a7 = malloc(t->la);
    t->b = malloc(t->lb), t->b0 = malloc(t->lb), t->b7 = malloc(t->lb);
    assert_true(t->a && t->a0 && t->a7 && t->b && t->b0 && t->b7);
    memset(t->a, 1, t->la), memset(t->a7, 7, t->la);
    memset(t->b, 1, t->lb), memset(t->b7, 7, t->lb);
    memcpy(t->a0, t->a, t->la);
    memcpy(t->b0, t->b, t->lb);
    assert_int_equal(fti_heal_create(&t->h), FT_SUCCESS);
    assert_int_equal(fti_heal_register(t->h, "a", t->a, t->la), FT_SUCCESS);
    assert_int_equal(fti_heal_register(t->h, "b", t->b, t->lb), FT_SUCCESS);
    t->opts.connect_timeout_ms = 1000;
    t->opts.max_reply = 1 << 20;
    t->opts.chunk_bytes = 64u << 10;
    memset(f, 0, sizeof(*f));
    f->n = 2;
    f->names[0] = "a", f->lens[0] = t->la, f->data[0] = t->a7;
    f->names[1] = "b", f->lens[1] = t->lb, f->data[1] = t->b7;
    f->step = 30;
    f->bad_sum = -1;
    f->die_after = UINT64_MAX;
}

static void torn_free(struct torn *t)
{
    fti_heal_destroy(t->h);
    free(t->a), free(t->a0), free(t->a7);
    free(t->b), free(t->b0), free(t->b7);
}

static int torn_fetch(struct torn *t, struct fake *f, int ms, int64_t *took_p)
{
    fti_heal_stats_t st;
    fake_start(f);
    int64_t t0 = fti_now_ms();
    int rc = fti_heal_fetch(t->h, f->addr, 0, 30, &t->opts, t0 + ms, &st);
    *took_p = fti_now_ms() - t0;
    fake_stop(f);
    assert_false(f->bad);
    return rc;
}

/* The registered memory is bitwise what it was before the heal. */
static void assert_untouched(const struct torn *t)
{
    assert_memory_equal(t->a, t->a0, t->la);
    assert_memory_equal(t->b, t->b0, t->lb);
}

/* The fake itself works: a complete, correct copy heals. */
static void test_fake_source_ok(void **state)
{
    (void)state;
    struct torn t;
    struct fake f;
    int64_t took;
    torn_init(&t, &f);
    assert_int_equal(torn_fetch(&t, &f, 20000, &took), FT_SUCCESS);
    assert_memory_equal(t.a, t.a7, t.la);
    assert_memory_equal(t.b, t.b7, t.lb);
    assert_int_equal(f.sent, t.la + t.lb);
    torn_free(&t);
}

/* Metadata that does not list each registered buffer exactly once (issue
 * 10 item 7: "a" twice and no "b" used to pass, "b" was never copied and
 * the heal succeeded) is refused before any byte moves. */
static void test_metadata_not_the_registered_set(void **state)
{
    (void)state;
    struct torn t;
    struct fake f;
    int64_t took;
    torn_init(&t, &f);
    /* "a" and "b" of the same length: only the names tell them apart */
    fti_heal_destroy(t.h);
    assert_int_equal(fti_heal_create(&t.h), FT_SUCCESS);
    assert_int_equal(fti_heal_register(t.h, "a", t.a, t.la), FT_SUCCESS);
    unsigned char *b = malloc(t.la), *b0 = malloc(t.la);
    assert_true(b && b0);
    memset(b, 1, t.la), memset(b0, 1, t.la);
    assert_int_equal(fti_heal_register(t.h, "b", b, t.la), FT_SUCCESS);
    static const char *const sets[][3] = {
        {"a", "a", NULL}, /* a name twice */
        {"b", "b", NULL},
        {"a", "c", NULL}, /* a buffer not registered here */
        {"a", NULL, NULL}, /* one missing */
        {"a", "b", "c"},  /* one more */
    };
    for (size_t k = 0; k < FTI_ARRAY_SIZE(sets); k++) {
        struct fake g = f;
        g.n = 0;
        for (size_t i = 0; i < 3 && sets[k][i] != NULL; i++) {
            g.names[i] = sets[k][i];
            g.lens[i] = t.la;
            g.data[i] = t.a7;
            g.n++;
        }
        assert_int_equal(torn_fetch(&t, &g, 20000, &took), FT_ERR_ARG);
        assert_int_equal(g.fetches, 0);
        assert_memory_equal(t.a, t.a0, t.la);
        assert_memory_equal(b, b0, t.la);
    }
    free(b);
    free(b0);
    torn_free(&t);
}

/* Every byte arrives but the last buffer fails its checksum: the first,
 * complete and correct, is not installed either. */
static void test_checksum_fails_nothing_installed(void **state)
{
    (void)state;
    struct torn t;
    struct fake f;
    int64_t took;
    torn_init(&t, &f);
    f.bad_sum = 1;
    assert_int_equal(torn_fetch(&t, &f, 20000, &took), FT_ERR_CHECKSUM);
    assert_int_equal(f.sent, t.la + t.lb);
    assert_untouched(&t);
    torn_free(&t);
}

/* The source dies (closes every socket, its server gone) part way: in the
 * first chunk, at a chunk boundary, inside "b" after "a" arrived whole.
 * The heal fails within its deadline and nothing changed; the same healer
 * then heals from a source that stays. */
static void test_source_dies_mid_transfer(void **state)
{
    (void)state;
    struct torn t;
    struct fake f;
    int64_t took;
    torn_init(&t, &f);
    const uint64_t spots[] = {0, 4096, 64u << 10, t.la + 12345, t.la + t.lb - 1};
    for (size_t k = 0; k < FTI_ARRAY_SIZE(spots); k++) {
        struct fake g = f;
        g.die_after = spots[k];
        int rc = torn_fetch(&t, &g, 20000, &took);
        assert_int_equal(rc, FT_ERR_PROC_FAILED);
        assert_true(g.died);
        assert_int_equal(g.sent, spots[k]);
        assert_true(took < 20000 + 1000);
        assert_untouched(&t);
    }
    assert_int_equal(torn_fetch(&t, &f, 20000, &took), FT_SUCCESS);
    assert_memory_equal(t.a, t.a7, t.la);
    assert_memory_equal(t.b, t.b7, t.lb);
    torn_free(&t);
}

/* The source stops answering in the middle of a reply and keeps its
 * socket open (frozen): FT_ERR_TIMEOUT at the deadline, nothing changed. */
static void test_source_stalls(void **state)
{
    (void)state;
    struct torn t;
    struct fake f;
    int64_t took;
    torn_init(&t, &f);
    f.die_after = t.la + 1000; /* "a" whole, then silence */
    f.stall = true;
    assert_int_equal(torn_fetch(&t, &f, 1500, &took), FT_ERR_TIMEOUT);
    assert_true(took >= 1400);
    assert_true(took < 1500 + 1000);
    assert_untouched(&t);
    torn_free(&t);
}

/* opts.direct: the bytes land in the registered memory itself (staging
 * nothing): the staged copy is already in place before the install. */
static void test_direct_in_place(void **state)
{
    (void)state;
    struct torn t;
    struct fake f;
    torn_init(&t, &f);
    t.opts.direct = true;
    fake_start(&f);
    fti_heal_staged_h staged = NULL;
    fti_heal_stats_t st;
    int rc = fti_heal_stage(t.h, f.addr, 0, 30, &t.opts, fti_now_ms() + 20000, &staged, &st);
    fake_stop(&f);
    assert_int_equal(rc, FT_SUCCESS);
    assert_false(st.torn);
    assert_memory_equal(t.a, t.a7, t.la); /* before the install */
    assert_memory_equal(t.b, t.b7, t.lb);
    assert_true(fti_heal_install(t.h, staged) >= 0);
    assert_memory_equal(t.a, t.a7, t.la);
    torn_free(&t);
}

/* A direct heal of t from fake g (a copy of the test's fake), from the
 * original state: its code, and whether it reported the memory torn. */
static int direct_fetch(struct torn *t, struct fake *g, bool *torn_p)
{
    fti_heal_stats_t st;
    memcpy(t->a, t->a0, t->la);
    memcpy(t->b, t->b0, t->lb);
    fake_start(g);
    int rc = fti_heal_fetch(t->h, g->addr, 0, 30, &t->opts, fti_now_ms() + 20000, &st);
    fake_stop(g);
    *torn_p = st.torn;
    return rc;
}

/* opts.direct, the source dies part way or sends a bad checksum: the heal
 * fails and says the registered memory is torn (the bytes that landed are
 * the source's); refused before any fetch, nothing changed and not torn. */
static void test_direct_torn(void **state)
{
    (void)state;
    struct torn t;
    struct fake f;
    bool torn;
    torn_init(&t, &f);
    t.opts.direct = true;

    struct fake g = f;
    g.die_after = t.la + 12345; /* "a" whole, part of "b" */
    assert_int_equal(direct_fetch(&t, &g, &torn), FT_ERR_PROC_FAILED);
    assert_true(torn);
    assert_memory_equal(t.a, t.a7, t.la);

    g = f;
    g.bad_sum = 1;
    assert_int_equal(direct_fetch(&t, &g, &torn), FT_ERR_CHECKSUM);
    assert_true(torn);

    g = f;
    g.step = 31; /* metadata of another step: dropped before any fetch */
    assert_int_not_equal(direct_fetch(&t, &g, &torn), FT_SUCCESS);
    assert_false(torn);
    assert_int_equal(g.fetches, 0);
    assert_untouched(&t);
    torn_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stage_then_discard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stage_then_install, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stage_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_served, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_served_nothing_registered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_step_or_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_checksum, setup, teardown),
        cmocka_unit_test(test_big_buffer),
        cmocka_unit_test(test_sums_whatever_was_sent),
        cmocka_unit_test(test_mirrored),
        cmocka_unit_test(test_fingerprint),
        cmocka_unit_test_setup_teardown(test_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_such_group_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_gone, setup, teardown),
        cmocka_unit_test(test_fake_source_ok),
        cmocka_unit_test(test_direct_in_place),
        cmocka_unit_test(test_direct_torn),
        cmocka_unit_test(test_metadata_not_the_registered_set),
        cmocka_unit_test(test_checksum_fails_nothing_installed),
        cmocka_unit_test(test_source_dies_mid_transfer),
        cmocka_unit_test(test_source_stalls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
