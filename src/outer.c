/*
 * outer.c - LocalSGD and DiLoCo (the FT_Outer_* calls of ftmpi.h, DESIGN
 * section 12): groups train H inner steps alone; every H steps one step of
 * the protocol (FT_Quorum, FT_Allreduce, FT_Commit) is the outer sync.  A
 * layer on the public step API only: nothing here reaches into the step.
 *
 * State.  Registered (healed from a live group, checkpointed, the same in
 * every group after each committed sync): per array the global parameters
 * "outer.NAME.g" and, for DiLoCo, the outer momentum "outer.NAME.m"; the
 * sync counter is the protocol's step (FT_Step).  Local (the group's own):
 * the caller's parameters, which the inner optimizer trains, and the count
 * of inner steps since the last sync.
 *
 * One sync (outer_sync):
 *   FT_Quorum                 a group behind (restarted, or it missed a
 *                             committed sync) heals the global state here,
 *                             and so does a minority of the SDC check (at
 *                             the same step: FT_Step() does not change, so
 *                             FT_Heal_count tells, also when FT_Quorum
 *                             then fails)
 *   weight = 1, or 0 when this is the join (no committed sync yet in this
 *                             process) or the group just healed: its
 *                             parameters are then reset to the global ones
 *                             and it contributes zeros (its local work
 *                             started from the state the heal replaced)
 *   FT_Allreduce(SUM) of the contributions and the weight (outer.h); at
 *                             a fresh start (the quorum's step is 0: every
 *                             member joins) none, every member knows it

 *   FT_Commit; committed: the new global state from the sum (outer.h), and
 *                             the parameters := global
 *   not committed: no registered byte changed; the parameters keep
 *                             training and the next sync retries
 * A dead group costs the sync it died in (the others' reduction fails, the
 * step does not commit); the next sync's quorum leaves it out.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_config.h" /* FTMPI_TEST_HOOKS */
#include "ftmpi.h"
#include "base/log.h"
#include "outer.h"

#define OUTER_NAME_MAX 48
#define OUTER_CHUNK ((size_t)1 << 28) /* floats per FT_Allreduce: int counts */

struct outer_array {
    char name[OUTER_NAME_MAX + 1];
    float *params; /* the caller's */
    float *global; /* registered "outer.NAME.g" */
    float *mom;    /* registered "outer.NAME.m" (DiLoCo) */
    size_t count;
};

struct ftmpi_outer {
    int algorithm, sync_every;
    float lr, mu;
    struct outer_array *arrays;
    int narrays;
    size_t total;   /* floats over all arrays */
    float *buf;     /* total + 1: contributions and the weight */
    bool started;   /* FT_Outer_step ran: no more registrations */
    bool joined;    /* a sync committed in this process */
    int64_t heals;  /* FT_Heal_count when the last sync looked */
    int64_t since_sync;
    FT_Outer_hook hook;
    void *hook_arg;
    ftmpi_outer_stats_t stats;
#ifdef FTMPI_TEST_HOOKS
    int64_t corrupt_step, corrupt_index; /* FTMPI_TEST_OUTER_CORRUPT; step -1: none */
    float corrupt_delta;
#endif
};

/* ---- the arithmetic (outer.h) --------------------------------------------- */

void fti_outer_pack_localsgd(float *buf, const float *local, size_t n, float weight)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = weight != 0.0f ? local[i] : 0.0f;
}

void fti_outer_apply_localsgd(float *global, const float *sum, size_t n, float weight_sum)
{
    if (!(weight_sum > 0.0f))
        return;
    for (size_t i = 0; i < n; i++)
        global[i] = sum[i] / weight_sum;
}

void fti_outer_pack_diloco(float *buf, const float *global, const float *local, size_t n,
                           float weight)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = weight != 0.0f ? global[i] - local[i] : 0.0f;
}

void fti_outer_apply_diloco(float *global, float *momentum, const float *sum, size_t n,
                            float weight_sum, float lr, float mu)
{
    if (!(weight_sum > 0.0f))
        return;
    for (size_t i = 0; i < n; i++) {
        float delta = sum[i] / weight_sum;
        float m = mu * momentum[i] + delta;
        momentum[i] = m;
        global[i] -= lr * (delta + mu * m);
    }
}

/* ---- test hook (configure --enable-test-hooks only) ------------------------ */

