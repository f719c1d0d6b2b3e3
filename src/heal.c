/* heal.c - serving the registered state and fetching it from a peer (see
 * heal.h). */
#include "heal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "ftmpi.h"
#include "log.h"
#include "proto/ftmpi.pb-c.h"
#include "util.h"

/* Cap of a manager's CHECKPOINT_METADATA reply. */
#define HEAL_MANAGER_MAX_REPLY (64u << 10)

struct heal_buf {
    char name[FTI_HEAL_MAX_NAME];
    unsigned char *data; /* what is served and summed: user, or copy.mirror */
    void *user;          /* the registered memory */
    size_t len;
    fti_heal_copy_t copy; /* copy_out == NULL: none, data == user */
    uint64_t mirror_gen;  /* generation the mirror holds; written under both mutexes */
    /* checksum cache, guarded by the registry's mutex */
    uint64_t sum;
    uint64_t sum_gen; /* generation it was computed for; 0 = none */
};

struct fti_heal {
    pthread_mutex_t mu;
    pthread_mutex_t mirror_mu; /* serialises mirror refreshes; taken before mu */
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
    pthread_mutex_init(&h->mirror_mu, NULL);
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
    for (size_t i = 0; i < h->n; i++) {
        struct heal_buf *b = h->bufs[i];
        if (b->copy.release != NULL)
            b->copy.release(b->copy.ctx, b->copy.mirror);
        free(b);
    }
    free(h->bufs);
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
    Ftmpi__HealMetadataRequest *req = (Ftmpi__HealMetadataRequest *)fti_rpc_unpack(
        &ftmpi__heal_metadata_request__descriptor, payload, len);
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
    Ftmpi__HealFetchRequest *req = (Ftmpi__HealFetchRequest *)fti_rpc_unpack(
        &ftmpi__heal_fetch_request__descriptor, payload, len);
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
        fti_rpc_reply_ref(call, ptr, (size_t)req->length, fetch_done, NULL);
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

/* Checks the source's buffers against ours: every registered buffer
 * exactly once, under its name and with its length, and nothing else.  A
 * repeated name is refused (else one registered buffer would never be
 * copied while the step advances).  Mutex held. */
static int heal_check(struct fti_heal *h, const Ftmpi__HealMetadataResponse *m, const char *src)
{
    if (m->n_buffers != h->n) {
        FTI_ERROR("heal: %s has %zu buffers registered, this rank %zu", src, m->n_buffers, h->n);
        return FT_ERR_ARG;
    }
    if (h->n == 0)
        return FT_SUCCESS;
    bool *seen = calloc(h->n, sizeof(*seen));
    if (seen == NULL) {
        FTI_ERROR("heal: out of memory checking %zu buffers", h->n);
        return FT_ERR_NO_MEMORY;
    }
    int rc = FT_SUCCESS;
    for (size_t i = 0; rc == FT_SUCCESS && i < m->n_buffers; i++) {
        const Ftmpi__HealBuffer *sb = m->buffers[i];
        const char *name = sb != NULL && sb->name != NULL ? sb->name : "";
        size_t k = 0;
        while (k < h->n && strcmp(h->bufs[k]->name, name) != 0)
            k++;
        if (k == h->n) {
            FTI_ERROR("heal: %s's buffer '%.255s' is not registered here", src, name);
            rc = FT_ERR_ARG;
        } else if (seen[k]) {
            FTI_ERROR("heal: %s names buffer '%s' twice in its metadata", src, name);
            rc = FT_ERR_ARG;
        } else if (sb->length != h->bufs[k]->len) {
            FTI_ERROR("heal: buffer '%s' has %" PRIu64 " bytes at %s, %zu here", name, sb->length,
                      src, h->bufs[k]->len);
            rc = FT_ERR_ARG;
        }
        if (rc == FT_SUCCESS)
            seen[k] = true;
    }
    free(seen);
    return rc;
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

/* One buffer of a heal: the registered buffer it is for and the staging
 * memory its bytes stream into (stage_alloc, released by stage_free). */
struct heal_stage {
    struct heal_buf *b;
    unsigned char *data; /* b->len bytes; NULL when b->len == 0 */
    bool mapped;         /* data is an anonymous mapping, else malloc'ed */
    uint64_t sum;        /* computed here over data */
};

/* Staging buffers from this size on are mapped with their pages populated
 * at once: faulting them in one by one inside the socket reads made a heal
 * of 512 MiB twice as slow as without staging. */
#define HEAL_STAGE_MAP_BYTES ((size_t)1 << 20)

/* Fetches [0, s->b->len) in chunks of `chunk` bytes into s->data; *v (may
 * be NULL) is told as the bytes arrive.  Logs its failure. */
static int fetch_chunks(fti_rpc_client_h c, struct heal_stage *s, int64_t step, size_t chunk,
                        int64_t deadline_ms, uint64_t *bytes, struct verifier *v)
{
    const struct heal_buf *b = s->b;
    for (size_t off = 0; off < b->len;) {
        size_t n = FTI_MIN(chunk, b->len - off);
        int left = fti_ms_left(deadline_ms);
        if (left <= 0) {
            FTI_WARN("heal: deadline passed fetching '%s' from %s (%zu of %zu bytes)", b->name,
                     fti_rpc_client_address(c), off, b->len);
            return FT_ERR_TIMEOUT;
        }
        Ftmpi__HealFetchRequest req = FTMPI__HEAL_FETCH_REQUEST__INIT;
        req.name = (char *)b->name;
        req.offset = off;
        req.length = n;
        req.step = step;
        /* a name of at most FTI_HEAL_MAX_NAME bytes plus four small fields */
        uint8_t rbuf[FTI_HEAL_MAX_NAME + 64];
        size_t rlen = ftmpi__heal_fetch_request__get_packed_size(&req);
        if (rlen > sizeof(rbuf)) {
            FTI_ERROR("heal: fetch request of '%s' packs to %zu bytes", b->name, rlen);
            return FT_ERR_INTERNAL;
        }
        ftmpi__heal_fetch_request__pack(&req, rbuf);
        int rc = fti_rpc_call_into(c, FTMPI__METHOD__HEAL_FETCH, rbuf, rlen, left, s->data + off,
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

/* Fetches one buffer into its staging memory and computes its checksum
 * into s->sum (piece by piece on a helper thread while the next chunks
 * stream in, for a buffer of more than one piece). */
static int heal_buffer(fti_rpc_client_h c, struct heal_stage *s, int64_t step, size_t chunk,
                       int64_t deadline_ms, uint64_t *bytes)
{
    struct verifier v = {.data = s->data, .len = s->b->len};
    pthread_t tid;
    bool threaded = false;
    if (s->b->len > FTI_HEAL_SUM_BYTES) {
        pthread_mutex_init(&v.mu, NULL);
        pthread_cond_init(&v.cv, NULL);
        threaded = pthread_create(&tid, NULL, verifier_main, &v) == 0;
        if (!threaded) {
            pthread_cond_destroy(&v.cv);
            pthread_mutex_destroy(&v.mu);
        }
    }
    int rc = fetch_chunks(c, s, step, chunk, deadline_ms, bytes, threaded ? &v : NULL);
    if (threaded) {
        if (rc != FT_SUCCESS)
            verifier_advance(&v, v.avail, true);
        pthread_join(tid, NULL);
        pthread_cond_destroy(&v.cv);
        pthread_mutex_destroy(&v.mu);
        s->sum = v.sum;
    } else if (rc == FT_SUCCESS) {
        s->sum = heal_sum(s->data, s->b->len);
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

/* Compares the sums computed here (stage[i] for m->buffers[i]) with the
 * source's (s: the checksum reply, or m itself): s must list exactly m's
 * buffers. */
static int heal_verify(fti_rpc_client_h c, const Ftmpi__HealMetadataResponse *m,
                       const Ftmpi__HealMetadataResponse *s, const struct heal_stage *stage)
{
    if (s->n_buffers != m->n_buffers) {
        FTI_WARN("heal: %s sent %zu checksums for %zu buffers", fti_rpc_client_address(c),
                 s->n_buffers, m->n_buffers);
        return FT_ERR_PROC_FAILED;
    }
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
        if (sb->checksum != stage[i].sum) {
            FTI_ERROR("heal: buffer '%s' from %s fails its checksum (%016" PRIx64
                      " != %016" PRIx64 ")",
                      name, fti_rpc_client_address(c), stage[i].sum, sb->checksum);
            return FT_ERR_CHECKSUM;
        }
    }
    return FT_SUCCESS;
}

static void stage_free(struct heal_stage *stage, size_t n)
{
    for (size_t i = 0; stage != NULL && i < n; i++) {
        if (stage[i].mapped)
            munmap(stage[i].data, stage[i].b->len);
        else
            free(stage[i].data);
    }
    free(stage);
}

/* Staging memory for s->b (none for an empty buffer). */
static bool stage_one(struct heal_stage *s)
{
    size_t len = s->b->len;
    if (len >= HEAL_STAGE_MAP_BYTES) {
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                       -1, 0);
        if (p == MAP_FAILED)
            return false;
        s->data = p;
        s->mapped = true;
    } else if (len > 0) {
        s->data = malloc(len);
    }
    return len == 0 || s->data != NULL;
}

/* Staging memory for every buffer m lists (checked by heal_check), in m's
 * order: the whole state once more, for the time of one heal.  Release
 * with stage_free(*stage_p, m->n_buffers). */
static int stage_alloc(struct fti_heal *h, const Ftmpi__HealMetadataResponse *m,
                       struct heal_stage **stage_p)
{
    size_t n = m->n_buffers;
    struct heal_stage *stage = calloc(n ? n : 1, sizeof(*stage));
    uint64_t total = 0;
    bool ok = stage != NULL;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; ok && i < n; i++) {
        stage[i].b = find_locked(h, m->buffers[i]->name);
        total += stage[i].b->len;
        ok = stage_one(&stage[i]);
    }
    pthread_mutex_unlock(&h->mu);
    if (!ok) {
        FTI_ERROR("heal: no memory to stage %zu buffers (%" PRIu64 " bytes so far): %m", n, total);
        stage_free(stage, n);
        return FT_ERR_NO_MEMORY;
    }
    *stage_p = stage;
    return FT_SUCCESS;
}

/* Installs a complete, verified copy: closes serving (the old state is
 * about to change: requests for it are refused from now on and a summing
 * thread drops its work), then copies each staged buffer into the
 * registered memory (copy_in for a mirrored one).  Only a copy_in can
 * fail: its code, logged here. */
static int heal_install(struct fti_heal *h, const struct heal_stage *stage, size_t n)
{
    pthread_mutex_lock(&h->mu);
    h->open = false;
    h->gen++;
    h->served = 0;
    pthread_mutex_unlock(&h->mu);
    for (size_t i = 0; i < n; i++) {
        const struct heal_buf *b = stage[i].b;
        if (b->len == 0)
            continue;
        if (b->copy.copy_in == NULL) {
            memcpy(b->user, stage[i].data, b->len);
            continue;
        }
        int rc = b->copy.copy_in(b->copy.ctx, b->user, stage[i].data, b->len);
        if (rc != FT_SUCCESS) {
            FTI_ERROR("heal: installing '%s' (%zu bytes) failed: %s; this rank's state is "
                      "partly overwritten",
                      b->name, b->len, FT_Error_string(rc));
            return rc;
        }
    }
    return FT_SUCCESS;
}

/* The source of a heal: the address of the rank serving group_rank (into
 * st->source), a client for it (*c_p, destroyed by the caller also on
 * failure) and its metadata for `step`, checked against the registrations
 * (*m_p, freed with ftmpi__heal_metadata_response__free_unpacked). */
static int heal_open(struct fti_heal *h, const char *src_manager, int group_rank, int64_t step,
                     const fti_heal_opts_t *opts, int64_t deadline_ms, fti_heal_stats_t *st,
                     fti_rpc_client_h *c_p, Ftmpi__HealMetadataResponse **m_p)
{
    Ftmpi__HealMetadataResponse *m = NULL;
    int rc = heal_address(src_manager, group_rank, opts, deadline_ms, st->source,
                          sizeof(st->source));
    if (rc == FT_SUCCESS) {
        rc = fti_rpc_client_create(st->source, opts->connect_timeout_ms, opts->max_reply, c_p);
        if (rc != FT_SUCCESS) {
            FTI_WARN("heal: unusable heal address '%s' of the source", st->source);
            rc = rc == FT_ERR_NO_MEMORY ? rc : FT_ERR_PROC_FAILED;
        }
    }
    if (rc != FT_SUCCESS)
        return rc;
    Ftmpi__HealMetadataRequest req = FTMPI__HEAL_METADATA_REQUEST__INIT;
    req.step = step;
    rc = fti_rpc_call_msg(*c_p, FTMPI__METHOD__HEAL_METADATA, &req.base,
                          &ftmpi__heal_metadata_response__descriptor, fti_ms_left(deadline_ms),
                          (ProtobufCMessage **)&m);
    if (rc != FT_SUCCESS) {
        FTI_WARN("heal: metadata of step %" PRId64 " from %s failed: %s", step, st->source,
                 FT_Error_string(rc));
        return rc;
    }
    if (m->step != step) {
        FTI_WARN("heal: %s sent the metadata of step %" PRId64 ", not %" PRId64, st->source,
                 m->step, step);
        rc = FT_ERR_PROC_FAILED;
    } else {
        /* registrations happen on this thread: the list cannot change now */
        pthread_mutex_lock(&h->mu);
        rc = heal_check(h, m, st->source);
        pthread_mutex_unlock(&h->mu);
    }
    if (rc != FT_SUCCESS) {
        ftmpi__heal_metadata_response__free_unpacked(m, NULL);
        return rc;
    }
    *m_p = m;
    return FT_SUCCESS;
}

/* A complete, verified copy waiting for fti_heal_install (see heal.h). */
struct fti_heal_staged {
    struct heal_stage *stage; /* n entries, in the source's metadata order */
    size_t n;
};

/* Fetches and verifies every buffer of m into staging memory (*stage_p,
 * released with stage_free(*stage_p, m->n_buffers), also set on failure
 * when it was allocated). */
static int heal_fetch_all(struct fti_heal *h, fti_rpc_client_h c,
                          const Ftmpi__HealMetadataResponse *m, int64_t step, size_t chunk,
                          int64_t deadline_ms, uint64_t *bytes, struct heal_stage **stage_p)
{
    int rc = stage_alloc(h, m, stage_p);
    struct heal_stage *stage = *stage_p;
    for (size_t i = 0; rc == FT_SUCCESS && i < m->n_buffers; i++)
        rc = heal_buffer(c, &stage[i], step, chunk, deadline_ms, bytes);
    if (rc == FT_SUCCESS && m->sums_deferred) {
        Ftmpi__HealMetadataResponse *s = NULL;
        rc = heal_sums(c, step, deadline_ms, &s);
        if (rc == FT_SUCCESS) {
            rc = heal_verify(c, m, s, stage);
            ftmpi__heal_metadata_response__free_unpacked(s, NULL);
        }
    } else if (rc == FT_SUCCESS) {
        rc = heal_verify(c, m, m, stage);
    }
    return rc;
}

int fti_heal_stage(fti_heal_h h, const char *src_manager, int group_rank, int64_t step,
                   const fti_heal_opts_t *opts, int64_t deadline_ms, fti_heal_staged_h *staged_p,
                   fti_heal_stats_t *stats)
{
    int64_t t0 = fti_now_ms();
    fti_heal_stats_t st = {0, 0, 0, ""};
    fti_rpc_client_h c = NULL;
    Ftmpi__HealMetadataResponse *m = NULL;
    struct heal_stage *stage = NULL;
    struct fti_heal_staged *staged = NULL;
    size_t chunk = opts->chunk_bytes ? opts->chunk_bytes : FTI_HEAL_CHUNK_BYTES;

    int rc = heal_open(h, src_manager, group_rank, step, opts, deadline_ms, &st, &c, &m);
    if (rc == FT_SUCCESS)
        rc = heal_fetch_all(h, c, m, step, chunk, deadline_ms, &st.bytes, &stage);
    fti_rpc_client_destroy(c);
    if (rc == FT_SUCCESS && (staged = malloc(sizeof(*staged))) == NULL) {
        FTI_ERROR("heal: out of memory keeping the staged copy");
        rc = FT_ERR_NO_MEMORY;
    }
    if (rc == FT_SUCCESS) {
        *staged = (struct fti_heal_staged){stage, m->n_buffers};
        stage = NULL;
    }
    if (m != NULL) {
        stage_free(stage, m->n_buffers);
        ftmpi__heal_metadata_response__free_unpacked(m, NULL);
    }
    rc = heal_code(rc);
    st.ms = fti_now_ms() - t0;
    if (rc == FT_SUCCESS) {
        FTI_DEBUG("heal: step %" PRId64 " staged from %s: %" PRIu64 " bytes in %" PRId64 " ms",
                  step, st.source, st.bytes, st.ms);
        *staged_p = staged;
    }
    if (stats != NULL)
        *stats = st;
    return rc;
}

int64_t fti_heal_install(fti_heal_h h, fti_heal_staged_h staged)
{
    int64_t t0 = fti_now_ms();
    int rc = heal_install(h, staged->stage, staged->n);
    fti_heal_discard(staged);
    return rc != FT_SUCCESS ? (int64_t)rc : fti_now_ms() - t0;
}

void fti_heal_discard(fti_heal_staged_h staged)
{
    if (staged == NULL)
        return;
    stage_free(staged->stage, staged->n);
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
