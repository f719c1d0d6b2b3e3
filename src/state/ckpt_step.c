/* state/ckpt_step.c - the step's side of durable checkpoints (see state/ckpt_step.h). */
#include "state/ckpt_step.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "base/log.h"
#include "state/ckpt_io.h"
#include "state/ckpt_writer.h"
#include "base/util.h"

struct entry {
    char name[FTI_CKPT_NAME_SIZE];
    char type[FTI_CKPT_TYPE_SIZE];
    void *buf;
    int kind; /* enum fti_ckpt_kind */
    size_t elem;
    int64_t global, offset, count; /* replicated: 0 .. bytes, elem 1 */
};

/* What each rank tells group rank 0 in a round (then one `part` per entry). */
struct rec_head {
    int32_t state; /* enum rec_state */
    int32_t n;     /* entries */
    uint64_t file_bytes;
};
struct rec_part {
    int64_t start, count;
    uint64_t offset, sum;
};
enum rec_state { REC_IDLE, REC_BUSY, REC_OK, REC_FAILED };

/* Group rank 0's decision of a round. */
struct decision {
    int32_t close;  /* the pending checkpoint is done with (published or dropped) */
    int32_t start;  /* take a new one now */
    int64_t nonce;  /* names its folder */
};

struct fti_ckpt {
    fti_config_t cfg; /* copy: dir, every, keep, load, timeout */
    fti_group_h g;
    int rank, size;
    char replica_id[FTI_REPLICA_ID_SIZE];
    fti_event_log_h elog;
    fti_ckpt_writer_h w;
    struct entry *e;
    size_t n, cap;
    char *snap; /* the copy the writer writes */
    size_t snap_cap, snap_len;
    size_t *reg_off, *reg_len;
    bool pending;
    int64_t pending_step, last_due;
    char pending_dir[FTI_PATH_SIZE * 2];
    bool load_tried;
    ftmpi_checkpoint_stats_t st;
    fti_ckpt_writer_stats_t seen; /* writer stats already turned into events */
};

int fti_ckpt_create(const fti_config_t *cfg, fti_group_h g, const char *replica_id,
                    fti_event_log_h elog, fti_ckpt_h *c_p)
{
    struct fti_ckpt *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return FT_ERR_NO_MEMORY;
    c->cfg = *cfg;
    c->g = g;
    c->rank = fti_group_rank(g);
    c->size = fti_group_size(g);
    fti_strlcpy(c->replica_id, replica_id, sizeof(c->replica_id));
    c->elog = elog;
    c->last_due = -1;
    c->st.last_step = -1;
    c->st.loaded_step = -1;
    c->seen.last_published = -1;
    int rc = cfg->ckpt_dir[0] != '\0' ? fti_ckpt_writer_create(fti_config_key(cfg), &c->w)
                                      : FT_SUCCESS;
    if (rc == FT_SUCCESS && cfg->ckpt_dir[0] != '\0') {
        char err[FTI_REASON_SIZE * 2];
        rc = fti_ckpt_root_prepare(cfg->ckpt_dir, err, sizeof(err));
        if (rc == FT_ERR_ARG) { /* another user's folder, or one others can write: refused */
            FTI_ERROR("FTMPI_CKPT_DIR refused: %s", err);
            fti_ckpt_writer_destroy(c->w);
        } else if (rc != FT_SUCCESS) {
            FTI_WARN("FTMPI_CKPT_DIR: %s", err); /* a write will say it again, and count */
            rc = FT_SUCCESS;
        }
    }
    if (rc != FT_SUCCESS) {
        free(c);
        return rc;
    }
    *c_p = c;
    return FT_SUCCESS;
}

void fti_ckpt_destroy(fti_ckpt_h c)
{
    if (c == NULL)
        return;
    fti_ckpt_writer_destroy(c->w);
    free(c->e);
    free(c->snap);
    free(c->reg_off);
    free(c->reg_len);
    free(c);
}

/* ---- registration --------------------------------------------------------- */

