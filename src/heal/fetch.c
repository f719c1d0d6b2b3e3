/* heal/fetch.c - fetching the state of a step from its sources, striped
 * over all of them, into staging memory, and installing it (see heal.h). */
#include "heal/heal.h"
#include "control/message.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "ftmpi_errors.h"
#include "heal/heal_int.h"
#include "heal/stripe.h"
#include "base/log.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/util.h"

/* A fetch reports its progress every this many bytes, and the fetching
 * thread sums them while they are still in its cache (frontier_advance).
 * Measured here (tests/bench/bench_heal, one source, 1 GiB, XXH3): summing
 * whole 8 MiB ranges after they arrived, on a thread of their own, read
 * them back from memory beside the transfer (heal 472 ms against 403 ms of
 * raw TCP); steps of 4 MiB, 1 MiB: 536, 500 ms; 256, 128, 64 KiB: 421,
 * 400, 414 ms. */
#define HEAL_LAND_STEP ((size_t)128 << 10)

struct landing {
    struct stripe *sp;
    struct stripe_range *r;
};

static void frontier_advance(struct stripe *sp, const struct stripe_range *only);

/* fti_rpc_call_into_cb's progress: publishes the bytes of the range in
 * place and, when the frontier is in this range, sums them on this thread
 * while they are in its cache. */
static void fetch_landed(void *arg, size_t done)
{
    struct landing *l = arg;
    pthread_mutex_lock(&l->sp->mu);
    l->r->landed = done;
    frontier_advance(l->sp, l->r);
    pthread_mutex_unlock(&l->sp->mu);
}

/* Fetches range r from w into the staging memory.  Logs its failure. */
static int fetch_range(struct stripe *sp, struct stripe_src *w, struct stripe_range *r)
{
    const struct heal_stage *s = &sp->stage[r->buf];
    int left = fti_ms_left(sp->deadline_ms);
    if (left <= 0) {
        FTI_WARN("heal: deadline passed fetching '%s' [%zu, +%zu) from %s", s->b->name, r->off,
                 r->len, w->addr);
        return FT_ERR_TIMEOUT;
    }
    Ftmpi__HealFetchRequest req = FTMPI__HEAL_FETCH_REQUEST__INIT;
    req.name = (char *)s->b->name;
    req.offset = r->off;
    req.length = r->len;
    req.step = sp->step;
    /* a name of at most FTI_HEAL_MAX_NAME bytes plus four small fields */
    uint8_t rbuf[FTI_HEAL_MAX_NAME + 64];
    size_t rlen = ftmpi__heal_fetch_request__get_packed_size(&req);
    if (rlen > sizeof(rbuf)) {
        FTI_ERROR("heal: fetch request of '%s' packs to %zu bytes", s->b->name, rlen);
        return FT_ERR_INTERNAL;
    }
    ftmpi__heal_fetch_request__pack(&req, rbuf);
    struct landing l = {sp, r};
    if (w->rma != NULL)
        return fti_heal_rma_fetch(sp, w, r, fetch_landed, &l);
    int rc = fti_rpc_call_into_cb(w->c, FTMPI__METHOD__HEAL_FETCH, rbuf, rlen, left,
                                  s->data + r->off, r->len, HEAL_LAND_STEP, fetch_landed, &l);
    if (rc != FT_SUCCESS)
        FTI_WARN("heal: fetching '%s' [%zu, +%zu) from %s failed: %s; dropped as a source",
                 s->b->name, r->off, r->len, w->addr, FT_Error_string(rc));
    return rc;
}

/* The first range w may take (mutex held): to do, not failed with w, and
 * its staging pages populated (*later: such a range waits for them). */
