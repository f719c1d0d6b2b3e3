/* heal/serve.c - serving the registered state and fetching it from a peer (see
 * heal.h). */
#include "heal/heal.h"
#include "control/message.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <xxhash.h>

#include "ftmpi_config.h" /* FTMPI_TEST_HOOKS */
#include "ftmpi_errors.h"
#include "heal/heal_int.h"
#include "heal/stripe.h"
#include "base/log.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/util.h"

int fti_heal_create(fti_heal_h *h_p)
{
    struct fti_heal *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return FT_ERR_NO_MEMORY;
    pthread_condattr_t ca;
    pthread_mutex_init(&h->mu, NULL);
    pthread_mutex_init(&h->mirror_mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->served_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&h->sum_cv, NULL);
    if ((h->cur_xs = XXH3_createState()) == NULL) {
        fti_heal_destroy(h);
        return FT_ERR_NO_MEMORY;
    }
    h->gen = 1;
#ifdef FTMPI_TEST_HOOKS /* configure --enable-test-hooks only: see heal_int.h */
    const char *corrupt = getenv("FTMPI_TEST_HEAL_CORRUPT");
    const char *colon = corrupt != NULL ? strrchr(corrupt, ':') : NULL;
    if (colon != NULL && colon > corrupt && (size_t)(colon - corrupt) < sizeof(h->corrupt_name)) {
        memcpy(h->corrupt_name, corrupt, (size_t)(colon - corrupt));
        h->corrupt_at = strcmp(colon + 1, "*") == 0 ? UINT64_MAX : strtoull(colon + 1, NULL, 10);
        FTI_WARN("heal: FTMPI_TEST_HEAL_CORRUPT: serving byte %" PRIu64 " of '%s' flipped",
                 h->corrupt_at, h->corrupt_name);
    }
    const char *delay = getenv("FTMPI_TEST_HEAL_SERVE_DELAY_MS");
    h->serve_delay_ms = delay != NULL ? atoi(delay) : 0;
    const char *gdelay = getenv("FTMPI_TEST_HEAL_GET_DELAY_MS");
    h->get_delay_ms = gdelay != NULL ? atoi(gdelay) : 0;
    if (h->serve_delay_ms > 0)
        FTI_WARN("heal: FTMPI_TEST_HEAL_SERVE_DELAY_MS: every fetch reply waits %d ms",
                 h->serve_delay_ms);
#endif
    *h_p = h;
    return FT_SUCCESS;
}

void fti_heal_destroy(fti_heal_h h)
{
    if (h == NULL)
        return;
    if (h->sum_thread) { /* left behind by the generation: it stops within a step */
        pthread_mutex_lock(&h->mu);
        h->gen++;
        pthread_cond_broadcast(&h->sum_cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->sum_tid, NULL);
    }
    if (h->rma != NULL)
        h->rma->release();
    for (size_t i = 0; i < h->n; i++) {
        struct heal_buf *b = h->bufs[i];
        if (b->copy.release != NULL)
            b->copy.release(b->copy.ctx, b->copy.mirror);
        free(b->piece_sums);
        free(b);
    }
    free(h->bufs);
    XXH3_freeState(h->cur_xs);
    pthread_cond_destroy(&h->sum_cv);
    pthread_cond_destroy(&h->served_cv);
    pthread_mutex_destroy(&h->mirror_mu);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

static struct heal_buf *find_locked(struct fti_heal *h, const char *name)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->bufs[i]->name, name) == 0)
            return h->bufs[i];
    return NULL;
}

int fti_heal_register(fti_heal_h h, const char *name, void *buf, size_t len)
{
    return fti_heal_register_copy(h, name, buf, len, NULL);
}