static int add_entry(fti_ckpt_h c, const struct entry *x)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->e[i].name, x->name) == 0)
            return FT_ERR_EXISTS;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        struct entry *ne = realloc(c->e, cap * sizeof(*ne));
        size_t *o = realloc(c->reg_off, cap * sizeof(*o));
        if (o)
            c->reg_off = o;
        size_t *l = realloc(c->reg_len, cap * sizeof(*l));
        if (l)
            c->reg_len = l;
        if (ne)
            c->e = ne;
        if (!ne || !o || !l)
            return FT_ERR_NO_MEMORY;
        c->cap = cap;
    }
    c->e[c->n++] = *x;
    return FT_SUCCESS;
}

int fti_ckpt_register_replicated(fti_ckpt_h c, const char *name, void *buf, size_t bytes)
{
    if (!fti_ckpt_name_ok(name)) {
        if (c->cfg.ckpt_dir[0] != '\0')
            FTI_WARN("checkpoint: '%s' is not a checkpoint name ([A-Za-z0-9_.:+-], at most %d "
                     "characters): healing copies it, checkpoints leave it out",
                     name, FTI_CKPT_NAME_SIZE - 1);
        return FT_SUCCESS;
    }
    struct entry x = {.buf = buf, .kind = FTI_CKPT_REPLICATED, .elem = 1,
                      .global = (int64_t)bytes, .offset = 0, .count = (int64_t)bytes};
    fti_strlcpy(x.name, name, sizeof(x.name));
    fti_strlcpy(x.type, "byte", sizeof(x.type));
    return add_entry(c, &x);
}

int fti_ckpt_register_shard(fti_ckpt_h c, fti_heal_h heal, const char *name, void *buf,
                            MPI_Datatype dt, int64_t global_count, int64_t offset, int64_t count)
{
    int elem = 0;
    enum fti_dtype fdt;
    if (!fti_ckpt_name_ok(name) || global_count < 0 || offset < 0 || count < 0 ||
        count > global_count || offset > global_count - count || (buf == NULL && count > 0) ||
        dt == MPI_DATATYPE_NULL || MPI_Type_size(dt, &elem) != MPI_SUCCESS || elem <= 0) {
        FTI_ERROR("FT_State_register_shard('%s'): bad arguments (a name of [A-Za-z0-9_.:+-], "
                  "0 <= offset, 0 <= count, offset + count <= global count, a datatype)",
                  name ? name : "(null)");
        return FT_ERR_ARG;
    }
    /* global_count elements of elem bytes must be a size (the metadata,
     * resharding and the heal compute byte counts from them) */
    if ((uint64_t)global_count > (uint64_t)INT64_MAX / (uint64_t)elem ||
        (uint64_t)global_count > SIZE_MAX / (uint64_t)elem) {
        FTI_ERROR("FT_State_register_shard('%s'): %" PRId64 " elements of %d bytes overflow a "
                  "byte count", name, global_count, elem);
        return FT_ERR_ARG;
    }
    struct entry x = {.buf = buf, .kind = FTI_CKPT_SHARD, .elem = (size_t)elem,
                      .global = global_count, .offset = offset, .count = count};
    fti_strlcpy(x.name, name, sizeof(x.name));
    if (fti_dtype_from_mpi(dt, &fdt) == FT_SUCCESS)
        fti_strlcpy(x.type, fti_dtype_name(fdt), sizeof(x.type));
    else
        snprintf(x.type, sizeof(x.type), "bytes%d", elem);
    int rc = fti_heal_register(heal, name, buf, (size_t)count * (size_t)elem);
    if (rc == FT_SUCCESS)
        rc = add_entry(c, &x);
    if (rc == FT_ERR_EXISTS)
        FTI_ERROR("FT_State_register_shard: '%s' is already registered", name);
    return rc;
}

/* ---- the snapshot --------------------------------------------------------- */

/* Bytes of entry i in this rank's file (a replicated buffer: rank 0 only). */
static size_t entry_bytes(const fti_ckpt_h c, size_t i)
{
    const struct entry *x = &c->e[i];
    if (x->kind == FTI_CKPT_REPLICATED && c->rank != 0)
        return 0;
    return (size_t)x->count * x->elem;
}

/* Copies every registered buffer into c->snap (the cost of a checkpoint
 * on the step) and lays out the regions. */
