/* ckpt_load.c - verifying and loading checkpoints, with resharding (see
 * ckpt_io.h).  Every old shard that is read is read whole, so that its
 * checksum is checked before any of its bytes is used. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state/ckpt_io.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "state/reshard.h"
#include "base/util.h"

#define PATH_MAX_LEN 1024

int64_t fti_ckpt_progress_ms = 5000;

/* The open files of one checkpoint, opened on first use, sizes checked,
 * and the progress of a load from them (total 0: not reported). */
struct files {
    const char *dir;
    const fti_ckpt_meta_t *m;
    int *fd;
    uint64_t done, total;
    int64_t t0_ms, next_ms;
};

/* A load that takes longer than fti_ckpt_progress_ms says what it loads
 * and how far it is (bytes, rate, time left) every fti_ckpt_progress_ms,
 * at the default level, as a long heal does (heal/fetch.c): a user
 * waiting on a restarted job sees it move. */
static void progress(struct files *f, uint64_t n)
{
    f->done += n;
    if (f->total == 0)
        return;
    int64_t now = fti_now_ms();
    if (now < f->next_ms)
        return;
    f->next_ms = now + fti_ckpt_progress_ms;
    double s = (double)(now - f->t0_ms) / 1000.0;
    double rate = s > 0 ? (double)f->done / s : 0; /* bytes/s */
    double left = rate > 0 ? (double)(f->total - FTI_MIN(f->total, f->done)) / rate : -1;
    FTI_WARN("checkpoint load progress: step %" PRId64 " from %s: %" PRIu64 " of %" PRIu64
             " bytes (%.0f%%) in %.1f s, %.1f MB/s, about %.0f s left",
             f->m->step, f->dir, f->done, f->total,
             100.0 * (double)FTI_MIN(f->done, f->total) / (double)f->total, s, rate / 1e6, left);
}

static int files_open(struct files *f, const char *dir, const fti_ckpt_meta_t *m)
{
    f->dir = dir;
    f->m = m;
    f->done = f->total = 0;
    f->t0_ms = fti_now_ms();
    f->next_ms = f->t0_ms + fti_ckpt_progress_ms;
    f->fd = malloc((size_t)m->group_size * sizeof(int));
    if (f->fd == NULL)
        return FT_ERR_NO_MEMORY;
    for (int g = 0; g < m->group_size; g++)
        f->fd[g] = -1;
    return FT_SUCCESS;
}

static void files_close(struct files *f)
{
    for (int g = 0; f->fd && g < f->m->group_size; g++)
        if (f->fd[g] >= 0)
            close(f->fd[g]);
    free(f->fd);
    f->fd = NULL;
}

