/* ckpt_writer.c - the checkpoint writer thread (see ckpt_writer.h). */
#include "state/ckpt_writer.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "state/ckpt_io.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/sizes.h"
#include "base/util.h"

enum job_kind { JOB_WRITE, JOB_PUBLISH, JOB_ABANDON };

struct job {
    struct job *next;
    int kind;
    char dir[FTI_PATH_SIZE * 2];
    char root[FTI_PATH_SIZE];
    int rank, keep;
    const void *data;
    size_t len;
    fti_ckpt_meta_t meta; /* JOB_PUBLISH */
};

struct fti_ckpt_writer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *head, *tail;
    bool running, stop;
    int wstate; /* enum fti_write_state */
    int wrc;
    size_t n_reg;
    size_t *reg_off, *reg_len;
    uint64_t *sums;
    fti_ckpt_writer_stats_t stats;
    bool has_key;
    fti_auth_key_t key; /* the job's: publish's MAC */
};

static void fail(struct fti_ckpt_writer *w, int rc, const char *what, const char *err)
{
    FTI_ERROR("checkpoint: %s failed: %s (training goes on; the previous checkpoint is kept)",
              what, err);
    pthread_mutex_lock(&w->mu);
    w->stats.failed++;
    w->stats.last_error = rc;
    pthread_mutex_unlock(&w->mu);
}

static void run_write(struct fti_ckpt_writer *w, struct job *j)
{
    char err[FTI_REASON_SIZE * 2];
    int64_t t0 = fti_now_us();
    /* w->sums and the regions are not touched by the application thread
     * while the write is BUSY (fti_ckpt_writer_write refuses then) */
    int rc = fti_ckpt_write_rank_sums(j->dir, j->rank, j->data, j->len, w->reg_off, w->reg_len,
                                      w->n_reg, w->sums, err, sizeof(err));
    int64_t us = fti_now_us() - t0;
    if (rc != FT_SUCCESS)
        fail(w, rc, "writing this rank's file", err);
    pthread_mutex_lock(&w->mu);
    if (rc == FT_SUCCESS) {
        w->stats.files_written++;
        w->stats.bytes += j->len;
        w->stats.last_write_us = us;
    }
    w->wrc = rc;
    w->wstate = FTI_WRITE_DONE;
    pthread_mutex_unlock(&w->mu);
}

static void run_job(struct fti_ckpt_writer *w, struct job *j)
{
    char err[FTI_REASON_SIZE * 2];
    if (j->kind == JOB_WRITE) {
        run_write(w, j);
    } else if (j->kind == JOB_PUBLISH) {
        int64_t step = j->meta.step;
        int rc = fti_ckpt_publish(j->root, j->dir, &j->meta, w->has_key ? &w->key : NULL, err,
                                  sizeof(err));
        if (rc == FT_ERR_EXISTS) {
            FTI_INFO("checkpoint: step %" PRId64 " was already published by another group", step);
        } else if (rc != FT_SUCCESS) {
            fail(w, rc, "publishing", err);
            fti_ckpt_remove_dir(j->dir);
        } else {
            FTI_INFO("checkpoint: step %" PRId64 " published in %s", step, j->root);
            int removed = fti_ckpt_prune(j->root, j->keep);
            if (removed > 0)
                FTI_DEBUG("checkpoint: %d older folders removed", removed);
            pthread_mutex_lock(&w->mu);
            w->stats.published++;
            w->stats.last_published = step;
            pthread_mutex_unlock(&w->mu);
        }
        fti_ckpt_meta_free(&j->meta);
    } else {
        fti_ckpt_remove_dir(j->dir);
    }
}

static void *writer_main(void *arg)
{
    struct fti_ckpt_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->head == NULL && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->head == NULL)
            break;
        struct job *j = w->head;
        w->head = j->next;
        if (w->head == NULL)
            w->tail = NULL;
        w->running = true;
        pthread_mutex_unlock(&w->mu);
        run_job(w, j);
        free(j);
        pthread_mutex_lock(&w->mu);
        w->running = false;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int fti_ckpt_writer_create(const fti_auth_key_t *key, fti_ckpt_writer_h *w_p)
{
    struct fti_ckpt_writer *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return FT_ERR_NO_MEMORY;
    w->has_key = key != NULL;
    if (key != NULL)
        w->key = *key;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->stats.last_published = -1;
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        FTI_ERROR("checkpoint: pthread_create: %m");
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
        return FT_ERR_SYSTEM;
    }
    *w_p = w;
    return FT_SUCCESS;
}

void fti_ckpt_writer_destroy(fti_ckpt_writer_h w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->reg_off);
    free(w->reg_len);
    free(w->sums);
    free(w);
}

