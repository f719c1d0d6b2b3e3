/* heal.c - serving the registered state and fetching it from a peer (see
 * heal.h). */
#include "heal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftmpi.h"
#include "log.h"
#include "proto/ftmpi.pb-c.h"
#include "util.h"

/* Cap of a manager's CHECKPOINT_METADATA reply. */
#define HEAL_MANAGER_MAX_REPLY (64u << 10)

struct heal_buf {
    char name[FTI_HEAL_MAX_NAME];
    unsigned char *data;
    size_t len;
    /* checksum cache, guarded by the registry's mutex */
    uint64_t sum;
    uint64_t sum_gen; /* generation it was computed for; 0 = none */
};

struct fti_heal {
    pthread_mutex_t mu;
    pthread_cond_t served_cv; /* CLOCK_MONOTONIC; signalled when served grows */
    struct heal_buf **bufs;   /* entries never move once registered */
    size_t n, cap;
    int64_t step;
    bool open;
    uint64_t gen;    /* bumped by every fti_heal_set_step */
    int served;      /* complete copies handed out in this generation */
    /* the summing thread (started and joined on the loop thread only) */
    pthread_t sum_tid;
    bool sum_thread;   /* sum_tid is to be joined */
    uint64_t sum_for;  /* the generation it sums */
};

int fti_heal_create(fti_heal_h *h_p)
{
    struct fti_heal *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return FT_ERR_NO_MEMORY;
    pthread_condattr_t ca;
    pthread_mutex_init(&h->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->served_cv, &ca);
    pthread_condattr_destroy(&ca);
    h->gen = 1;
    *h_p = h;
    return FT_SUCCESS;
}