static struct stripe_range *next_range_locked(struct stripe *sp, const struct stripe_src *w,
                                              bool *later)
{
    uint32_t me = 1u << w->idx;
    *later = false;
    for (size_t i = 0; i < sp->n_r; i++) {
        if (sp->r[i].state == R_TODO && !(sp->r[i].tried & me) &&
            (sp->r[i].pin < 0 || sp->r[i].pin == w->idx)) {
            if (i < sp->pop_upto)
                return &sp->r[i];
            *later = true;
            return NULL;
        }
    }
    return NULL;
}

/* A heal that takes longer than HEAL_PROGRESS_MS says how far it is every
 * HEAL_PROGRESS_MS (bytes, rate, time left), at the default level: a user
 * waiting on a restarted group sees it move.  Mutex held. */
#define HEAL_PROGRESS_MS 5000
static void progress_locked(struct stripe *sp, size_t len)
{
    uint64_t total = 0;
    sp->done_bytes += len;
    int64_t now = fti_now_ms();
    if (now < sp->next_progress_ms)
        return;
    sp->next_progress_ms = now + HEAL_PROGRESS_MS;
    for (size_t i = 0; i < sp->n_r; i++)
        total += sp->r[i].len;
    double s = (double)(now - sp->t0_ms) / 1000.0;
    double rate = s > 0 ? (double)sp->done_bytes / s : 0; /* bytes/s */
    double left = rate > 0 ? (double)(total - FTI_MIN(total, sp->done_bytes)) / rate : -1;
    FTI_WARN("heal progress: %" PRIu64 " of %" PRIu64 " bytes (%.0f%%) in %.1f s, %.1f MB/s, "
             "about %.0f s left",
             sp->done_bytes, total, total ? 100.0 * (double)sp->done_bytes / (double)total : 100.0,
             s, rate / 1e6, left);
}

/* Source w's share of the ranges: until none is left for it and none is
 * in flight (a range in flight may still come back), or w fails. */
static void fetch_loop(struct stripe *sp, struct stripe_src *w)
{
    pthread_mutex_lock(&sp->mu);
    while (!w->dead && !sp->stop) {
        bool later;
        struct stripe_range *r = next_range_locked(sp, w, &later);
        if (r == NULL && !later && sp->busy == 0)
            break;
        if (r == NULL) {
            pthread_cond_wait(&sp->cv, &sp->mu);
            continue;
        }
        r->state = R_BUSY;
        r->landed = 0;
        sp->busy++;
        sp->touched |= sp->stage[r->buf].direct;
        pthread_mutex_unlock(&sp->mu);
        int rc = fetch_range(sp, w, r);
        pthread_mutex_lock(&sp->mu);
        sp->busy--;
        if (rc == FT_SUCCESS) {
            r->state = R_DONE;
            r->src = w->idx;
            w->bytes += r->len;
            progress_locked(sp, r->len);
        } else {
            r->state = R_TODO;
            r->landed = 0;
            r->tried |= 1u << w->idx;
            fti_heal_src_dead_locked(w, rc);
        }
        pthread_cond_broadcast(&sp->cv);
    }
    pthread_mutex_unlock(&sp->mu);
}

/* A source's thread: opens it (first round), fetches its share, and asks
 * for its checksums (first round: the reply completes the copy there). */