static void enqueue(struct fti_ckpt_writer *w, struct job *j)
{
    j->next = NULL;
    if (w->tail)
        w->tail->next = j;
    else
        w->head = j;
    w->tail = j;
    pthread_cond_broadcast(&w->cv);
}

static int set_regions(struct fti_ckpt_writer *w, const size_t *off, const size_t *len, size_t n)
{
    if (n > w->n_reg || w->sums == NULL) {
        size_t *o = realloc(w->reg_off, (n ? n : 1) * sizeof(*o));
        if (o)
            w->reg_off = o;
        size_t *l = realloc(w->reg_len, (n ? n : 1) * sizeof(*l));
        if (l)
            w->reg_len = l;
        uint64_t *s = realloc(w->sums, (n ? n : 1) * sizeof(*s));
        if (s)
            w->sums = s;
        if (!o || !l || !s)
            return FT_ERR_NO_MEMORY;
    }
    if (n > 0) {
        memcpy(w->reg_off, off, n * sizeof(*off));
        memcpy(w->reg_len, len, n * sizeof(*len));
    }
    w->n_reg = n;
    return FT_SUCCESS;
}

int fti_ckpt_writer_write(fti_ckpt_writer_h w, const char *dir, int rank, const void *data,
                          size_t len, const size_t *reg_off, const size_t *reg_len, size_t n)
{
    struct job *j = calloc(1, sizeof(*j));
    if (j == NULL)
        return FT_ERR_NO_MEMORY;
    pthread_mutex_lock(&w->mu);
    int rc = w->wstate != FTI_WRITE_NONE ? FT_ERR_STATE : set_regions(w, reg_off, reg_len, n);
    if (rc == FT_SUCCESS) {
        j->kind = JOB_WRITE;
        fti_strlcpy(j->dir, dir, sizeof(j->dir));
        j->rank = rank;
        j->data = data;
        j->len = len;
        w->wstate = FTI_WRITE_BUSY;
        enqueue(w, j);
    }
    pthread_mutex_unlock(&w->mu);
    if (rc != FT_SUCCESS)
        free(j);
    return rc;
}

int fti_ckpt_writer_write_state(fti_ckpt_writer_h w, int *rc_p, uint64_t *sums, size_t n)
{
    pthread_mutex_lock(&w->mu);
    int state = w->wstate;
    if (state == FTI_WRITE_DONE) {
        if (rc_p)
            *rc_p = w->wrc;
        if (sums && w->wrc == FT_SUCCESS)
            memcpy(sums, w->sums, FTI_MIN(n, w->n_reg) * sizeof(*sums));
    }
    pthread_mutex_unlock(&w->mu);
    return state;
}

void fti_ckpt_writer_collect(fti_ckpt_writer_h w)
{
    pthread_mutex_lock(&w->mu);
    if (w->wstate == FTI_WRITE_DONE)
        w->wstate = FTI_WRITE_NONE;
    pthread_mutex_unlock(&w->mu);
}

int fti_ckpt_writer_publish(fti_ckpt_writer_h w, const char *root, const char *dir,
                            fti_ckpt_meta_t *m, int keep)
{
    struct job *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        fti_ckpt_meta_free(m);
        return FT_ERR_NO_MEMORY;
    }
    j->kind = JOB_PUBLISH;
    fti_strlcpy(j->root, root, sizeof(j->root));
    fti_strlcpy(j->dir, dir, sizeof(j->dir));
    j->meta = *m;
    j->keep = keep;
    memset(m, 0, sizeof(*m));
    pthread_mutex_lock(&w->mu);
    enqueue(w, j);
    pthread_mutex_unlock(&w->mu);
    return FT_SUCCESS;
}

int fti_ckpt_writer_abandon(fti_ckpt_writer_h w, const char *dir)
{
    struct job *j = calloc(1, sizeof(*j));
    if (j == NULL)
        return FT_ERR_NO_MEMORY;
    j->kind = JOB_ABANDON;
    fti_strlcpy(j->dir, dir, sizeof(j->dir));
    pthread_mutex_lock(&w->mu);
    enqueue(w, j);
    pthread_mutex_unlock(&w->mu);
    return FT_SUCCESS;
}

void fti_ckpt_writer_wait_idle(fti_ckpt_writer_h w)
{
    pthread_mutex_lock(&w->mu);
    while (w->head != NULL || w->running)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void fti_ckpt_writer_stats(fti_ckpt_writer_h w, fti_ckpt_writer_stats_t *s)
{
    pthread_mutex_lock(&w->mu);
    *s = w->stats;
    pthread_mutex_unlock(&w->mu);
}
