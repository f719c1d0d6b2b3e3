/* nccl_slice.c - the nccl backend's table entry and its rendezvous through
 * the quorum's store: a full init, or a shrink of the previous quorum's
 * communicator when the new quorum only drops members (nccl_slice.h). */
#include "comm/nccl_slice.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/rpc.h"
#include "comm/slice.h"
#include "control/store.h"
#include "base/util.h"

uint64_t fti_nccl_token(const unsigned char *id, uint64_t token, int64_t q)
{
    uint64_t h = 1469598103934665603ull ^ token; /* FNV-1a */
    for (int i = 0; id != NULL && i < FTI_NCCL_ID_BYTES; i++)
        h = (h ^ id[i]) * 1099511628211ull;
    for (int i = 0; i < 8; i++)
        h = (h ^ (uint8_t)((uint64_t)q >> (8 * i))) * 1099511628211ull;
    return h ? h : 1;
}

void fti_nccl_decide(const fti_nccl_member_t *m, int size, fti_nccl_plan_t *plan)
{
    plan->shrink = 0;
    plan->n_exclude = 0;
    if (m[0].token == 0 || m[0].size <= size ||
        m[0].size - size > (int)(sizeof(plan->exclude) / sizeof(plan->exclude[0])))
        return;
    for (int i = 0; i < size; i++) {
        if (m[i].token != m[0].token || m[i].size != m[0].size || m[i].rank < 0 ||
            m[i].rank >= m[i].size || (i > 0 && m[i].rank <= m[i - 1].rank))
            return;
    }
    int k = 0;
    for (int old = 0, i = 0; old < m[0].size; old++) {
        if (i < size && m[i].rank == old)
            i++;
        else
            plan->exclude[k++] = old;
    }
    plan->n_exclude = k;
    plan->shrink = 1;
}

int fti_nccl_shared_gpu(const fti_nccl_member_t *m, int size)
{
    static const unsigned char zero[16];
    for (int i = 0; i < size; i++) {
        if (!memcmp(m[i].gpu, zero, sizeof(zero)))
            continue;
        for (int j = i + 1; j < size; j++)
            if (!memcmp(m[i].gpu, m[j].gpu, sizeof(zero)))
                return 1;
    }
    return 0;
}

static void member_key(char *buf, size_t len, const fti_comm_rendezvous_t *r, int rr)
{
    char base[96];
    fti_slice_key(base, sizeof(base), r->quorum_id, r->group_rank, rr);
    snprintf(buf, len, "%s/nccl", base);
}

static void plan_key(char *buf, size_t len, const fti_comm_rendezvous_t *r)
{
    char base[96];
    fti_slice_key(base, sizeof(base), r->quorum_id, r->group_rank, 0);
    snprintf(buf, len, "%s/nccl-id", base);
}

/* Replica rank 0: every member's record, the decision, published. */
static int lead(fti_rpc_client_h store, const fti_comm_rendezvous_t *r,
                const fti_nccl_member_t *mine, int allow_shrink,
                int (*make_id)(void *, unsigned char *), void *ctx, int64_t deadline_ms,
                fti_nccl_plan_t *plan)
{
    char key[128];
    fti_nccl_member_t *m = calloc((size_t)r->size, sizeof(*m));
    if (m == NULL)
        return FT_ERR_NO_MEMORY;
    m[0] = *mine;
    int rc = FT_SUCCESS;
    for (int i = 1; i < r->size && rc == FT_SUCCESS; i++) {
        void *v = NULL;
        size_t len = 0;
        member_key(key, sizeof(key), r, i);
        rc = fti_store_get(store, key, FTI_MAX(1, fti_ms_left(deadline_ms)), &v, &len);
        if (rc == FT_SUCCESS && len == sizeof(m[i]))
            memcpy(&m[i], v, len);
        free(v); /* a record of another size: that member holds nothing */
    }
    if (rc == FT_SUCCESS) {
        memset(plan, 0, sizeof(*plan));
        plan->shared_gpu = fti_nccl_shared_gpu(m, r->size);
        if (allow_shrink && !plan->shared_gpu)
            fti_nccl_decide(m, r->size, plan);
        if (!plan->shrink && !plan->shared_gpu)
            rc = make_id(ctx, plan->id);
    }
    if (rc == FT_SUCCESS) {
        plan_key(key, sizeof(key), r);
        rc = fti_store_set(store, key, plan, sizeof(*plan), FTI_MAX(1, fti_ms_left(deadline_ms)));
    }
    free(m);
    return rc;
}