static int files_get(struct files *f, int g, int *fd_p, char *err, size_t errlen)
{
    if (f->fd[g] < 0) {
        char path[PATH_MAX_LEN];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/rank-%d.bin", f->dir, g);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            snprintf(err, errlen, "open %s: %s", path, strerror(errno));
            return FT_ERR_SYSTEM;
        }
        if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size != f->m->file_bytes[g]) {
            snprintf(err, errlen, "%s: %lld bytes, the metadata says %" PRIu64, path,
                     (long long)sb.st_size, f->m->file_bytes[g]);
            close(fd);
            return FT_ERR_CHECKSUM;
        }
        f->fd[g] = fd;
    }
    *fd_p = f->fd[g];
    return FT_SUCCESS;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = pread(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

/* Reads old shard s of b whole (checking its checksum) and copies its bytes
 * [copy_off, copy_off + copy_len) (relative to the shard) to dst. */
static int read_shard(struct files *f, const fti_ckpt_buf_t *b, const fti_ckpt_shard_t *s,
                      uint64_t copy_off, uint64_t copy_len, void *dst, void *tmp,
                      uint64_t *bytes_p, char *err, size_t errlen)
{
    int fd, rc = files_get(f, s->rank, &fd, err, errlen);
    if (rc != FT_SUCCESS)
        return rc;
    if (s->end < s->start || b->elem == 0 ||
        (uint64_t)(s->end - s->start) > UINT64_MAX / b->elem) {
        snprintf(err, errlen, "%s: buffer '%s' elements [%" PRId64 ", %" PRId64 "): the byte "
                 "length overflows", f->dir, b->name, s->start, s->end);
        return FT_ERR_BAD_MESSAGE;
    }
    uint64_t len = (uint64_t)(s->end - s->start) * b->elem, sum = 0;
    for (uint64_t at = 0; at < len; at += FTI_CKPT_SUM_BLOCK) {
        size_t n = (size_t)FTI_MIN((uint64_t)FTI_CKPT_SUM_BLOCK, len - at);
        if (pread_all(fd, tmp, n, s->offset + at) != 0) {
            snprintf(err, errlen, "read %s/rank-%d.bin: %s", f->dir, s->rank, strerror(errno));
            return FT_ERR_SYSTEM;
        }
        sum = fti_checksum64(tmp, n, sum);
        progress(f, n);
        uint64_t lo = FTI_MAX(at, copy_off), hi = FTI_MIN(at + n, copy_off + copy_len);
        if (dst != NULL && lo < hi)
            memcpy((char *)dst + (lo - copy_off), (char *)tmp + (lo - at), hi - lo);
    }
    *bytes_p += len;
    if (sum != s->sum) {
        snprintf(err, errlen, "%s/rank-%d.bin: buffer '%s' elements [%" PRId64 ", %" PRId64
                 "): checksum mismatch", f->dir, s->rank, b->name, s->start, s->end);
        return FT_ERR_CHECKSUM;
    }
    return FT_SUCCESS;
}

int fti_ckpt_verify(const char *dir, const fti_ckpt_meta_t *m, uint64_t *bytes_p, char *err,
                    size_t errlen)
{
    struct files f;
    uint64_t bytes = 0;
    void *tmp = malloc(FTI_CKPT_SUM_BLOCK);
    int rc = tmp ? files_open(&f, dir, m) : FT_ERR_NO_MEMORY;
    if (rc != FT_SUCCESS) {
        free(tmp);
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    for (int g = 0; g < m->group_size && rc == FT_SUCCESS; g++) {
        int fd;
        rc = files_get(&f, g, &fd, err, errlen);
    }
    for (size_t i = 0; i < m->n_bufs && rc == FT_SUCCESS; i++)
        for (size_t k = 0; k < m->bufs[i].n_shards && rc == FT_SUCCESS; k++)
            rc = read_shard(&f, &m->bufs[i], &m->bufs[i].shards[k], 0, 0, NULL, tmp, &bytes,
                            err, errlen);
    files_close(&f);
    free(tmp);
    if (bytes_p)
        *bytes_p = bytes;
    return rc;
}

/* Target t from b into dst. */
static int load_target(struct files *f, const fti_ckpt_buf_t *b, const fti_ckpt_target_t *t,
                       void *dst, void *tmp, uint64_t *bytes_p, char *err, size_t errlen)
{
    fti_reshard_piece_t *p = NULL;
    size_t n = 0;
    int rc = fti_reshard_plan(b, t->start, t->count, &p, &n);
    for (size_t i = 0; i < n && rc == FT_SUCCESS; i++) {
        const fti_ckpt_shard_t *s = &b->shards[p[i].shard];
        rc = read_shard(f, b, s, p[i].file_offset - s->offset, p[i].length,
                        (char *)dst + p[i].dst_offset, tmp, bytes_p, err, errlen);
    }
    free(p);
    return rc;
}

/* Does the checkpoint's buffer match what the rank registered? */
static int match_target(const char *dir, const fti_ckpt_meta_t *m, const fti_ckpt_target_t *t,
                        const fti_ckpt_buf_t **b_p, char *err, size_t errlen)
{
    const fti_ckpt_buf_t *b = fti_ckpt_meta_find(m, t->name);
    if (b == NULL) {
        snprintf(err, errlen, "%s: no buffer '%s'", dir, t->name);
        return FT_ERR_NOT_FOUND;
    }
    if (b->kind != t->kind || b->elem != t->elem || b->global != t->global || t->start < 0 ||
        t->count < 0 || t->count > b->global || t->start > b->global - t->count) {
        snprintf(err, errlen, "%s: buffer '%s' is %s of %" PRId64 " x %zu bytes; this rank has %s "
                 "of %" PRId64 " x %zu bytes (elements [%" PRId64 ", %" PRId64 "))", dir, t->name,
                 b->kind == FTI_CKPT_SHARD ? "a shard array" : "replicated", b->global, b->elem,
                 t->kind == FTI_CKPT_SHARD ? "a shard array" : "replicated", t->global, t->elem,
                 t->start, t->start + t->count);
        return FT_ERR_ARG;
    }
    *b_p = b;
    return FT_SUCCESS;
}

void fti_ckpt_staged_free(fti_ckpt_staged_t *s)
{
    for (size_t i = 0; s->bufs && i < s->n; i++)
        free(s->bufs[i]);
    free(s->bufs);
    s->bufs = NULL;
    s->n = 0;
}

void fti_ckpt_staged_copy(const fti_ckpt_staged_t *s, size_t i, void *dst, size_t len)
{
    if (len > 0)
        memcpy(dst, s->bufs[i], len);
}

/* The bytes a load of targets t reads (whole old shards, each time a
 * piece of the plan needs one); 0 when a target does not match (the load
 * fails on it) or the sum overflows. */
static uint64_t load_bytes(const fti_ckpt_meta_t *m, const fti_ckpt_target_t *t, size_t n)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const fti_ckpt_buf_t *b = fti_ckpt_meta_find(m, t[i].name);
        fti_reshard_piece_t *p = NULL;
        size_t np = 0;
        if (b == NULL || b->elem == 0 ||
            fti_reshard_plan(b, t[i].start, t[i].count, &p, &np) != FT_SUCCESS)
            return 0;
        for (size_t k = 0; k < np; k++) {
            const fti_ckpt_shard_t *sh = &b->shards[p[k].shard];
            uint64_t len = sh->end >= sh->start ? (uint64_t)(sh->end - sh->start) : 0;
            if (len > (UINT64_MAX - total) / b->elem) {
                free(p);
                return 0;
            }
            total += len * b->elem;
        }
        free(p);
    }
    return total;
}