/* FTMPI_TEST_OUTER_CORRUPT=STEP:INDEX:DELTA: a silent data corruption of
 * the outer update.  In the sync that commits step STEP, DELTA is added to
 * element INDEX of the first array's new global parameters before they are
 * copied into the caller's parameters, once: both copies are wrong and
 * nothing tells the library (test_e2e_outer_sdc.sh). */
static void test_corrupt_init(struct ftmpi_outer *o)
{
#ifdef FTMPI_TEST_HOOKS
    o->corrupt_step = -1;
    const char *v = getenv("FTMPI_TEST_OUTER_CORRUPT");
    long long step, index;
    double delta;
    if (v != NULL && sscanf(v, "%lld:%lld:%lf", &step, &index, &delta) == 3 && step >= 0 &&
        index >= 0) {
        o->corrupt_step = step;
        o->corrupt_index = index;
        o->corrupt_delta = (float)delta;
    }
#else
    (void)o;
#endif
}

static void test_corrupt(struct ftmpi_outer *o)
{
#ifdef FTMPI_TEST_HOOKS
    if (o->corrupt_step < 0 || FT_Step() != o->corrupt_step || o->narrays == 0 ||
        (size_t)o->corrupt_index >= o->arrays[0].count)
        return;
    o->corrupt_step = -1;
    o->arrays[0].global[o->corrupt_index] += o->corrupt_delta;
    FTI_WARN("test hook FTMPI_TEST_OUTER_CORRUPT: added %g to outer.%s.g[%" PRId64 "] after "
             "step %" PRId64,
             (double)o->corrupt_delta, o->arrays[0].name, o->corrupt_index, FT_Step());
#else
    (void)o;
#endif
}

/* ---- the API ---------------------------------------------------------------- */

FTMPI_EXPORT int FT_Outer_create(int algorithm, int sync_every, double outer_lr, double momentum,
                                 FT_Outer *outer_p)
{
    if (outer_p == NULL) {
        FTI_ERROR("FT_Outer_create: outer_p is NULL");
        return FT_ERR_ARG;
    }
    if (algorithm != FT_OUTER_LOCALSGD && algorithm != FT_OUTER_DILOCO) {
        FTI_ERROR("FT_Outer_create: algorithm %d: expected FT_OUTER_LOCALSGD or FT_OUTER_DILOCO",
                  algorithm);
        return FT_ERR_ARG;
    }
    if (sync_every < 1) {
        FTI_ERROR("FT_Outer_create: sync_every %d: expected >= 1", sync_every);
        return FT_ERR_ARG;
    }
    if (algorithm == FT_OUTER_DILOCO &&
        (!isfinite(outer_lr) || !(outer_lr > 0) || !isfinite(momentum) || !(momentum >= 0) ||
         !(momentum < 1))) {
        FTI_ERROR("FT_Outer_create: DiLoCo outer_lr %g, momentum %g: expected outer_lr > 0 and "
                  "0 <= momentum < 1",
                  outer_lr, momentum);
        return FT_ERR_ARG;
    }
    if (algorithm == FT_OUTER_LOCALSGD && (outer_lr != 0 || momentum != 0)) {
        FTI_ERROR("FT_Outer_create: LocalSGD takes no outer_lr or momentum (got %g, %g; pass 0)",
                  outer_lr, momentum);
        return FT_ERR_ARG;
    }
    struct ftmpi_outer *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return FT_ERR_NO_MEMORY;
    o->algorithm = algorithm;
    o->sync_every = sync_every;
    o->lr = (float)outer_lr;
    o->mu = (float)momentum;
    test_corrupt_init(o);
    *outer_p = o;
    return FT_SUCCESS;
}

static bool name_ok(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > OUTER_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)name[i]) && strchr("_.:+-", name[i]) == NULL)
            return false;
    return true;
}

static int register_one(const char *what, const char *name, float *buf, size_t count)
{
    char full[OUTER_NAME_MAX + 16];
    snprintf(full, sizeof(full), "outer.%s.%s", name, what);
    return FT_State_register(full, buf, count * sizeof(float));
}