int fti_nccl_rendezvous(const fti_comm_rendezvous_t *r, const fti_nccl_member_t *mine,
                        int allow_shrink, int (*make_id)(void *ctx, unsigned char *id), void *ctx,
                        int64_t deadline_ms, fti_nccl_plan_t *plan_p)
{
    fti_rpc_client_h store = NULL;
    char key[128];
    if (r->store_address == NULL || r->store_address[0] == '\0')
        return FT_ERR_ARG;
    fti_slice_note(r->quorum_id);
    int rc = fti_rpc_client_create(r->store_address, r->key, r->connect_timeout_ms,
                                   FTI_STORE_MAX_FRAME, &store);
    if (rc == FT_SUCCESS && r->replica_rank == 0) {
        rc = lead(store, r, mine, allow_shrink, make_id, ctx, deadline_ms, plan_p);
    } else if (rc == FT_SUCCESS) {
        member_key(key, sizeof(key), r, r->replica_rank);
        rc = fti_store_set(store, key, mine, sizeof(*mine), FTI_MAX(1, fti_ms_left(deadline_ms)));
        void *v = NULL;
        size_t len = 0;
        plan_key(key, sizeof(key), r);
        if (rc == FT_SUCCESS)
            rc = fti_store_get(store, key, FTI_MAX(1, fti_ms_left(deadline_ms)), &v, &len);
        if (rc == FT_SUCCESS && len != sizeof(*plan_p))
            rc = FT_ERR_BAD_MESSAGE;
        if (rc == FT_SUCCESS)
            memcpy(plan_p, v, sizeof(*plan_p));
        free(v);
    }
    fti_rpc_client_destroy(store);
    if (rc != FT_SUCCESS)
        FTI_WARN("nccl: rendezvous of quorum %" PRId64 " in the store %s failed: %s",
                 r->quorum_id, r->store_address, FT_Error_string(rc));
    if (rc == FT_SUCCESS && plan_p->shrink &&
        (plan_p->n_exclude < 1 ||
         plan_p->n_exclude > (int)(sizeof(plan_p->exclude) / sizeof(plan_p->exclude[0]))))
        rc = FT_ERR_BAD_MESSAGE;
    return rc;
}

/* ---- the table entry ------------------------------------------------------ */

struct nccl_comm {
    struct fti_comm base;
    fti_nccl_h n;
    uint64_t token;
};

/* The communicator the last destroyed slice left for a shrink. */
static struct {
    fti_nccl_h n;
    uint64_t token;
} parked;

void fti_nccl_drop_parked(void)
{
    if (parked.n)
        fti_nccl_abort(parked.n); /* its peers may be gone: no finalize */
    fti_nccl_free(parked.n);
    parked.n = NULL;
    parked.token = 0;
}

static int local_id(void *ctx, unsigned char *id)
{
    (void)ctx;
    return fti_nccl_unique_id(id);
}

/* The new communicator from the plan: a shrink of old, or an init. */
static int build(const fti_comm_rendezvous_t *r, const fti_nccl_plan_t *plan, fti_nccl_h old,
                 uint64_t old_token, int64_t deadline_ms, fti_nccl_h *n_p, uint64_t *token_p)
{
    if (plan->shrink) {
        *token_p = fti_nccl_token(NULL, old_token, r->quorum_id);
        FTI_DEBUG("nccl: quorum %" PRId64 " shrinks the previous communicator by %d",
                  r->quorum_id, plan->n_exclude);
        return fti_nccl_shrink(old, plan->exclude, plan->n_exclude, deadline_ms, n_p);
    }
    *token_p = fti_nccl_token(plan->id, 0, r->quorum_id);
    return fti_nccl_init(plan->id, r->replica_rank, r->size, -1, deadline_ms, n_p);
}