static int take_snapshot(fti_ckpt_h c)
{
    size_t total = 0;
    for (size_t i = 0; i < c->n; i++) {
        c->reg_off[i] = total;
        c->reg_len[i] = entry_bytes(c, i);
        total += c->reg_len[i];
    }
    if (total > c->snap_cap) {
        char *s = realloc(c->snap, total);
        if (s == NULL) {
            FTI_ERROR("checkpoint: no memory for a %zu-byte copy of the state", total);
            return FT_ERR_NO_MEMORY;
        }
        c->snap = s;
        c->snap_cap = total;
    }
    int64_t t0 = fti_now_us();
    for (size_t i = 0; i < c->n; i++)
        if (c->reg_len[i] > 0)
            memcpy(c->snap + c->reg_off[i], c->e[i].buf, c->reg_len[i]);
    c->st.last_copy_ms = (double)(fti_now_us() - t0) / 1000.0;
    c->snap_len = total;
    return FT_SUCCESS;
}

static int start_checkpoint(fti_ckpt_h c, int64_t step, int64_t nonce)
{
    snprintf(c->pending_dir, sizeof(c->pending_dir), "%s/step-%" PRId64 ".tmp-%s-%" PRId64,
             c->cfg.ckpt_dir, step, c->replica_id, nonce);
    int rc = take_snapshot(c);
    if (rc == FT_SUCCESS)
        rc = fti_ckpt_writer_write(c->w, c->pending_dir, c->rank, c->snap, c->snap_len,
                                   c->reg_off, c->reg_len, c->n);
    /* pending either way: a failed start is reported as a failed write in
     * the next round, so the group drops the checkpoint together */
    c->pending = true;
    c->pending_step = step;
    if (rc == FT_SUCCESS)
        c->st.started++;
    return rc;
}

/* ---- the group's round ------------------------------------------------------ */

/* This rank's record: the pending write's state, its file and regions. */
static void fill_record(fti_ckpt_h c, char *rec)
{
    struct rec_head *h = (struct rec_head *)rec;
    struct rec_part *p = (struct rec_part *)(rec + sizeof(*h));
    uint64_t *sums = calloc(c->n ? c->n : 1, sizeof(*sums));
    int wrc = FT_ERR_NO_MEMORY;
    int ws = sums && c->w ? fti_ckpt_writer_write_state(c->w, &wrc, sums, c->n) : FTI_WRITE_NONE;
    h->n = (int32_t)c->n;
    h->file_bytes = c->snap_len;
    if (!c->pending)
        h->state = REC_IDLE;
    else if (ws == FTI_WRITE_BUSY)
        h->state = REC_BUSY;
    else
        h->state = ws == FTI_WRITE_DONE && wrc == FT_SUCCESS ? REC_OK : REC_FAILED;
    for (size_t i = 0; i < c->n; i++)
        p[i] = (struct rec_part){c->e[i].offset, c->e[i].count, c->reg_off[i],
                                 sums ? sums[i] : 0};
    free(sums);
}