static void *src_main(void *arg)
{
    struct stripe_src *w = arg;
    struct stripe *sp = w->sp;
    if (w->c == NULL) {
        int rc = fti_heal_src_open(sp, w);
        pthread_mutex_lock(&sp->mu);
        if (rc != FT_SUCCESS)
            fti_heal_src_dead_locked(w, rc);
        while (!w->dead && !sp->ready && !sp->stop)
            pthread_cond_wait(&sp->cv, &sp->mu);
        pthread_mutex_unlock(&sp->mu);
    }
    fetch_loop(sp, w);
    pthread_mutex_lock(&sp->mu);
    bool ask = !w->dead && !sp->stop && sp->sums_phase && w->sums == NULL;
    pthread_mutex_unlock(&sp->mu);
    if (ask) {
        /* checked as they arrive: sources that sent unusable ones never
         * vote (verify.c's sums_reference reads only checked sums) */
        Ftmpi__HealMetadataResponse *sums = NULL;
        bool bad = false;
        int rc = fti_heal_src_sums(w->c, sp->step, sp->deadline_ms, &sums);
        if (rc == FT_SUCCESS) {
            pthread_mutex_lock(&sp->h->mu);
            rc = fti_heal_check_sums(sp->h, sums, sp->step, w->addr);
            pthread_mutex_unlock(&sp->h->mu);
            if (rc != FT_SUCCESS) {
                bad = true;
                ftmpi__heal_metadata_response__free_unpacked(sums, NULL);
                sums = NULL;
            }
        }
        pthread_mutex_lock(&sp->mu);
        if (rc == FT_SUCCESS)
            w->sums = sums;
        else
            fti_heal_src_dead_locked(w, rc);
        w->bad_sums = bad;
        pthread_mutex_unlock(&sp->mu);
    }
    return NULL;
}

/* Moves the frontier over the bytes in place, summing them in order
 * (chain[k] after each piece, sum after each buffer), unless another
 * thread is at it.  Mutex held (released while summing).  only: a fetching
 * thread sums within its own range only (bytes it just received, in its
 * cache), and leaves the rest to the frontier thread (NULL), which it wakes
 * when it leaves (the thread also wakes when a range completes). */
static void frontier_advance(struct stripe *sp, const struct stripe_range *only)
{
    bool moved = false;
    while (!sp->fr.busy && !sp->fr.done && !sp->stop) {
        if (sp->fr.buf == sp->n_stage) {
            sp->fr.done = true;
            break;
        }
        struct heal_stage *s = &sp->stage[sp->fr.buf];
        if (s->n_pieces == 0) { /* empty */
            s->sum = fti_heal_sum(s->data, 0, 0);
            sp->fr.buf++;
            continue;
        }
        const struct stripe_range *r = &sp->r[sp->fr.ri];
        if (r->buf < sp->fr.buf || sp->fr.pos >= r->off + r->len) {
            sp->fr.ri++;
            continue;
        }
        size_t avail = r->off + (r->state == R_DONE ? r->len : r->state == R_BUSY ? r->landed : 0);
        if (only != NULL && r != only) {
            if (moved) /* the rest is the frontier thread's */
                pthread_cond_broadcast(&sp->cv);
            break;
        }
        if (avail <= sp->fr.pos)
            break;
        size_t lo = sp->fr.pos, k = sp->fr.k;
        size_t end = FTI_MIN(avail, FTI_MIN((k + 1) * FTI_HEAL_SUM_BYTES, s->b->len));
        sp->fr.busy = true;
        pthread_mutex_unlock(&sp->mu);
        (void)XXH3_64bits_update(sp->fr.xs, s->data + lo, end - lo);
        pthread_mutex_lock(&sp->mu);
        sp->fr.busy = false;
        moved = true;
        sp->fr.pos = end;
        if (end == FTI_MIN((k + 1) * FTI_HEAL_SUM_BYTES, s->b->len)) { /* piece k summed */
            s->chain[k] = XXH3_64bits_digest(sp->fr.xs);
            (void)XXH3_64bits_reset_withSeed(sp->fr.xs, s->chain[k]);
            sp->fr.k++;
            if (sp->fr.k == s->n_pieces) {
                s->sum = s->chain[k];
                sp->fr.buf++;
                sp->fr.pos = sp->fr.k = 0;
                (void)XXH3_64bits_reset_withSeed(sp->fr.xs, 0);
            }
        }
    }
    if (sp->fr.done || (moved && only == NULL))
        pthread_cond_broadcast(&sp->cv);
}

/* The frontier thread: sums what the fetching threads leave (bytes that
 * landed while the frontier was behind), until every piece is summed
 * (chain[k]), so that a clean copy is verified by the time the last range
 * is in.  A range fetched again after a failure may change bytes already
 * summed: its piece then fails the chain and verify_stage sums it again.
 * Stops when sp->stop is set. */