static int nccl_create(const fti_comm_rendezvous_t *r, int64_t deadline_ms, fti_comm_h *comm_p)
{
    if (r->size < 1 || r->replica_rank < 0 || r->replica_rank >= r->size)
        return FT_ERR_ARG;
    struct nccl_comm *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return FT_ERR_NO_MEMORY;
    fti_nccl_h old = parked.n;
    uint64_t old_token = parked.token;
    parked.n = NULL;
    parked.token = 0;
    fti_nccl_member_t mine = {0, -1, 0, {0}};
    if (fti_nccl_ok(old))
        mine = (fti_nccl_member_t){old_token, fti_nccl_rank(old), fti_nccl_size(old), {0}};
    fti_nccl_gpu_uuid(mine.gpu);
    fti_nccl_plan_t plan;
    memset(&plan, 0, sizeof(plan));
    int rc = r->size == 1 ? fti_nccl_unique_id(plan.id)
                          : fti_nccl_rendezvous(r, &mine, fti_nccl_can_shrink(), local_id, NULL,
                                                deadline_ms, &plan);
    /* issue 29 item 7: an old communicator the plan does not shrink is
     * aborted before the new one is built (its kernels and memory gone
     * first); a shrunk one after (the shrink stopped its operations) */
    if (rc == FT_SUCCESS && plan.shared_gpu) {
        static int said;
        if (!said) {
            said = 1;
            FTI_WARN("nccl: members of quorum %" PRId64 " share a GPU, which NCCL refuses: no "
                     "NCCL communicator for them (FTMPI_BACKEND=auto stages device buffers "
                     "through host memory instead; said once)", r->quorum_id);
        }
        rc = FT_ERR_UNSUPPORTED;
    }
    if (old && (rc != FT_SUCCESS || !plan.shrink)) {
        fti_nccl_abort(old);
        fti_nccl_free(old);
        old = NULL;
    }
    if (rc == FT_SUCCESS)
        rc = build(r, &plan, old, old_token, deadline_ms, &c->n, &c->token);
    if (old)
        fti_nccl_abort(old);
    fti_nccl_free(old);
    if (rc != FT_SUCCESS) {
        free(c);
        return rc == FT_ERR_UNSUPPORTED ? rc : fti_slice_error(rc);
    }
    c->base.ops = &fti_backend_nccl;
    c->base.rank = r->replica_rank;
    c->base.size = r->size;
    *comm_p = &c->base;
    return FT_SUCCESS;
}

static int nccl_allreduce(fti_comm_h comm, void *buf, size_t count, enum fti_dtype dt,
                          enum fti_op op, int64_t deadline_ms)
{
    struct nccl_comm *c = (struct nccl_comm *)comm;
    return fti_nccl_allreduce(c->n, buf, count, dt, op, deadline_ms);
}

/* A healthy communicator is kept for the next quorum (a shrink); a dead
 * one is freed. */
static void nccl_destroy(fti_comm_h comm)
{
    struct nccl_comm *c = (struct nccl_comm *)comm;
    if (fti_nccl_ok(c->n) && c->base.size > 1) {
        fti_nccl_drop_parked();
        parked.n = c->n;
        parked.token = c->token;
    } else {
        fti_nccl_free(c->n);
    }
    free(c);
}

/* The table entry (comm.h): NCCL in this process, device buffers in place. */
const struct fti_comm_backend fti_backend_nccl = {
    .name = "nccl",
    .needs = FTI_COMM_NEEDS_STORE | FTI_COMM_NEEDS_DEVICE,
    .create = nccl_create,
    .allreduce = nccl_allreduce,
    .destroy = nccl_destroy,
};