void fti_heal_destroy(fti_heal_h h)
{
    if (h == NULL)
        return;
    if (h->sum_thread) /* the generation is left behind: it stops soon */
        pthread_join(h->sum_tid, NULL);
    for (size_t i = 0; i < h->n; i++)
        free(h->bufs[i]);
    free(h->bufs);
    pthread_cond_destroy(&h->served_cv);
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
    if (name == NULL || name[0] == '\0' || strlen(name) >= FTI_HEAL_MAX_NAME ||
        (buf == NULL && len > 0))
        return FT_ERR_ARG;
    struct heal_buf *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return FT_ERR_NO_MEMORY;
    fti_strlcpy(b->name, name, sizeof(b->name));
    b->data = buf;
    b->len = len;

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
    if (rc != FT_SUCCESS)
        free(b);
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
    pthread_mutex_unlock(&h->mu);
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

/* The checksum of a buffer: fti_checksum64 chained over pieces of
 * FTI_HEAL_SUM_BYTES (each piece's sum seeds the next), so that the healer
 * can verify each piece as soon as it has arrived while the next streams
 * in (see struct verifier).  An empty buffer sums as fti_checksum64 of
 * nothing. */
static uint64_t heal_sum(const unsigned char *data, size_t len)
{
    if (len == 0)
        return fti_checksum64(data, 0, 0);
    uint64_t sum = 0;
    for (size_t off = 0; off < len; off += FTI_HEAL_SUM_BYTES)
        sum = fti_checksum64(data + off, FTI_MIN(FTI_HEAL_SUM_BYTES, len - off), sum);
    return sum;
}

/* ---- serving (loop thread) --------------------------------------------- */

/* Computes and caches the checksum of every buffer for generation gen that
 * lacks one, piece by piece, giving up as soon as the generation changes
 * (the application may be changing the memory then).  Any thread; the
 * contents are read without the mutex, as the fetches read them. */
static void sum_all(struct fti_heal *h, uint64_t gen)
{
    for (size_t i = 0;; i++) {
        pthread_mutex_lock(&h->mu);
        struct heal_buf *b = h->gen == gen && i < h->n ? h->bufs[i] : NULL;
        bool need = b != NULL && b->sum_gen != gen;
        pthread_mutex_unlock(&h->mu);
        if (b == NULL)
            return;
        if (!need)
            continue;
        uint64_t sum = 0;
        if (b->len == 0)
            sum = heal_sum(b->data, 0);
        for (size_t off = 0; off < b->len; off += FTI_HEAL_SUM_BYTES) {
            sum = fti_checksum64(b->data + off, FTI_MIN(FTI_HEAL_SUM_BYTES, b->len - off), sum);
            pthread_mutex_lock(&h->mu);
            bool stale = h->gen != gen;
            pthread_mutex_unlock(&h->mu);
            if (stale)
                return;
        }
        pthread_mutex_lock(&h->mu);
        if (h->gen == gen) {
            b->sum = sum;
            b->sum_gen = gen;
        }
        pthread_mutex_unlock(&h->mu);
    }
}

struct sum_job {
    struct fti_heal *h;
    uint64_t gen;
};

static void *sum_main(void *arg)
{
    struct sum_job *j = arg;
    sum_all(j->h, j->gen);
    free(j);
    return NULL;
}

/* Starts summing generation gen on a thread of its own, unless one already
 * does (loop thread).  A thread of an older generation is joined first: it
 * stops within one piece.  Without a thread the sums are computed when
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
    if (pthread_create(&h->sum_tid, NULL, sum_main, j) != 0) {
        free(j);
        return;
    }
    h->sum_thread = true;
    h->sum_for = gen;
}

/* Waits for the summing thread of gen and completes what it left (loop
 * thread). */
static void sums_finish(struct fti_heal *h, uint64_t gen)
{
    if (h->sum_thread) {
        pthread_join(h->sum_tid, NULL);
        h->sum_thread = false;
    }
    sum_all(h, gen);
}

/* Replies with the step's buffers: names and lengths, and the checksums
 * when with_sums (computed now if missing; the reply then completes a
 * copy), else sums_deferred.  Refuses a step other than `want`. */
static void reply_buffers(struct fti_heal *h, fti_rpc_call_h call, int64_t want, bool with_sums)
{
    pthread_mutex_lock(&h->mu);
    int64_t step = h->step;
    bool open = h->open;
    uint64_t gen = h->gen;
    uint64_t total = 0;
    for (size_t i = 0; i < h->n; i++)
        total += h->bufs[i]->len;
    pthread_mutex_unlock(&h->mu);

    if (!open || step != want) {
        char msg[128];
        snprintf(msg, sizeof(msg), "state of step %" PRId64 " requested, serving %s%" PRId64,
                 want, open ? "step " : "nothing (closed) at step ", step);
        FTI_INFO("heal: refused %s to %s: %s", with_sums ? "checksums" : "metadata",
                 fti_rpc_call_peer(call), msg);
        fti_rpc_reply_error(call, FT_ERR_STATE, msg);
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
        }
        hbp[i] = &hb[i];
    }
    pthread_mutex_unlock(&h->mu);

    if (nomem) {
        fti_rpc_reply_error(call, FT_ERR_NO_MEMORY, "out of memory");
    } else if (stale) {
        fti_rpc_reply_error(call, FT_ERR_STATE, "the step ended while its checksums were computed");
    } else {
        Ftmpi__HealMetadataResponse resp = FTMPI__HEAL_METADATA_RESPONSE__INIT;
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
    free(names);
    free(hbp);
    free(hb);
}

static void serve_metadata(struct fti_heal *h, fti_rpc_call_h call, const uint8_t *payload,
                           size_t len)
{
    Ftmpi__HealMetadataRequest *req = ftmpi__heal_metadata_request__unpack(NULL, len, payload);
    if (req == NULL) {
        fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "HealMetadataRequest does not decode");
        return;
    }
    int64_t want = req->step;
    ftmpi__heal_metadata_request__free_unpacked(req, NULL);
    reply_buffers(h, call, want, false);
}

/* Called once the bytes of a fetch reply are sent (or its connection is
 * gone): the registered memory belongs to the application, nothing to do. */
static void fetch_done(void *arg)
{
    (void)arg;
}

static void serve_fetch(struct fti_heal *h, fti_rpc_call_h call, const uint8_t *payload,
                        size_t len)
{
    Ftmpi__HealFetchRequest *req = ftmpi__heal_fetch_request__unpack(NULL, len, payload);
    if (req == NULL) {
        fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "HealFetchRequest does not decode");
        return;
    }
    if (req->sums) {
        int64_t want = req->step;
        ftmpi__heal_fetch_request__free_unpacked(req, NULL);
        reply_buffers(h, call, want, true);
        return;
    }
    const unsigned char *ptr = NULL;
    int status = FT_SUCCESS;
    char msg[FTI_HEAL_MAX_NAME + 96] = "";

    pthread_mutex_lock(&h->mu);
    struct heal_buf *b = req->name ? find_locked(h, req->name) : NULL;
    if (!h->open || h->step != req->step) {
        status = FT_ERR_STATE;
        snprintf(msg, sizeof(msg), "step %" PRId64 " requested, serving %s%" PRId64, req->step,
                 h->open ? "step " : "nothing (closed) at step ", h->step);
    } else if (b == NULL) {
        status = FT_ERR_NOT_FOUND;
        snprintf(msg, sizeof(msg), "no buffer named '%.255s'", req->name ? req->name : "");
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
        fti_rpc_reply_ref(call, ptr, (size_t)req->length, fetch_done, NULL);
    }
    ftmpi__heal_fetch_request__free_unpacked(req, NULL);
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

