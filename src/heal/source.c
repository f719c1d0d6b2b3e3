/* heal/source.c - one source of a striped heal (see heal/stripe.h): its
 * heal address from its manager, its client and metadata checked against
 * this rank's registrations, its checksums checked as they arrive, and
 * dropping it.  fetch.c's threads and verify.c's vote use it. */
#include "heal/stripe.h"
#include "control/message.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "heal/heal_int.h"
#include "base/log.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/util.h"

/* Cap of a manager's CHECKPOINT_METADATA reply. */
#define HEAL_MANAGER_MAX_REPLY (64u << 10)

/* Maps a failure of the source onto the codes heal reports. */
int fti_heal_code(int rc)
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
    int rc = fti_rpc_client_create(src_manager, o->key, o->connect_timeout_ms,
                                   HEAL_MANAGER_MAX_REPLY, &c);
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
int fti_heal_check(struct fti_heal *h, const Ftmpi__HealMetadataResponse *m, const char *src)
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

/* Checks source src's checksums m of step (the metadata when they came
 * with it, else the reply to the checksum request) as they arrive: the
 * step, the buffers as fti_heal_check wants them, and for each buffer
 * either no piece sums or one per FTI_HEAL_SUM_BYTES piece, the last equal
 * to the buffer's checksum.  Logs what was wrong.  Mutex held. */
int fti_heal_check_sums(struct fti_heal *h, const Ftmpi__HealMetadataResponse *m, int64_t step,
                        const char *src)
{
    if (m->step != step) {
        FTI_WARN("heal: %s sent the checksums of step %" PRId64 ", not %" PRId64 "; dropped", src,
                 m->step, step);
        return FT_ERR_PROC_FAILED;
    }
    int rc = fti_heal_check(h, m, src);
    for (size_t i = 0; rc == FT_SUCCESS && i < m->n_buffers; i++) {
        const Ftmpi__HealBuffer *b = m->buffers[i];
        uint64_t pieces = b->length / FTI_HEAL_SUM_BYTES + (b->length % FTI_HEAL_SUM_BYTES != 0);
        if (b->n_piece_sums != 0 &&
            (b->n_piece_sums != pieces || b->piece_sums[b->n_piece_sums - 1] != b->checksum)) {
            FTI_ERROR("heal: %s sent %zu piece sums for the %" PRIu64 " pieces of '%s' (or a last "
                      "one other than its checksum); dropped",
                      src, b->n_piece_sums, pieces, b->name);
            rc = FT_ERR_ARG;
        }
    }
    return rc;
}

/* Asks the source for the checksums it deferred (the call that completes
 * the copy); *resp_p is freed with
 * ftmpi__heal_metadata_response__free_unpacked. */
int fti_heal_src_sums(fti_rpc_client_h c, int64_t step, int64_t deadline_ms,
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
/* Drops source w (mutex held); the caller logged why. */
void fti_heal_src_dead_locked(struct stripe_src *w, int rc)
{
    struct stripe *sp = w->sp;
    if (!w->dead) {
        w->dead = true;
        w->rc = rc;
    }
    for (size_t j = 0; sp->r != NULL && j < sp->n_r; j++)
        if (sp->r[j].pin == w->idx)
            sp->r[j].pin = -1;
    pthread_cond_broadcast(&sp->cv);
}

void fti_heal_src_dead(struct stripe_src *w, int rc)
{
    pthread_mutex_lock(&w->sp->mu);
    fti_heal_src_dead_locked(w, rc);
    pthread_mutex_unlock(&w->sp->mu);
}

/* Opens source w: the address of its rank serving group_rank, a client,
 * and its metadata of the step, checked against the registrations (a
 * source whose step or buffers differ is dropped).  Logs its failure. */
int fti_heal_src_open(struct stripe *sp, struct stripe_src *w)
{
    const fti_heal_opts_t *o = sp->opts;
    int rc = heal_address(w->manager, sp->group_rank, o, sp->deadline_ms, w->addr,
                          sizeof(w->addr));
    if (rc == FT_SUCCESS) {
        rc = fti_rpc_client_create(w->addr, o->key, o->connect_timeout_ms, o->max_reply, &w->c);
        if (rc != FT_SUCCESS) {
            FTI_WARN("heal: unusable heal address '%s' of the source", w->addr);
            return rc == FT_ERR_NO_MEMORY ? rc : FT_ERR_PROC_FAILED;
        }
    }
    if (rc != FT_SUCCESS)
        return rc;
    Ftmpi__HealMetadataRequest req = FTMPI__HEAL_METADATA_REQUEST__INIT;
    req.step = sp->step;
    req.ucx = o->rma != NULL;
    rc = fti_rpc_call_msg(w->c, FTMPI__METHOD__HEAL_METADATA, &req.base,
                          &ftmpi__heal_metadata_response__descriptor, fti_ms_left(sp->deadline_ms),
                          (ProtobufCMessage **)&w->m);
    if (rc != FT_SUCCESS) {
        FTI_WARN("heal: metadata of step %" PRId64 " from %s failed: %s", sp->step, w->addr,
                 FT_Error_string(rc));
        return rc;
    }
    if (w->m->step != sp->step) {
        FTI_WARN("heal: %s sent the metadata of step %" PRId64 ", not %" PRId64 "; dropped",
                 w->addr, w->m->step, sp->step);
        return FT_ERR_PROC_FAILED;
    }
    /* registrations happen on the application thread, which waits for us */
    pthread_mutex_lock(&sp->h->mu);
    if (w->m->sums_deferred)
        rc = fti_heal_check(sp->h, w->m, w->addr);
    else
        rc = fti_heal_check_sums(sp->h, w->m, sp->step, w->addr);
    pthread_mutex_unlock(&sp->h->mu);
    if (rc == FT_SUCCESS && !w->m->sums_deferred)
        w->sums = w->m; /* the checksums came with the metadata */
    if (rc == FT_SUCCESS)
        fti_heal_rma_open(sp, w);
    return rc;
}