static int cmp_shard(const void *a, const void *b)
{
    const fti_ckpt_shard_t *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Group rank 0: the metadata from every rank's record (all REC_OK). */
static int build_meta(fti_ckpt_h c, const char *recs, size_t rlen, fti_ckpt_meta_t *m)
{
    memset(m, 0, sizeof(*m));
    m->step = c->pending_step;
    m->group_size = c->size;
    m->file_bytes = calloc(c->size > 0 ? (size_t)c->size : 1, sizeof(uint64_t));
    m->bufs = calloc(c->n ? c->n : 1, sizeof(fti_ckpt_buf_t));
    m->n_bufs = c->n;
    if (m->file_bytes == NULL || m->bufs == NULL)
        return FT_ERR_NO_MEMORY;
    for (int g = 0; g < c->size; g++)
        m->file_bytes[g] = ((const struct rec_head *)(recs + (size_t)g * rlen))->file_bytes;
    for (size_t i = 0; i < c->n; i++) {
        fti_ckpt_buf_t *b = &m->bufs[i];
        const struct entry *x = &c->e[i];
        fti_strlcpy(b->name, x->name, sizeof(b->name));
        fti_strlcpy(b->type, x->type, sizeof(b->type));
        b->kind = x->kind;
        b->elem = x->elem;
        b->global = x->global;
        b->n_shards = x->kind == FTI_CKPT_SHARD ? (size_t)c->size : 1;
        if ((b->shards = calloc(b->n_shards, sizeof(*b->shards))) == NULL)
            return FT_ERR_NO_MEMORY;
        for (size_t k = 0; k < b->n_shards; k++) {
            const char *r = recs + k * rlen;
            const struct rec_part *p = (const struct rec_part *)(r + sizeof(struct rec_head)) + i;
            b->shards[k] = (fti_ckpt_shard_t){(int)k, p->start, p->start + p->count, p->offset,
                                              p->sum};
        }
        qsort(b->shards, b->n_shards, sizeof(*b->shards), cmp_shard);
        for (size_t k = 0, at = 0; k < b->n_shards; k++) {
            if (b->shards[k].start != (int64_t)at) {
                FTI_ERROR("checkpoint: the group's shards of '%s' do not tile [0, %" PRId64
                          "): no checkpoint can be made (check FT_State_register_shard)",
                          b->name, b->global);
                return FT_ERR_ARG;
            }
            at = (size_t)b->shards[k].end;
        }
    }
    return FT_SUCCESS;
}

/* Group rank 0: what to do with the pending checkpoint and a new one. */
static struct decision decide(fti_ckpt_h c, int grc, const char *recs, size_t rlen, bool want_new)
{
    struct decision d = {0, 0, fti_wall_ms()};
    bool busy = false, failed = grc != FT_SUCCESS;
    for (int g = 0; g < c->size && !failed; g++) {
        const struct rec_head *h = (const struct rec_head *)(recs + (size_t)g * rlen);
        failed |= h->n != (int32_t)c->n || h->state == REC_FAILED || h->state == REC_IDLE;
        busy |= h->state == REC_BUSY;
    }
    if (c->pending && failed) {
        FTI_WARN("checkpoint of step %" PRId64 " dropped: %s", c->pending_step,
                 grc != FT_SUCCESS ? "the group's round failed" : "a rank's write failed");
        fti_ckpt_writer_abandon(c->w, c->pending_dir);
        fti_event_checkpoint(c->elog, c->pending_step, "dropped", 0, FT_ERR_SYSTEM);
        c->st.failed++;
        d.close = 1;
    } else if (c->pending && !busy) {
        fti_ckpt_meta_t m;
        int rc = build_meta(c, recs, rlen, &m);
        if (rc == FT_SUCCESS) {
            fti_ckpt_writer_publish(c->w, c->cfg.ckpt_dir, c->pending_dir, &m, c->cfg.ckpt_keep);
        } else {
            fti_ckpt_meta_free(&m);
            fti_ckpt_writer_abandon(c->w, c->pending_dir);
            c->st.failed++;
        }
        d.close = 1;
    }
    d.start = want_new && (!c->pending || d.close);
    return d;
}

/* One round (see state/ckpt_step.h); every rank of the group runs it. */
static int round_run(fti_ckpt_h c, int64_t step, bool want_new)
{
    size_t rlen = sizeof(struct rec_head) + c->n * sizeof(struct rec_part);
    char *mine = calloc(1, rlen);
    size_t gsize = c->size > 0 ? (size_t)c->size : 1;
    char *recs = c->rank == 0 ? calloc(gsize, rlen) : NULL;
    if (mine == NULL || (c->rank == 0 && recs == NULL)) {
        free(mine);
        free(recs);
        return FT_ERR_NO_MEMORY; /* the other ranks time out: the checkpoint is dropped */
    }
    fill_record(c, mine);
    int64_t dl = fti_now_ms() + c->cfg.timeout_ms;
    int grc = fti_group_gather(c->g, mine, rlen, recs, dl);
    struct decision d = {0, 0, 0}, *got = NULL;
    int status = FT_SUCCESS;
    size_t got_len = 0;
    if (c->rank == 0)
        d = decide(c, grc, recs, rlen, want_new);
    int rc = fti_group_bcast(c->g, FT_SUCCESS, &d, sizeof(d), &status, (void **)&got, &got_len,
                             dl + c->cfg.timeout_ms);
    free(mine);
    free(recs);
    if (rc == FT_SUCCESS && got_len == sizeof(d))
        d = *got;
    else if (rc == FT_SUCCESS)
        rc = FT_ERR_BAD_MESSAGE;
    free(got);
    if (rc != FT_SUCCESS) {
        FTI_WARN("checkpoint: the group's round at step %" PRId64 " failed: %s", step,
                 FT_Error_string(rc));
        return rc;
    }
    if (d.close) {
        c->pending = false;
        fti_ckpt_writer_collect(c->w);
    }
    if (want_new && !d.start) {
        c->st.skipped++;
        FTI_INFO("checkpoint of step %" PRId64 " skipped: the one of step %" PRId64
                 " is still being written", step, c->pending_step);
    }
    return d.start ? start_checkpoint(c, step, d.nonce) : FT_SUCCESS;
}

/* Turns what the writer did since the last call into events and stats. */
static void account(fti_ckpt_h c)
{
    fti_ckpt_writer_stats_t s;
    if (c->w == NULL)
        return;
    fti_ckpt_writer_stats(c->w, &s);
    if (s.published > c->seen.published) {
        c->st.last_step = s.last_published;
        fti_event_checkpoint(c->elog, s.last_published, "published", s.bytes - c->seen.bytes, 0);
    }
    if (s.failed > c->seen.failed)
        fti_event_checkpoint(c->elog, c->pending_step, "write_failed", 0, s.last_error);
    c->st.published = (int64_t)s.published;
    c->st.write_failures = (int64_t)s.failed;
    c->st.bytes_written = s.bytes;
    c->st.last_write_ms = (double)s.last_write_us / 1000.0;
    c->seen = s;
}

int fti_ckpt_after_commit(fti_ckpt_h c, int64_t step, bool writer, bool forced)
{
    if (c->cfg.ckpt_dir[0] == '\0') {
        if (forced)
            FTI_WARN("FT_Checkpoint: FTMPI_CKPT_DIR is not set: no checkpoint");
        return forced ? FT_ERR_CONFIG : FT_SUCCESS;
    }
    bool due = forced || (c->cfg.ckpt_every > 0 && step > 0 && step % c->cfg.ckpt_every == 0);
    if (step == c->last_due)
        due = false; /* FT_Checkpoint after the every-N one of the same step */
    if (due)
        c->last_due = step;
    int rc = FT_SUCCESS;
    if (c->pending || (due && writer))
        rc = round_run(c, step, due && writer);
    account(c);
    return rc;
}

void fti_ckpt_finish(fti_ckpt_h c)
{
    if (c == NULL || c->w == NULL || !c->pending)
        return;
    fti_ckpt_writer_wait_idle(c->w);
    (void)round_run(c, c->pending_step, false);
    fti_ckpt_writer_wait_idle(c->w);
    account(c);
}

/* ---- loading ---------------------------------------------------------------- */

static const char *load_source(fti_ckpt_h c)
{
    if (strcmp(c->cfg.ckpt_load, "never") == 0)
        return NULL;
    if (strcmp(c->cfg.ckpt_load, "auto") == 0)
        return c->cfg.ckpt_dir[0] != '\0' ? c->cfg.ckpt_dir : NULL;
    return c->cfg.ckpt_load;
}

/* This rank's staged step (-1: none). */
static int64_t stage_mine(fti_ckpt_h c, const char *where, fti_ckpt_staged_t *s)
{
    fti_ckpt_target_t *t = calloc(c->n ? c->n : 1, sizeof(*t));
    char err[FTI_REASON_SIZE * 2] = "";
    if (t == NULL)
        return -1;
    for (size_t i = 0; i < c->n; i++)
        t[i] = (fti_ckpt_target_t){c->e[i].name, c->e[i].kind, c->e[i].elem, c->e[i].global,
                                   c->e[i].offset, c->e[i].count};
    int rc = fti_ckpt_stage(where, fti_config_key(&c->cfg), t, c->n, s, err, sizeof(err));
    free(t);
    if (rc == FT_ERR_NOT_FOUND) {
        FTI_INFO("checkpoint: nothing to load: %s", err);
        return -1;
    }
    if (rc != FT_SUCCESS) {
        FTI_ERROR("checkpoint: no checkpoint of %s loads: %s", where, err);
        return -1;
    }
    return s->step;
}

/* The group's agreement on the staged steps: every rank sends its own
 * (-1: none), group rank 0 answers the common step, the oldest one when
 * they differ (a rank checks only the shards it reads, so a corrupt shard
 * makes only some ranks fall back), or -1 when a rank has none.
 * *all_same_p: whether every rank staged the answer already. */
static int64_t agree_step(fti_ckpt_h c, int64_t mine, bool *all_same_p)
{
    int64_t *all = NULL, ans[2] = {-1, 0}, *got = NULL;
    if (c->rank == 0 && (all = calloc(c->size > 0 ? (size_t)c->size : 1, sizeof(*all))) == NULL)
        mine = -1;
    int64_t dl = fti_now_ms() + c->cfg.timeout_ms;
    int grc = fti_group_gather(c->g, &mine, sizeof(mine), all, dl);
    if (c->rank == 0 && grc == FT_SUCCESS) {
        ans[0] = all[0];
        ans[1] = 1;
        for (int g = 1; g < c->size; g++) {
            ans[1] &= all[g] == all[0];
            ans[0] = all[g] < 0 || ans[0] < 0 ? -1 : FTI_MIN(ans[0], all[g]);
        }
    }
    free(all);
    int status = 0;
    size_t len = 0;
    int rc = fti_group_bcast(c->g, FT_SUCCESS, ans, sizeof(ans), &status, (void **)&got, &len,
                             dl + c->cfg.timeout_ms);
    if (rc == FT_SUCCESS && len == sizeof(ans)) {
        ans[0] = got[0];
        ans[1] = got[1];
    } else {
        ans[0] = -1;
    }
    free(got);
    *all_same_p = ans[1] != 0;
    return ans[0];
}

int fti_ckpt_load_at_start(fti_ckpt_h c, int64_t max_step, int64_t step, int64_t *step_p)
{
    const char *where = load_source(c);
    if (c->load_tried || max_step != 0 || step != 0 || where == NULL || c->n == 0)
        return FT_ERR_NOT_FOUND;
    c->load_tried = true;
    fti_ckpt_staged_t s;
    memset(&s, 0, sizeof(s));
    bool same = false;
    int64_t mine = stage_mine(c, where, &s);
    int64_t agreed = agree_step(c, mine, &same);
    if (agreed >= 0 && !same) {
        /* a second round: every rank loads the oldest step any rank staged */
        char dir[FTI_PATH_SIZE * 2];
        fti_ckpt_step_dir(where, agreed, dir, sizeof(dir));
        FTI_WARN("checkpoint: the group's ranks staged different steps: all load %s", dir);
        if (mine != agreed) {
            fti_ckpt_staged_free(&s);
            mine = stage_mine(c, dir, &s);
        }
        agreed = agree_step(c, mine, &same);
    }
    if (agreed < 0 || agreed != mine || !same) {
        if (mine >= 0)
            FTI_WARN("checkpoint: step %" PRId64 " staged here, but the group did not agree on "
                     "one: nothing loaded", mine);
        fti_ckpt_staged_free(&s);
        return FT_ERR_NOT_FOUND;
    }
    for (size_t i = 0; i < c->n; i++)
        fti_ckpt_staged_copy(&s, i, c->e[i].buf, (size_t)c->e[i].count * c->e[i].elem);
    FTI_INFO("checkpoint: loaded step %" PRId64 " from %s (%d ranks wrote it, %d load it; %" PRIu64
             " bytes read)", s.step, s.dir, s.old_group_size, c->size, s.bytes);
    fti_event_checkpoint(c->elog, s.step, "loaded", s.bytes, 0);
    c->st.loaded_step = s.step;
    *step_p = s.step;
    fti_ckpt_staged_free(&s);
    return FT_SUCCESS;
}

void fti_ckpt_stats(fti_ckpt_h c, ftmpi_checkpoint_stats_t *s)
{
    account(c);
    *s = c->st;
}