static void *frontier_main(void *arg)
{
    struct stripe *sp = arg;
    pthread_mutex_lock(&sp->mu);
    for (;;) {
        frontier_advance(sp, NULL);
        if (sp->fr.done || sp->stop)
            break;
        pthread_cond_wait(&sp->cv, &sp->mu);
    }
    pthread_mutex_unlock(&sp->mu);
    return NULL;
}

/* Publishes that ranges below upto have their pages (SIZE_MAX: all). */
static void populated(struct stripe *sp, size_t upto)
{
    pthread_mutex_lock(&sp->mu);
    sp->pop_upto = upto;
    pthread_cond_broadcast(&sp->cv);
    pthread_mutex_unlock(&sp->mu);
}

/* Populates the staging pages of each range in order, ahead of the fetch,
 * which takes only ranges already populated: the socket reads never fault
 * (that made a heal of 512 MiB twice as slow), and the first fetch waits
 * for one range's pages, not the whole state's.  MADV_POPULATE_WRITE where
 * the kernel has it, else an atomic "or 0" on every page (it never changes
 * a byte).  Stops when sp->stop is set. */
static void *stage_populate(void *arg)
{
    struct stripe *sp = arg;
    long page = sysconf(_SC_PAGESIZE);
    size_t pg = page > 0 ? (size_t)page : 4096;
    bool madv = true;
    for (size_t j = 0; j < sp->n_r; j++) {
        const struct stripe_range *r = &sp->r[j];
        const struct heal_stage *s = &sp->stage[r->buf];
        pthread_mutex_lock(&sp->mu);
        bool stop = sp->stop;
        pthread_mutex_unlock(&sp->mu);
        if (stop)
            break;
        if (!s->mapped)
            continue;
        size_t lo = r->off / pg * pg, hi = FTI_MIN((r->off + r->len + pg - 1) / pg * pg, s->b->len);
#ifdef MADV_POPULATE_WRITE
        /* the mapping's length is a whole number of pages to the kernel */
        size_t mhi = (r->off + r->len + pg - 1) / pg * pg;
        if (madv && madvise(s->data + lo, mhi - lo, MADV_POPULATE_WRITE) == 0) {
            populated(sp, j + 1);
            continue;
        }
#endif
        madv = false;
        for (size_t p = lo; p < hi; p += pg)
            __atomic_fetch_or(s->data + p, 0, __ATOMIC_RELAXED);
        populated(sp, j + 1);
    }
    populated(sp, SIZE_MAX);
    return NULL;
}

/* Cuts the staged buffers into ranges of chunk bytes (built apart, then
 * published under the mutex: a source that dies meanwhile reads them). */
static int ranges_make(struct stripe *sp, size_t chunk)
{
    size_t n = 0, k = 0;
    for (size_t i = 0; i < sp->n_stage; i++)
        n += (sp->stage[i].b->len + chunk - 1) / chunk;
    struct stripe_range *r = calloc(n ? n : 1, sizeof(*r));
    XXH3_state_t *xs = XXH3_createState();
    if (r == NULL || xs == NULL) {
        FTI_ERROR("heal: out of memory for %zu ranges", n);
        free(r);
        XXH3_freeState(xs);
        return FT_ERR_NO_MEMORY;
    }
    (void)XXH3_64bits_reset_withSeed(xs, 0);
    for (size_t i = 0; i < sp->n_stage; i++) {
        size_t len = sp->stage[i].b->len;
        for (size_t off = 0; off < len; off += chunk)
            r[k++] = (struct stripe_range){i, off, FTI_MIN(chunk, len - off), R_TODO, -1, 0, -1, 0};
    }
    pthread_mutex_lock(&sp->mu);
    sp->r = r;
    sp->n_r = k;
    memset(&sp->fr, 0, sizeof(sp->fr));
    sp->fr.xs = xs;
    pthread_mutex_unlock(&sp->mu);
    return FT_SUCCESS;
}