int fti_heal_register_copy(fti_heal_h h, const char *name, void *buf, size_t len,
                           const fti_heal_copy_t *copy)
{
    if (name == NULL || name[0] == '\0' || strlen(name) >= FTI_HEAL_MAX_NAME ||
        (buf == NULL && len > 0))
        return FT_ERR_ARG;
    if (copy != NULL && (copy->copy_out == NULL || copy->copy_in == NULL ||
                         (copy->mirror == NULL && len > 0)))
        return FT_ERR_ARG;
    struct heal_buf *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return FT_ERR_NO_MEMORY;
    fti_strlcpy(b->name, name, sizeof(b->name));
    b->n_pieces = (len + FTI_HEAL_SUM_BYTES - 1) / FTI_HEAL_SUM_BYTES;
    if (b->n_pieces > 0 && (b->piece_sums = calloc(b->n_pieces, sizeof(uint64_t))) == NULL) {
        free(b);
        return FT_ERR_NO_MEMORY;
    }
    b->user = buf;
    b->data = copy != NULL ? copy->mirror : buf;
    b->len = len;
    if (copy != NULL)
        b->copy = *copy;

    int rc = FT_SUCCESS;
    pthread_mutex_lock(&h->mu);
    if (find_locked(h, name) != NULL) {
        rc = FT_ERR_EXISTS;
    } else if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 8;
        struct heal_buf **nb = realloc(h->bufs, cap * sizeof(*nb));
        if (nb == NULL) {
            rc = FT_ERR_NO_MEMORY;
        } else {
            h->bufs = nb;
            h->cap = cap;
        }
    }
    if (rc == FT_SUCCESS)
        h->bufs[h->n++] = b;
    pthread_mutex_unlock(&h->mu);
    if (rc != FT_SUCCESS) {
        free(b->piece_sums);
        free(b);
    }
    return rc;
}

void fti_heal_totals(fti_heal_h h, size_t *count_p, uint64_t *bytes_p)
{
    uint64_t bytes = 0;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->n; i++)
        bytes += h->bufs[i]->len;
    *count_p = h->n;
    pthread_mutex_unlock(&h->mu);
    *bytes_p = bytes;
}

void fti_heal_set_step(fti_heal_h h, int64_t step, bool open)
{
    pthread_mutex_lock(&h->mu);
    h->step = step;
    h->open = open;
    h->gen++;
    h->served = 0;
    pthread_cond_broadcast(&h->sum_cv); /* a summing thread of the old one stops */
    pthread_mutex_unlock(&h->mu);
}

/* Copies every mirror that does not hold generation gen yet out of its
 * buffer (any thread; foreign on the loop thread), one refresh at a time.
 * FT_ERR_STATE when the generation changes meanwhile (the application may
 * be changing its buffers: what was copied is not marked), else the first
 * copy_out error (logged by copy_out). */
static int mirrors_refresh(struct fti_heal *h, uint64_t gen, bool foreign)
{
    int rc = FT_SUCCESS;
    pthread_mutex_lock(&h->mirror_mu);
    for (size_t i = 0; rc == FT_SUCCESS; i++) {
        pthread_mutex_lock(&h->mu);
        struct heal_buf *b = i < h->n ? h->bufs[i] : NULL;
        if (h->gen != gen)
            rc = FT_ERR_STATE;
        pthread_mutex_unlock(&h->mu);
        if (b == NULL || rc != FT_SUCCESS)
            break;
        if (b->copy.copy_out == NULL || b->mirror_gen == gen || b->len == 0)
            continue;
        rc = b->copy.copy_out(b->copy.ctx, b->copy.mirror, b->user, b->len, foreign);
        pthread_mutex_lock(&h->mu);
        if (rc == FT_SUCCESS && h->gen != gen)
            rc = FT_ERR_STATE;
        if (rc == FT_SUCCESS)
            b->mirror_gen = gen;
        pthread_mutex_unlock(&h->mu);
    }
    pthread_mutex_unlock(&h->mirror_mu);
    return rc;
}

int fti_heal_refresh(fti_heal_h h)
{
    pthread_mutex_lock(&h->mu);
    bool open = h->open;
    uint64_t gen = h->gen;
    int64_t step = h->step;
    pthread_mutex_unlock(&h->mu);
    if (!open)
        return FT_SUCCESS;
    int64_t t0 = fti_now_ms();
    int rc = mirrors_refresh(h, gen, false);
    FTI_DEBUG("heal: mirrors of step %" PRId64 " refreshed in %" PRId64 " ms: %s", step,
              fti_now_ms() - t0, FT_Error_string(rc));
    return rc;
}

/* Is buffer b ready to be served in generation gen (mutex held)? */
static bool mirror_ready_locked(const struct heal_buf *b, uint64_t gen)
{
    return b->copy.copy_out == NULL || b->len == 0 || b->mirror_gen == gen;
}