FTMPI_EXPORT int FT_Outer_register(FT_Outer o, const char *name, float *params, int64_t count)
{
    if (o == NULL || name == NULL || params == NULL || count < 1) {
        FTI_ERROR("FT_Outer_register: %s", o == NULL         ? "outer is NULL"
                                           : name == NULL    ? "name is NULL"
                                           : params == NULL ? "params is NULL"
                                                             : "count < 1");
        return FT_ERR_ARG;
    }
    if (!name_ok(name)) {
        FTI_ERROR("FT_Outer_register: name '%s': expected 1 to %d of [A-Za-z0-9_.:+-]", name,
                  OUTER_NAME_MAX);
        return FT_ERR_ARG;
    }
    if (o->started) {
        FTI_ERROR("FT_Outer_register: '%s' after the first FT_Outer_step", name);
        return FT_ERR_STATE;
    }
    for (int i = 0; i < o->narrays; i++)
        if (!strcmp(o->arrays[i].name, name)) {
            FTI_ERROR("FT_Outer_register: '%s' is already registered", name);
            return FT_ERR_EXISTS;
        }
    size_t n = (size_t)count;
    struct outer_array a = {.params = params, .count = n};
    snprintf(a.name, sizeof(a.name), "%s", name);
    a.global = malloc(n * sizeof(float));
    a.mom = o->algorithm == FT_OUTER_DILOCO ? calloc(n, sizeof(float)) : NULL;
    float *buf = realloc(o->buf, (o->total + n + 1) * sizeof(float));
    struct outer_array *arrays = realloc(o->arrays, ((size_t)o->narrays + 1) * sizeof(*arrays));
    if (buf != NULL)
        o->buf = buf;
    if (arrays != NULL)
        o->arrays = arrays;
    if (a.global == NULL || (o->algorithm == FT_OUTER_DILOCO && a.mom == NULL) || buf == NULL ||
        arrays == NULL) {
        free(a.global);
        free(a.mom);
        return FT_ERR_NO_MEMORY;
    }
    memcpy(a.global, params, n * sizeof(float));
    int rc = register_one("g", name, a.global, n);
    if (rc != FT_SUCCESS) {
        free(a.global);
        free(a.mom);
        return rc;
    }
    if (a.mom != NULL && (rc = register_one("m", name, a.mom, n)) != FT_SUCCESS)
        return rc; /* the library reads a.global until FT_Finalize: not freed */
    o->arrays[o->narrays++] = a;
    o->total += n;
    return FT_SUCCESS;
}

FTMPI_EXPORT int FT_Outer_set_hook(FT_Outer o, FT_Outer_hook fn, void *arg)
{
    if (o == NULL)
        return FT_ERR_ARG;
    o->hook = fn;
    o->hook_arg = arg;
    return FT_SUCCESS;
}

static void run_hook(struct ftmpi_outer *o, int phase)
{
    if (o->hook != NULL)
        o->hook(o->hook_arg, phase, FT_Step());
}

static void params_reset(struct ftmpi_outer *o)
{
    for (int i = 0; i < o->narrays; i++)
        memcpy(o->arrays[i].params, o->arrays[i].global, o->arrays[i].count * sizeof(float));
}

/* The contributions of every array and the weight into o->buf. */
static void pack(struct ftmpi_outer *o, float weight)
{
    size_t off = 0;
    for (int i = 0; i < o->narrays; i++) {
        const struct outer_array *a = &o->arrays[i];
        if (o->algorithm == FT_OUTER_LOCALSGD)
            fti_outer_pack_localsgd(o->buf + off, a->params, a->count, weight);
        else
            fti_outer_pack_diloco(o->buf + off, a->global, a->params, a->count, weight);
        off += a->count;
    }
    o->buf[o->total] = weight;
}

/* The new global state from the reduced o->buf. */
static void apply(struct ftmpi_outer *o)
{
    size_t off = 0;
    float w = o->buf[o->total];
    for (int i = 0; i < o->narrays; i++) {
        struct outer_array *a = &o->arrays[i];
        if (o->algorithm == FT_OUTER_LOCALSGD)
            fti_outer_apply_localsgd(a->global, o->buf + off, a->count, w);
        else
            fti_outer_apply_diloco(a->global, a->mom, o->buf + off, a->count, w, o->lr, o->mu);
        off += a->count;
    }
    o->stats.contributors = (int64_t)w;
}

/* FT_Allreduce(SUM) of o->buf in chunks that fit an int count.  The first
 * error (later chunks then fail at once: the step latched it). */
static int reduce(struct ftmpi_outer *o)
{
    size_t n = o->total + 1;
    int rc = FT_SUCCESS;
    for (size_t off = 0; off < n; off += OUTER_CHUNK) {
        size_t len = n - off < OUTER_CHUNK ? n - off : OUTER_CHUNK;
        int r = FT_Allreduce(MPI_IN_PLACE, o->buf + off, (int)len, MPI_FLOAT, MPI_SUM,
                             FT_COMM_REPLICAS);
        if (r == FT_SUCCESS)
            o->stats.reduced_bytes += len * sizeof(float);
        else if (rc == FT_SUCCESS)
            rc = r;
    }
    return rc;
}