/* Starts a round: a thread per live source (the first round also opens
 * them); stripe_join waits for them.  With no source left, the code of
 * the failure; FT_ERR_NO_MEMORY when not one thread starts. */
static int stripe_round(struct stripe *sp)
{
    int started = 0, live = 0;
    for (int j = 0; j < sp->n_src; j++) {
        struct stripe_src *w = &sp->src[j];
        if (w->dead)
            continue;
        live++;
        w->joinable = pthread_create(&w->tid, NULL, src_main, w) == 0;
        if (!w->joinable)
            fti_heal_src_dead(w, FT_ERR_NO_MEMORY);
        started += w->joinable;
    }
    if (live == 0)
        return fti_heal_stripe_code(sp);
    return started > 0 ? FT_SUCCESS : FT_ERR_NO_MEMORY;
}

static void stripe_join(struct stripe *sp)
{
    for (int j = 0; j < sp->n_src; j++) {
        if (sp->src[j].joinable)
            pthread_join(sp->src[j].tid, NULL);
        sp->src[j].joinable = false;
    }
}

/* ---- the heal ------------------------------------------------------------ */

/* A complete, verified copy waiting for fti_heal_install (see heal.h). */
struct fti_heal_staged {
    struct heal_stage *stage; /* n entries, in registration order */
    size_t n;
};

/* The first round: opens the sources while the staging memory is mapped,
 * fetches every range, sums the pieces as they arrive, and asks each
 * source for its checksums. */
static int stripe_first(struct stripe *sp, size_t chunk)
{
    int rc = stripe_round(sp);
    if (rc == FT_SUCCESS)
        rc = fti_heal_stage_alloc(sp->h, sp->opts->direct, &sp->stage, &sp->n_stage, &sp->was_open);
    sp->closed = rc == FT_SUCCESS && sp->opts->direct;
    if (rc == FT_SUCCESS)
        rc = ranges_make(sp, chunk);
    pthread_t ftid, ptid;
    bool frontier = rc == FT_SUCCESS && pthread_create(&ftid, NULL, frontier_main, sp) == 0;
    bool mapped = false; /* direct buffers have their pages: no thread for them */
    for (size_t i = 0; frontier && i < sp->n_stage; i++)
        mapped |= sp->stage[i].mapped;
    bool populator = mapped && pthread_create(&ptid, NULL, stage_populate, sp) == 0;
    if (!populator)
        populated(sp, SIZE_MAX); /* the fetch faults the pages in */
    if (rc == FT_SUCCESS && !frontier) {
        FTI_ERROR("heal: no thread to verify the stripes");
        rc = FT_ERR_NO_MEMORY;
    }
    pthread_mutex_lock(&sp->mu);
    sp->ready = rc == FT_SUCCESS;
    sp->stop = rc != FT_SUCCESS;
    pthread_cond_broadcast(&sp->cv);
    pthread_mutex_unlock(&sp->mu);
    stripe_join(sp);
    if (rc == FT_SUCCESS && !fti_heal_stripe_all_done(sp)) {
        pthread_mutex_lock(&sp->mu);
        sp->stop = true;
        pthread_cond_broadcast(&sp->cv);
        pthread_mutex_unlock(&sp->mu);
        rc = fti_heal_stripe_code(sp);
    }
    if (frontier)
        pthread_join(ftid, NULL);
    if (populator)
        pthread_join(ptid, NULL);
    return rc;
}

/* Fetches the whole state of the step from the sources into sp->stage
 * and verifies it, fetching failed pieces again while a source is left. */