/* Counts a complete copy of generation gen (any thread, mutex not held). */
static void count_served(struct fti_heal *h, uint64_t gen)
{
    pthread_mutex_lock(&h->mu);
    if (h->gen == gen) {
        h->served++;
        pthread_cond_broadcast(&h->served_cv);
    }
    pthread_mutex_unlock(&h->mu);
}

int fti_heal_wait_served(fti_heal_h h, int n, int64_t deadline_ms)
{
    int rc = FT_SUCCESS;
    pthread_mutex_lock(&h->mu);
    while (h->served < n) {
        int left = fti_ms_left(deadline_ms);
        if (left <= 0) {
            rc = FT_ERR_TIMEOUT;
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (long)(left % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&h->served_cv, &h->mu, &ts);
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

uint64_t fti_heal_sum(const void *data, size_t len, uint64_t seed)
{
    return XXH3_64bits_withSeed(data, len, seed);
}

/* ---- summing ----------------------------------------------------------- */

/* The checksums of a served step are chained XXH3 over FTI_HEAL_SUM_BYTES
 * pieces, in buffer order, summed once per generation by a cursor that
 * any of three places moves, one at a time:
 *  - the loop thread, right after a send of a fetch reply took bytes at
 *    the cursor (fetch_sent): the bytes were just read by the kernel's
 *    copy and are still in this CPU's cache, so summing them costs a
 *    fifth of reading them again from memory, and a heal from one source
 *    sums nothing else;
 *  - the summing thread (from the step's first metadata request), for what
 *    the sending passed by: ranges this source is not asked for (a healer
 *    striping over several sources fetches them elsewhere) and bytes sent
 *    while it held the cursor;
 *  - the checksum request (sums_finish), which has the thread sum the rest.
 * Each gives up once the generation changes (the application may be
 * changing the memory then). */

/* The unit the summing thread moves the cursor by, so that the sending
 * takes it back soon once the thread has caught up. */
#define SUM_COLD_STEP ((size_t)1 << 20)

/* Positions in the stream of a step's buffers: (buffer index, offset). */
static bool pos_before(size_t b1, size_t o1, size_t b2, size_t o2)
{
    return b1 < b2 || (b1 == b2 && o1 < o2);
}

/* The cursor of generation gen (mutex held): reset when it holds an
 * older one. */
static void cursor_of_locked(struct fti_heal *h, uint64_t gen)
{
    if (h->cur_gen == gen)
        return;
    h->cur_gen = gen;
    h->cur_buf = h->cur_off = 0;
    (void)XXH3_64bits_reset_withSeed(h->cur_xs, 0);
}

/* Whether every buffer is summed for gen (mutex held, cursor of gen). */
static bool cursor_done_locked(const struct fti_heal *h)
{
    return h->cur_buf >= h->n;
}

/* Moves the cursor of gen up to (tb, toff) (tb == SIZE_MAX: the end), at
 * most `step` bytes at a time with the mutex released while summing,
 * unless another thread holds it.  Mutex held.  Piece and buffer sums are
 * stored as the cursor passes them. */
static void cursor_advance_locked(struct fti_heal *h, uint64_t gen, size_t tb, size_t toff,
                                  size_t step)
{
    if (h->gen != gen || h->cur_busy)
        return;
    cursor_of_locked(h, gen);
    while (h->gen == gen && !cursor_done_locked(h) &&
           pos_before(h->cur_buf, h->cur_off, tb, toff)) {
        struct heal_buf *b = h->bufs[h->cur_buf];
        size_t lo = h->cur_off;
        size_t pe = FTI_MIN((lo / FTI_HEAL_SUM_BYTES + 1) * FTI_HEAL_SUM_BYTES, b->len);
        size_t end = pe - lo > step ? lo + step : pe;
        if (h->cur_buf == tb)
            end = FTI_MIN(end, toff);
        if (end > lo) {
            h->cur_busy = true;
            pthread_mutex_unlock(&h->mu);
            (void)XXH3_64bits_update(h->cur_xs, b->data + lo, end - lo);
            pthread_mutex_lock(&h->mu);
            h->cur_busy = false;
            if (h->gen != gen)
                break; /* the next generation resets the cursor */
            h->cur_off = end;
        }
        if (h->cur_off == pe) { /* a piece (or an empty buffer) is summed */
            uint64_t sum = XXH3_64bits_digest(h->cur_xs);
            if (b->n_pieces > 0)
                b->piece_sums[(pe - 1) / FTI_HEAL_SUM_BYTES] = sum;
            (void)XXH3_64bits_reset_withSeed(h->cur_xs, sum);
            if (pe == b->len) {
                b->sum = sum;
                b->sum_gen = gen;
                h->cur_buf++;
                h->cur_off = 0;
                (void)XXH3_64bits_reset_withSeed(h->cur_xs, 0);
            }
        }
    }
    pthread_cond_broadcast(&h->sum_cv);
}

/* Where the summing thread of gen is to bring the cursor (mutex held):
 * the end when hurried, else the furthest of what was sent and where the
 * furthest fetch asked for started. */
static void thread_target_locked(const struct fti_heal *h, uint64_t gen, size_t *tb, size_t *toff)
{
    *tb = 0;
    *toff = 0;
    if (h->sum_hurry) {
        *tb = SIZE_MAX;
    } else if (h->pos_gen == gen) {
        *tb = h->sent_buf;
        *toff = h->sent_off;
        if (pos_before(*tb, *toff, h->asked_buf, h->asked_off)) {
            *tb = h->asked_buf;
            *toff = h->asked_off;
        }
    }
}

struct sum_job {
    struct fti_heal *h;
    uint64_t gen;
};

/* The summing thread of generation j->gen: until the generation changes,
 * or it was hurried and everything is summed. */
static void *sum_main(void *arg)
{
    struct sum_job *j = arg;
    struct fti_heal *h = j->h;
    uint64_t gen = j->gen;
    free(j);
    pthread_mutex_lock(&h->mu);
    while (h->gen == gen) {
        cursor_of_locked(h, gen);
        if (cursor_done_locked(h) && h->sum_hurry)
            break;
        size_t tb, toff;
        thread_target_locked(h, gen, &tb, &toff);
        if (!h->cur_busy && !cursor_done_locked(h) &&
            pos_before(h->cur_buf, h->cur_off, tb, toff))
            cursor_advance_locked(h, gen, tb, toff, SUM_COLD_STEP);
        else
            pthread_cond_wait(&h->sum_cv, &h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Records that a fetch reply of gen was sent up to (bi, off) and sums
 * the bytes there if the cursor is among them (loop thread: fetch_sent),
 * or that a fetch starting at (bi, off) was asked for (sent false). */
static void sums_note(struct fti_heal *h, uint64_t gen, size_t bi, size_t from, size_t off,
                      bool sent)
{
    pthread_mutex_lock(&h->mu);
    if (h->gen == gen) {
        if (h->pos_gen != gen) {
            h->pos_gen = gen;
            h->sent_buf = h->sent_off = h->asked_buf = h->asked_off = 0;
        }
        size_t *pb = sent ? &h->sent_buf : &h->asked_buf, *po = sent ? &h->sent_off : &h->asked_off;
        if (pos_before(*pb, *po, bi, off)) {
            *pb = bi;
            *po = off;
        }
        cursor_of_locked(h, gen);
        if (sent && !h->cur_busy && h->cur_buf == bi && h->cur_off >= from && h->cur_off < off)
            cursor_advance_locked(h, gen, bi, off, SIZE_MAX); /* in the cache: sum here */
        else
            pthread_cond_broadcast(&h->sum_cv); /* the thread may have bytes to catch up */
    }
    pthread_mutex_unlock(&h->mu);
}

/* Starts the summing thread of generation gen, unless one already runs
 * (loop thread).  A thread of an older generation is joined first: it
 * stops within a step.  Without a thread the sums are computed when
 * asked for. */
static void sums_start(struct fti_heal *h, uint64_t gen)
{
    if (h->sum_thread && h->sum_for == gen)
        return;
    if (h->sum_thread) {
        pthread_join(h->sum_tid, NULL);
        h->sum_thread = false;
    }
    struct sum_job *j = malloc(sizeof(*j));
    if (j == NULL)
        return;
    j->h = h;
    j->gen = gen;
    pthread_mutex_lock(&h->mu);
    h->sum_hurry = false;
    pthread_mutex_unlock(&h->mu);
    if (pthread_create(&h->sum_tid, NULL, sum_main, j) != 0) {
        free(j);
        return;
    }
    h->sum_thread = true;
    h->sum_for = gen;
}

/* Has the summing thread of gen sum the rest and joins it, then sums what
 * is left on this thread (loop thread: no thread, or it stopped). */
static void sums_finish(struct fti_heal *h, uint64_t gen)
{
    pthread_mutex_lock(&h->mu);
    h->sum_hurry = true;
    pthread_cond_broadcast(&h->sum_cv);
    pthread_mutex_unlock(&h->mu);
    if (h->sum_thread) {
        pthread_join(h->sum_tid, NULL);
        h->sum_thread = false;
    }
    pthread_mutex_lock(&h->mu);
    cursor_advance_locked(h, gen, SIZE_MAX, 0, SIZE_MAX);
    pthread_mutex_unlock(&h->mu);
}

/* ---- serving (loop thread) --------------------------------------------- */

/* Sends reply_buffers' answer: the n buffers hbp of step (generation gen),
 * with their checksums when with_sums. */
static void send_buffers(struct fti_heal *h, fti_rpc_call_h call, int64_t step, uint64_t gen,
                         Ftmpi__HealBuffer **hbp, size_t n, bool with_sums, ProtobufCBinaryData ucx)
{
    Ftmpi__HealMetadataResponse resp = FTMPI__HEAL_METADATA_RESPONSE__INIT;
    resp.ucx_address = ucx;
    resp.step = step;
    resp.committed_batches = 0;
    resp.n_buffers = n;
    resp.buffers = hbp;
    resp.sums_deferred = !with_sums;
    FTI_DEBUG("heal: %s of step %" PRId64 " (%zu buffers) to %s",
              with_sums ? "checksums" : "metadata", step, n, fti_rpc_call_peer(call));
    if (fti_rpc_reply_msg(call, &resp.base) == FT_SUCCESS && with_sums)
        count_served(h, gen); /* the healer has everything: the copy is complete */
}

/* Replies with the step's buffers: names and lengths, and the checksums
 * when with_sums (computed now if missing; the reply then completes a
 * copy), else sums_deferred.  Refuses a step other than `want`. */
static void reply_buffers(struct fti_heal *h, fti_rpc_call_h call, int64_t want, bool with_sums,
                          bool ucx)
{
    ProtobufCBinaryData ua = {0, NULL};
    pthread_mutex_lock(&h->mu);
    int64_t step = h->step;
    bool open = h->open;
    uint64_t gen = h->gen;
    uint64_t total = 0;
    for (size_t i = 0; i < h->n; i++)
        total += h->bufs[i]->len;
    pthread_mutex_unlock(&h->mu);

    if (!open || step != want) {
        char msg[FTI_REASON_SIZE];
        snprintf(msg, sizeof(msg), "state of step %" PRId64 " requested, serving %s%" PRId64,
                 want, open ? "step " : "nothing (closed) at step ", step);
        FTI_INFO("heal: refused %s to %s: %s", with_sums ? "checksums" : "metadata",
                 fti_rpc_call_peer(call), msg);
        fti_rpc_reply_error(call, FT_ERR_STATE, msg);
        return;
    }
    /* a mirror is copied out once per step, before its bytes or sums go out */
    int mrc = mirrors_refresh(h, gen, true);
    if (mrc != FT_SUCCESS) { /* copy_out logged its failure */
        const char *why = mrc == FT_ERR_STATE ? "the step ended while its state was copied out"
                                              : "its state could not be copied out";
        FTI_INFO("heal: refused step %" PRId64 " to %s: %s", step, fti_rpc_call_peer(call), why);
        fti_rpc_reply_error(call, FT_ERR_STATE, why);
        return;
    }
    /* nothing to stream: the sums are trivial and this reply ends the copy */
    if (total == 0)
        with_sums = true;
    if (with_sums)
        sums_finish(h, gen);
    else
        sums_start(h, gen); /* sums while the bytes stream */

    pthread_mutex_lock(&h->mu);
    size_t n = h->n;
    bool stale = h->gen != gen;
    Ftmpi__HealBuffer *hb = n ? calloc(n, sizeof(*hb)) : NULL;
    Ftmpi__HealBuffer **hbp = n ? calloc(n, sizeof(*hbp)) : NULL;
    /* the names are copied: a registration may move the list meanwhile */
    char(*names)[FTI_HEAL_MAX_NAME] = n ? malloc(n * sizeof(*names)) : NULL;
    bool nomem = n > 0 && (hb == NULL || hbp == NULL || names == NULL);
    for (size_t i = 0; !nomem && !stale && i < n; i++) {
        struct heal_buf *b = h->bufs[i];
        ftmpi__heal_buffer__init(&hb[i]);
        memcpy(names[i], b->name, sizeof(names[i]));
        hb[i].name = names[i];
        hb[i].length = b->len;
        if (with_sums) {
            if (b->sum_gen != gen)
                stale = true;
            hb[i].checksum = b->sum;
            /* written only by summing, which is done for gen (sums_finish) */
            hb[i].n_piece_sums = b->n_pieces;
            hb[i].piece_sums = b->piece_sums;
        }
        hbp[i] = &hb[i];
    }
    pthread_mutex_unlock(&h->mu);

    if (nomem) {
        fti_rpc_reply_error(call, FT_ERR_NO_MEMORY, "out of memory");
    } else if (stale) {
        fti_rpc_reply_error(call, FT_ERR_STATE, "the step ended while its checksums were computed");
    } else if (!ucx || fti_heal_rma_serve(h, hb, n, &ua) == FT_SUCCESS) {
        send_buffers(h, call, step, gen, hbp, n, with_sums, ua);
    } else { /* logged */
        fti_rpc_reply_error(call, FT_ERR_SYSTEM, "the state could not be exposed over ucx");
    }
    free(names);
    free(hbp);
    free(hb);
}

static void serve_metadata(struct fti_heal *h, fti_rpc_call_h call, const uint8_t *payload,
                           size_t len)
{
    Ftmpi__HealMetadataRequest *req = (Ftmpi__HealMetadataRequest *)fti_rpc_unpack(
        &ftmpi__heal_metadata_request__descriptor, payload, len);
    if (req == NULL) {
        fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "HealMetadataRequest does not decode");
        return;
    }
    int64_t want = req->step;
    bool ucx = req->ucx && h->rma != NULL;
    ftmpi__heal_metadata_request__free_unpacked(req, NULL);
    reply_buffers(h, call, want, false, ucx);
}

/* A fetch reply on its way: bytes [off, +len) of buffer bi in generation
 * gen, sent from `bad` when not NULL (a corrupted copy, test only). */
struct fetch_reply {
    struct fti_heal *h;
    uint64_t gen;
    size_t bi, off;
    unsigned char *bad;
};

/* The reply's first n bytes are in the socket (loop thread): they are
 * summed here if the cursor is among them, from the registered memory
 * (never from a corrupted copy). */
static void fetch_sent(void *arg, size_t n)
{
    struct fetch_reply *f = arg;
    sums_note(f->h, f->gen, f->bi, f->off, f->off + n, true);
}

/* Called once the bytes of a fetch reply are sent (or its connection is
 * gone): the registered memory belongs to the application, nothing to do
 * but free a corrupted copy (test only). */
static void fetch_done(void *arg)
{
    struct fetch_reply *f = arg;
    free(f->bad);
    free(f);
}

/* Test only (FTMPI_TEST_HEAL_CORRUPT): a copy of [ptr, +len), the bytes
 * of b from offset off, with the chosen byte flipped when it lies inside
 * (with "*": its first byte);
 * NULL when it does not (or no memory). */
static unsigned char *corrupt_copy(const struct fti_heal *h, const struct heal_buf *b,
                                   const unsigned char *ptr, uint64_t off, uint64_t len)
{
    bool all = h->corrupt_at == UINT64_MAX; /* "NAME:*": every reply's first byte */
    if (h->corrupt_name[0] == '\0' || strcmp(h->corrupt_name, b->name) != 0 || len == 0 ||
        (!all && (h->corrupt_at < off || h->corrupt_at >= off + len)))
        return NULL;
    unsigned char *copy = malloc(len);
    if (copy != NULL) {
        memcpy(copy, ptr, len);
        copy[all ? 0 : h->corrupt_at - off] ^= 0x5a;
    }
    return copy;
}

static void serve_fetch(struct fti_heal *h, fti_rpc_call_h call, const uint8_t *payload,
                        size_t len)
{
    Ftmpi__HealFetchRequest *req = (Ftmpi__HealFetchRequest *)fti_rpc_unpack(
        &ftmpi__heal_fetch_request__descriptor, payload, len);
    if (req == NULL) {
        fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "HealFetchRequest does not decode");
        return;
    }
    if (req->sums) {
        int64_t want = req->step;
        ftmpi__heal_fetch_request__free_unpacked(req, NULL);
        reply_buffers(h, call, want, true, false);
        return;
    }
    const unsigned char *ptr = NULL;
    int status = FT_SUCCESS;
    char msg[FTI_HEAL_MAX_NAME + 96] = "";

    pthread_mutex_lock(&h->mu);
    struct heal_buf *b = req->name ? find_locked(h, req->name) : NULL;
    uint64_t gen = h->gen;
    size_t bi = 0;
    while (b != NULL && h->bufs[bi] != b)
        bi++;
    if (!h->open || h->step != req->step) {
        status = FT_ERR_STATE;
        snprintf(msg, sizeof(msg), "step %" PRId64 " requested, serving %s%" PRId64, req->step,
                 h->open ? "step " : "nothing (closed) at step ", h->step);
    } else if (b == NULL) {
        status = FT_ERR_NOT_FOUND;
        snprintf(msg, sizeof(msg), "no buffer named '%.255s'", req->name ? req->name : "");
    } else if (!mirror_ready_locked(b, h->gen)) {
        status = FT_ERR_STATE;
        snprintf(msg, sizeof(msg), "'%.200s' of step %" PRId64 " not copied out yet", b->name,
                 h->step);
    } else if (req->offset > b->len || req->length > b->len - req->offset ||
               req->length > UINT32_MAX) {
        status = FT_ERR_ARG;
        snprintf(msg, sizeof(msg), "range [%" PRIu64 ", +%" PRIu64 ") outside '%.200s'",
                 req->offset, req->length, b->name);
    } else {
        ptr = b->data + req->offset;
    }
    pthread_mutex_unlock(&h->mu);

    if (status != FT_SUCCESS) {
        FTI_INFO("heal: refused fetch from %s: %s", fti_rpc_call_peer(call), msg);
        fti_rpc_reply_error(call, status, msg);
    } else {
        if (h->serve_delay_ms > 0) {
            /* marks a fetch in flight: the healer waits for this reply now */
            FTI_DEBUG("heal: test delay of %d ms before '%s' [%" PRIu64 ", +%" PRIu64 ") to %s",
                      h->serve_delay_ms, b->name, req->offset, req->length,
                      fti_rpc_call_peer(call));
            struct timespec ts = {h->serve_delay_ms / 1000, (h->serve_delay_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        sums_note(h, gen, bi, 0, req->offset, false);
        unsigned char *bad = corrupt_copy(h, b, ptr, req->offset, req->length);
        struct fetch_reply *f = malloc(sizeof(*f));
        if (f == NULL) { /* unwatched: the summing thread sums these bytes */
            fti_rpc_reply_ref(call, bad != NULL ? bad : ptr, (size_t)req->length, free, bad);
        } else {
            *f = (struct fetch_reply){h, gen, bi, req->offset, bad};
            fti_rpc_reply_ref_watch(call, bad != NULL ? bad : ptr, (size_t)req->length,
                                    fetch_done, fetch_sent, f);
        }
    }
    ftmpi__heal_fetch_request__free_unpacked(req, NULL);
}

void fti_heal_rpc(void *h, fti_rpc_call_h call, uint16_t method, const uint8_t *payload,
                  size_t len)
{
    fti_heal_handle(h, call, method, payload, len);
}

void fti_heal_handle(fti_heal_h h, fti_rpc_call_h call, uint16_t method, const uint8_t *payload,
                     size_t len)
{
    switch (method) {
    case FTMPI__METHOD__HEAL_METADATA:
        serve_metadata(h, call, payload, len);
        break;
    case FTMPI__METHOD__HEAL_FETCH:
        serve_fetch(h, call, payload, len);
        break;
    default:
        fti_rpc_reply_error(call, FT_ERR_UNSUPPORTED, "not a heal method");
        break;
    }
}