/* ---- fetching (application thread) ------------------------------------- */

/* Maps a failure of the source onto the codes heal reports. */
static int heal_code(int rc)
{
    switch (rc) {
    case FT_SUCCESS:
    case FT_ERR_TIMEOUT:
    case FT_ERR_CHECKSUM:
    case FT_ERR_ARG:
    case FT_ERR_NO_MEMORY:
        return rc;
    default:
        return FT_ERR_PROC_FAILED;
    }
}

/* Asks the source's manager for the heal address of group_rank. */
static int heal_address(const char *src_manager, int group_rank, const fti_heal_opts_t *o,
                        int64_t deadline_ms, char *addr, size_t addrlen)
{
    fti_rpc_client_h c = NULL;
    int rc = fti_rpc_client_create(src_manager, o->connect_timeout_ms, HEAL_MANAGER_MAX_REPLY,
                                   &c);
    if (rc != FT_SUCCESS) {
        FTI_WARN("heal: bad source manager address '%s'", src_manager);
        return rc;
    }
    Ftmpi__CheckpointMetadataRequest req = FTMPI__CHECKPOINT_METADATA_REQUEST__INIT;
    Ftmpi__CheckpointMetadataResponse *resp = NULL;
    req.group_rank = group_rank;
    rc = fti_rpc_call_msg(c, FTMPI__METHOD__MANAGER_CHECKPOINT_METADATA, &req.base,
                          &ftmpi__checkpoint_metadata_response__descriptor,
                          fti_ms_left(deadline_ms), (ProtobufCMessage **)&resp);
    fti_rpc_client_destroy(c);
    if (rc != FT_SUCCESS) {
        FTI_WARN("heal: manager %s did not give the heal address of group rank %d: %s",
                 src_manager, group_rank, FT_Error_string(rc));
        return rc;
    }
    if (resp->heal_address == NULL || resp->heal_address[0] == '\0' ||
        fti_strlcpy(addr, resp->heal_address, addrlen) != 0) {
        FTI_WARN("heal: manager %s sent an unusable heal address", src_manager);
        rc = FT_ERR_BAD_MESSAGE;
    }
    ftmpi__checkpoint_metadata_response__free_unpacked(resp, NULL);
    return rc;
}

/* Checks the source's buffers against ours: same set of names, same
 * lengths. */
static int heal_check(struct fti_heal *h, const Ftmpi__HealMetadataResponse *m)
{
    if (m->n_buffers != h->n) {
        FTI_ERROR("heal: the source registered %zu buffers, this rank %zu", m->n_buffers, h->n);
        return FT_ERR_ARG;
    }
    for (size_t i = 0; i < m->n_buffers; i++) {
        const Ftmpi__HealBuffer *sb = m->buffers[i];
        struct heal_buf *b = sb && sb->name ? find_locked(h, sb->name) : NULL;
        if (b == NULL) {
            FTI_ERROR("heal: the source's buffer '%s' is not registered here",
                      sb && sb->name ? sb->name : "?");
            return FT_ERR_ARG;
        }
        if (sb->length != b->len) {
            FTI_ERROR("heal: buffer '%s' has %" PRIu64 " bytes at the source, %zu here", b->name,
                      sb->length, b->len);
            return FT_ERR_ARG;
        }
    }
    return FT_SUCCESS;
}

/* Verifies a buffer piece by piece on its own thread while the fetch
 * goes on: the fetching thread publishes how many bytes have arrived
 * (verifier_advance), the verifier sums each complete piece of
 * FTI_HEAL_SUM_BYTES as soon as it is there, so only the last piece is
 * summed after the transfer. */
struct verifier {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const unsigned char *data;
    size_t len;
    size_t avail;  /* bytes arrived, guarded by mu */
    bool stop;     /* the fetch failed, guarded by mu */
    uint64_t sum;  /* result, read after the join */
};

static void *verifier_main(void *arg)
{
    struct verifier *v = arg;
    uint64_t sum = 0;
    size_t pos = 0;
    if (v->len == 0)
        sum = fti_checksum64(v->data, 0, 0);
    while (pos < v->len) {
        size_t end = pos + FTI_MIN(FTI_HEAL_SUM_BYTES, v->len - pos);
        pthread_mutex_lock(&v->mu);
        while (v->avail < end && !v->stop)
            pthread_cond_wait(&v->cv, &v->mu);
        bool stop = v->stop;
        pthread_mutex_unlock(&v->mu);
        if (stop)
            break;
        sum = fti_checksum64(v->data + pos, end - pos, sum);
        pos = end;
    }
    v->sum = sum;
    return NULL;
}