static bool fatal(int rc)
{
    return rc == FT_ERR_GROUP_LOST || rc == FT_ERR_KILLED || rc == FT_ERR_SDC;
}

static int outer_sync(struct ftmpi_outer *o, int *result_p)
{
    int result = FT_OUTER_SYNC_RAN, committed = 0;
    o->started = true;
    o->since_sync = 0;
    o->stats.syncs++;
    int qrc = FT_Quorum(0);
    if (fatal(qrc))
        return qrc;
    /* whatever FT_Quorum returned: it may have healed before it failed */
    int64_t heals = o->heals;
    bool healed = FT_Heal_count(&heals) == FT_SUCCESS && heals != o->heals;
    o->heals = heals;
    if (healed && FT_Step() > 0) /* not the fresh start's agreement (FTMPI_INIT_SYNC) */
        o->stats.healed++;
    run_hook(o, FT_OUTER_PHASE_QUORUM);
    float weight = 1.0f;
    if (!o->joined || healed) {
        /* the global state is this group's starting point now (healed, or
         * its own copy at the join): what it trained before counts for
         * nothing */
        params_reset(o);
        result |= FT_OUTER_RESET;
        weight = 0.0f;
    }
    /* a fresh start: no member of the quorum committed anything (the
     * quorum's step is 0), so every member joins with weight 0 and the sum
     * would change nothing: every member skips the reduction alike */
    bool fresh = qrc == FT_SUCCESS && FT_Step() == 0 && !o->joined;
    int arc = FT_SUCCESS;
    if (!fresh) {
        pack(o, weight);
        arc = reduce(o);
    }
    if (fatal(arc))
        return arc;
    run_hook(o, FT_OUTER_PHASE_REDUCED);
    int crc = FT_Commit(&committed);
    if (fatal(crc))
        return crc;
    if (committed) {
        if (!fresh)
            apply(o);
        test_corrupt(o);
        params_reset(o);
        o->joined = true;
        o->stats.committed++;
        o->stats.since_commit = 0;
        result |= FT_OUTER_COMMITTED | FT_OUTER_RESET;
    }
    if (result_p != NULL)
        *result_p = result;
    if (committed)
        return FT_SUCCESS;
    return qrc != FT_SUCCESS ? qrc : arc != FT_SUCCESS ? arc : crc;
}

FTMPI_EXPORT int FT_Outer_sync(FT_Outer o, int *result_p)
{
    if (o == NULL || o->narrays == 0) {
        FTI_ERROR("FT_Outer_sync: %s", o == NULL ? "outer is NULL" : "no array registered");
        return FT_ERR_ARG;
    }
    return outer_sync(o, result_p);
}

FTMPI_EXPORT int FT_Outer_step(FT_Outer o, int *result_p)
{
    if (o == NULL || o->narrays == 0) {
        FTI_ERROR("FT_Outer_step: %s", o == NULL ? "outer is NULL" : "no array registered");
        return FT_ERR_ARG;
    }
    int rc = FT_SUCCESS, result = 0;
    if (!o->started || o->since_sync >= o->sync_every)
        rc = outer_sync(o, &result);
    if (fatal(rc))
        return rc;
    o->since_sync++;
    o->stats.since_commit++;
    o->stats.inner_steps++;
    if (result_p != NULL)
        *result_p = result;
    return rc;
}

FTMPI_EXPORT int ftmpi_outer_stats(FT_Outer o, ftmpi_outer_stats_t *stats)
{
    if (o == NULL || stats == NULL)
        return FT_ERR_ARG;
    *stats = o->stats;
    return FT_SUCCESS;
}

FTMPI_EXPORT int FT_Outer_free(FT_Outer *outer_p)
{
    if (outer_p == NULL || *outer_p == NULL)
        return FT_SUCCESS;
    struct ftmpi_outer *o = *outer_p;
    for (int i = 0; i < o->narrays; i++) {
        free(o->arrays[i].global);
        free(o->arrays[i].mom);
    }
    free(o->arrays);
    free(o->buf);
    free(o);
    *outer_p = NULL;
    return FT_SUCCESS;
}