static int stripe_fetch(struct stripe *sp, size_t chunk)
{
    int bad = 0;
    int rc = stripe_first(sp, chunk);
    if (rc == FT_SUCCESS)
        rc = fti_heal_stripe_verify(sp, true, &bad);
    sp->sums_phase = false;
    while (rc == FT_SUCCESS && !fti_heal_stripe_all_done(sp)) {
        rc = stripe_round(sp);
        stripe_join(sp);
        if (rc == FT_SUCCESS && !fti_heal_stripe_all_done(sp))
            rc = fti_heal_stripe_code(sp);
        if (rc == FT_SUCCESS)
            rc = fti_heal_stripe_verify(sp, false, &bad);
    }
    return rc;
}

static void stripe_free(struct stripe *sp)
{
    for (int j = 0; j < sp->n_src; j++) {
        struct stripe_src *w = &sp->src[j];
        fti_rpc_client_destroy(w->c);
        if (w->rma != NULL)
            sp->opts->rma->disconnect(w->rma);
        if (w->sums != NULL && w->sums != w->m)
            ftmpi__heal_metadata_response__free_unpacked(w->sums, NULL);
        if (w->m != NULL)
            ftmpi__heal_metadata_response__free_unpacked(w->m, NULL);
    }
    free(sp->src);
    free(sp->r);
    XXH3_freeState(sp->fr.xs);
    fti_heal_stage_free(sp->stage, sp->n_stage);
    pthread_cond_destroy(&sp->cv);
    pthread_mutex_destroy(&sp->mu);
}

/* Sets up sp for a heal from n sources (at most 32: one bit each). */
static int stripe_init(struct stripe *sp, struct fti_heal *h, const char *const *managers, int n,
                       int group_rank, int64_t step, const fti_heal_opts_t *opts,
                       int64_t deadline_ms)
{
    memset(sp, 0, sizeof(*sp));
    pthread_mutex_init(&sp->mu, NULL);
    pthread_cond_init(&sp->cv, NULL);
    sp->h = h;
    sp->group_rank = group_rank;
    sp->step = step;
    sp->deadline_ms = deadline_ms;
    sp->t0_ms = fti_now_ms();
    sp->next_progress_ms = sp->t0_ms + HEAL_PROGRESS_MS;
    sp->opts = opts;
    sp->sums_phase = true;
    sp->src = calloc((size_t)n, sizeof(*sp->src));
    if (sp->src == NULL) {
        FTI_ERROR("heal: out of memory for %d sources", n);
        return FT_ERR_NO_MEMORY;
    }
    sp->n_src = n;
    for (int j = 0; j < n; j++)
        sp->src[j] = (struct stripe_src){.sp = sp, .idx = j, .manager = managers[j]};
    return FT_SUCCESS;
}