static void verifier_advance(struct verifier *v, size_t avail, bool stop)
{
    pthread_mutex_lock(&v->mu);
    v->avail = avail;
    v->stop = stop;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
}

/* Fetches [0, len) of b in chunks of `chunk` bytes into the registered
 * memory; *verifier (may be NULL) is told as the bytes arrive. */
static int fetch_chunks(fti_rpc_client_h c, struct heal_buf *b, int64_t step, size_t chunk,
                        int64_t deadline_ms, uint64_t *bytes, struct verifier *v)
{
    for (size_t off = 0; off < b->len;) {
        size_t n = FTI_MIN(chunk, b->len - off);
        int left = fti_ms_left(deadline_ms);
        if (left <= 0)
            return FT_ERR_TIMEOUT;
        Ftmpi__HealFetchRequest req = FTMPI__HEAL_FETCH_REQUEST__INIT;
        req.name = b->name;
        req.offset = off;
        req.length = n;
        req.step = step;
        size_t rlen = ftmpi__heal_fetch_request__get_packed_size(&req);
        uint8_t rbuf[FTI_HEAL_MAX_NAME + 64];
        if (rlen > sizeof(rbuf))
            return FT_ERR_INTERNAL;
        ftmpi__heal_fetch_request__pack(&req, rbuf);
        int rc = fti_rpc_call_into(c, FTMPI__METHOD__HEAL_FETCH, rbuf, rlen, left, b->data + off,
                                   n);
        if (rc != FT_SUCCESS) {
            FTI_WARN("heal: fetching '%s' [%zu, +%zu) from %s failed: %s", b->name, off, n,
                     fti_rpc_client_address(c), FT_Error_string(rc));
            return rc;
        }
        off += n;
        *bytes += n;
        if (v != NULL)
            verifier_advance(v, off, false);
    }
    return FT_SUCCESS;
}

/* Fetches b and computes its checksum into *sum_p (piece by piece on a
 * helper thread while the next chunks stream in, for a buffer of more
 * than one piece). */
static int heal_buffer(fti_rpc_client_h c, struct heal_buf *b, int64_t step, size_t chunk,
                       int64_t deadline_ms, uint64_t *bytes, uint64_t *sum_p)
{
    struct verifier v = {.data = b->data, .len = b->len};
    pthread_t tid;
    bool threaded = false;
    if (b->len > FTI_HEAL_SUM_BYTES) {
        pthread_mutex_init(&v.mu, NULL);
        pthread_cond_init(&v.cv, NULL);
        threaded = pthread_create(&tid, NULL, verifier_main, &v) == 0;
        if (!threaded) {
            pthread_cond_destroy(&v.cv);
            pthread_mutex_destroy(&v.mu);
        }
    }
    int rc = fetch_chunks(c, b, step, chunk, deadline_ms, bytes, threaded ? &v : NULL);
    if (threaded) {
        if (rc != FT_SUCCESS)
            verifier_advance(&v, v.avail, true);
        pthread_join(tid, NULL);
        pthread_cond_destroy(&v.cv);
        pthread_mutex_destroy(&v.mu);
        *sum_p = v.sum;
    } else if (rc == FT_SUCCESS) {
        *sum_p = heal_sum(b->data, b->len);
    }
    return rc;
}

/* Asks the source for the checksums it deferred (the call that completes
 * the copy); *resp_p is freed with
 * ftmpi__heal_metadata_response__free_unpacked. */
static int heal_sums(fti_rpc_client_h c, int64_t step, int64_t deadline_ms,
                     Ftmpi__HealMetadataResponse **resp_p)
{
    Ftmpi__HealFetchRequest req = FTMPI__HEAL_FETCH_REQUEST__INIT;
    req.step = step;
    req.sums = true;
    int rc = fti_rpc_call_msg(c, FTMPI__METHOD__HEAL_FETCH, &req.base,
                              &ftmpi__heal_metadata_response__descriptor,
                              fti_ms_left(deadline_ms), (ProtobufCMessage **)resp_p);
    if (rc != FT_SUCCESS)
        FTI_WARN("heal: checksums of step %" PRId64 " from %s failed: %s", step,
                 fti_rpc_client_address(c), FT_Error_string(rc));
    return rc;
}

/* Compares the sums computed here (sums[i] for m->buffers[i]) with the
 * source's (s: the checksum reply, or m itself). */