static int stage_meta(const char *dir, const fti_ckpt_meta_t *m, const fti_ckpt_target_t *t,
                      size_t n, fti_ckpt_staged_t *s, char *err, size_t errlen)
{
    struct files f;
    void *tmp = malloc(FTI_CKPT_SUM_BLOCK);
    s->bufs = calloc(n ? n : 1, sizeof(void *));
    s->n = n;
    int rc = tmp && s->bufs ? files_open(&f, dir, m) : FT_ERR_NO_MEMORY;
    if (rc != FT_SUCCESS) {
        free(tmp);
        fti_ckpt_staged_free(s);
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    f.total = rc == FT_SUCCESS ? load_bytes(m, t, n) : 0;
    for (size_t i = 0; i < n && rc == FT_SUCCESS; i++) {
        const fti_ckpt_buf_t *b = NULL;
        rc = match_target(dir, m, &t[i], &b, err, errlen);
        size_t len = (size_t)t[i].count * t[i].elem;
        if (rc == FT_SUCCESS && (s->bufs[i] = malloc(len ? len : 1)) == NULL) {
            snprintf(err, errlen, "out of memory for '%s'", t[i].name);
            rc = FT_ERR_NO_MEMORY;
        }
        if (rc == FT_SUCCESS)
            rc = load_target(&f, b, &t[i], s->bufs[i], tmp, &s->bytes, err, errlen);
    }
    files_close(&f);
    free(tmp);
    if (rc != FT_SUCCESS)
        fti_ckpt_staged_free(s);
    return rc;
}

int fti_ckpt_stage_dir(const char *dir, const fti_auth_key_t *key, const fti_ckpt_target_t *t,
                       size_t n, fti_ckpt_staged_t *s_p, char *err, size_t errlen)
{
    fti_ckpt_meta_t m;
    fti_ckpt_staged_t s;
    memset(&s, 0, sizeof(s));
    int rc = fti_ckpt_meta_read(dir, key, &m, err, errlen);
    if (rc != FT_SUCCESS)
        return rc;
    rc = stage_meta(dir, &m, t, n, &s, err, errlen);
    if (rc == FT_SUCCESS) {
        s.step = m.step;
        s.old_group_size = m.group_size;
        fti_strlcpy(s.dir, dir, sizeof(s.dir));
        *s_p = s;
    }
    fti_ckpt_meta_free(&m);
    return rc;
}

int fti_ckpt_stage(const char *where, const fti_auth_key_t *key, const fti_ckpt_target_t *t,
                   size_t n, fti_ckpt_staged_t *s_p, char *err, size_t errlen)
{
    char path[PATH_MAX_LEN];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/%s", where, FTI_CKPT_META);
    if (stat(path, &sb) == 0)
        return fti_ckpt_stage_dir(where, key, t, n, s_p, err, errlen);
    int64_t *steps = NULL;
    size_t k = 0;
    int rc = fti_ckpt_list(where, &steps, &k, err, errlen);
    if (rc != FT_SUCCESS)
        return rc;
    rc = FT_ERR_NOT_FOUND;
    snprintf(err, errlen, "%s holds no complete checkpoint", where);
    for (size_t i = 0; i < k; i++) {
        fti_ckpt_step_dir(where, steps[i], path, sizeof(path));
        rc = fti_ckpt_stage_dir(path, key, t, n, s_p, err, errlen);
        if (rc == FT_SUCCESS)
            break;
        FTI_WARN("checkpoint %s not loaded: %s%s", path, err,
                 i + 1 < k ? "; trying an older one" : "");
    }
    free(steps);
    return rc;
}