int fti_heal_stage_multi(fti_heal_h h, const char *const *src_managers, int n_src, int group_rank,
                         int64_t step, const fti_heal_opts_t *opts, int64_t deadline_ms,
                         fti_heal_staged_h *staged_p, fti_heal_stats_t *stats)
{
    int64_t t0 = fti_now_ms();
    fti_heal_stats_t st = {.bytes = 0};
    struct fti_heal_staged *staged = NULL;
    size_t chunk = opts->chunk_bytes ? opts->chunk_bytes : FTI_HEAL_CHUNK_BYTES;
    struct stripe sp;
    if (n_src < 1 || n_src > FTI_HEAL_MAX_SOURCES || src_managers == NULL) {
        if (stats != NULL)
            *stats = st;
        return FT_ERR_ARG;
    }
    int rc = stripe_init(&sp, h, src_managers, n_src, group_rank, step, opts, deadline_ms);
    if (rc == FT_SUCCESS)
        rc = stripe_fetch(&sp, chunk);
    st.refetched = sp.refetched;
    st.torn = rc != FT_SUCCESS && sp.touched;
    if (rc != FT_SUCCESS && sp.closed && !sp.touched) {
        /* direct, failed before a byte landed: serve the old state again */
        pthread_mutex_lock(&h->mu);
        h->open = sp.was_open;
        pthread_mutex_unlock(&h->mu);
    }
    for (int j = 0; j < sp.n_src; j++) {
        st.bytes += sp.src[j].bytes;
        st.sources += sp.src[j].bytes > 0;
        st.rma_sources += sp.src[j].bytes > 0 && sp.src[j].rma != NULL;
    }
    /* the first source that delivered bytes, else the first one reached */
    for (int j = 0; j < sp.n_src && st.source[0] == '\0'; j++)
        if (sp.src[j].bytes > 0)
            fti_strlcpy(st.source, sp.src[j].addr, sizeof(st.source));
    for (int j = 0; j < sp.n_src && st.source[0] == '\0'; j++)
        fti_strlcpy(st.source, sp.src[j].addr, sizeof(st.source));
    if (rc == FT_SUCCESS && (staged = malloc(sizeof(*staged))) == NULL) {
        FTI_ERROR("heal: out of memory keeping the staged copy");
        rc = FT_ERR_NO_MEMORY;
    }
    if (rc == FT_SUCCESS) {
        *staged = (struct fti_heal_staged){sp.stage, sp.n_stage};
        sp.stage = NULL;
    }
    stripe_free(&sp);
    rc = fti_heal_code(rc);
    st.ms = fti_now_ms() - t0;
    if (rc == FT_SUCCESS) {
        FTI_DEBUG("heal: step %" PRId64 " staged from %d of %d sources (%s first, %d over %s): "
                  "%" PRIu64 " bytes in %" PRId64 " ms",
                  step, st.sources, n_src, st.source, st.rma_sources,
                  opts->rma != NULL ? opts->rma->name : "-", st.bytes, st.ms);
        *staged_p = staged;
    }
    if (stats != NULL)
        *stats = st;
    return rc;
}

int fti_heal_stage(fti_heal_h h, const char *src_manager, int group_rank, int64_t step,
                   const fti_heal_opts_t *opts, int64_t deadline_ms, fti_heal_staged_h *staged_p,
                   fti_heal_stats_t *stats)
{
    return fti_heal_stage_multi(h, &src_manager, 1, group_rank, step, opts, deadline_ms, staged_p,
                                stats);
}

int64_t fti_heal_install(fti_heal_h h, fti_heal_staged_h staged)
{
    int64_t t0 = fti_now_ms();
    int rc = fti_heal_stage_install(h, staged->stage, staged->n);
    fti_heal_discard(staged);
    return rc != FT_SUCCESS ? (int64_t)rc : fti_now_ms() - t0;
}

void fti_heal_discard(fti_heal_staged_h staged)
{
    if (staged == NULL)
        return;
    fti_heal_stage_free(staged->stage, staged->n);
    free(staged);
}

int fti_heal_fetch(fti_heal_h h, const char *src_manager, int group_rank, int64_t step,
                   const fti_heal_opts_t *opts, int64_t deadline_ms, fti_heal_stats_t *stats)
{
    int64_t t0 = fti_now_ms();
    fti_heal_staged_h staged = NULL;
    fti_heal_stats_t st;
    int rc = fti_heal_stage(h, src_manager, group_rank, step, opts, deadline_ms, &staged, &st);
    if (rc == FT_SUCCESS) {
        st.install_ms = fti_heal_install(h, staged);
        if (st.install_ms < 0) {
            rc = (int)st.install_ms;
            st.install_ms = 0;
        }
    }
    if (rc == FT_SUCCESS) {
        st.ms = fti_now_ms() - t0;
        FTI_INFO("heal: step %" PRId64 " healed from %s: %" PRIu64 " bytes in %" PRId64
                 " ms (install %" PRId64 " ms)",
                 step, st.source, st.bytes, st.ms, st.install_ms);
    }
    if (stats != NULL)
        *stats = st;
    return rc;
}