static int heal_verify(fti_rpc_client_h c, const Ftmpi__HealMetadataResponse *m,
                       const Ftmpi__HealMetadataResponse *s, const uint64_t *sums)
{
    for (size_t i = 0; i < m->n_buffers; i++) {
        const char *name = m->buffers[i]->name;
        const Ftmpi__HealBuffer *sb = NULL;
        for (size_t j = 0; j < s->n_buffers && sb == NULL; j++)
            if (s->buffers[j] && s->buffers[j]->name && strcmp(s->buffers[j]->name, name) == 0)
                sb = s->buffers[j];
        if (sb == NULL || sb->length != m->buffers[i]->length) {
            FTI_WARN("heal: %s sent checksums of other buffers ('%s')", fti_rpc_client_address(c),
                     name);
            return FT_ERR_PROC_FAILED;
        }
        if (sb->checksum != sums[i]) {
            FTI_ERROR("heal: buffer '%s' from %s fails its checksum (%016" PRIx64
                      " != %016" PRIx64 ")",
                      name, fti_rpc_client_address(c), sums[i], sb->checksum);
            return FT_ERR_CHECKSUM;
        }
    }
    return FT_SUCCESS;
}

int fti_heal_fetch(fti_heal_h h, const char *src_manager, int group_rank, int64_t step,
                   const fti_heal_opts_t *opts, int64_t deadline_ms, fti_heal_stats_t *stats)
{
    int64_t t0 = fti_now_ms();
    fti_heal_stats_t st = {0, 0, ""};
    fti_rpc_client_h c = NULL;
    Ftmpi__HealMetadataResponse *m = NULL;
    size_t chunk = opts->chunk_bytes ? opts->chunk_bytes : FTI_HEAL_CHUNK_BYTES;

    int rc = heal_address(src_manager, group_rank, opts, deadline_ms, st.source,
                          sizeof(st.source));
    if (rc == FT_SUCCESS)
        rc = fti_rpc_client_create(st.source, opts->connect_timeout_ms, opts->max_reply, &c);
    if (rc == FT_SUCCESS) {
        Ftmpi__HealMetadataRequest req = FTMPI__HEAL_METADATA_REQUEST__INIT;
        req.step = step;
        rc = fti_rpc_call_msg(c, FTMPI__METHOD__HEAL_METADATA, &req.base,
                              &ftmpi__heal_metadata_response__descriptor,
                              fti_ms_left(deadline_ms), (ProtobufCMessage **)&m);
        if (rc != FT_SUCCESS)
            FTI_WARN("heal: metadata of step %" PRId64 " from %s failed: %s", step, st.source,
                     FT_Error_string(rc));
        else if (m->step != step) {
            FTI_WARN("heal: %s sent the metadata of step %" PRId64 ", not %" PRId64, st.source,
                     m->step, step);
            rc = FT_ERR_PROC_FAILED;
        }
    }
    if (rc == FT_SUCCESS) {
        /* registrations happen on this thread: the list cannot change now */
        pthread_mutex_lock(&h->mu);
        rc = heal_check(h, m);
        pthread_mutex_unlock(&h->mu);
    }
    uint64_t *sums = NULL;
    if (rc == FT_SUCCESS && m->n_buffers > 0 &&
        (sums = calloc(m->n_buffers, sizeof(*sums))) == NULL)
        rc = FT_ERR_NO_MEMORY;
    for (size_t i = 0; rc == FT_SUCCESS && i < m->n_buffers; i++) {
        pthread_mutex_lock(&h->mu);
        struct heal_buf *b = find_locked(h, m->buffers[i]->name);
        pthread_mutex_unlock(&h->mu);
        rc = heal_buffer(c, b, step, chunk, deadline_ms, &st.bytes, &sums[i]);
    }
    if (rc == FT_SUCCESS && m->sums_deferred) {
        Ftmpi__HealMetadataResponse *s = NULL;
        rc = heal_sums(c, step, deadline_ms, &s);
        if (rc == FT_SUCCESS) {
            rc = heal_verify(c, m, s, sums);
            ftmpi__heal_metadata_response__free_unpacked(s, NULL);
        }
    } else if (rc == FT_SUCCESS) {
        rc = heal_verify(c, m, m, sums);
    }
    free(sums);
    if (m != NULL)
        ftmpi__heal_metadata_response__free_unpacked(m, NULL);
    fti_rpc_client_destroy(c);
    rc = heal_code(rc);
    st.ms = fti_now_ms() - t0;
    if (rc == FT_SUCCESS)
        FTI_INFO("heal: step %" PRId64 " healed from %s: %" PRIu64 " bytes in %" PRId64 " ms",
                 step, st.source, st.bytes, st.ms);
    if (stats != NULL)
        *stats = st;
    return rc;
}
