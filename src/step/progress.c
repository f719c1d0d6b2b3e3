/*
 * progress.c - the library thread that runs the step's jobs in order
 * (progress.h).  A FIFO of caller-owned jobs under one mutex; the thread
 * sleeps on `more` while the queue is empty, the waiters on `done`.
 */
#include "step/progress.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"

struct fti_progress {
    bool threaded;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t more, done;
    struct fti_job *head, *tail; /* queued, not started */
    int running;                 /* jobs taken by the thread, not completed */
    bool stop;
    int failed;                  /* first failure of an abortable job */
};

/* Runs j (no lock held) unless the step already failed, then records it. */
static void run_job(struct fti_progress *p, struct fti_job *j)
{
    pthread_mutex_lock(&p->mu);
    bool skip = j->abortable && p->failed != FT_SUCCESS;
    pthread_mutex_unlock(&p->mu);
    int rc = skip ? FT_ERR_ABORTED : j->fn(j->arg);
    pthread_mutex_lock(&p->mu);
    if (rc != FT_SUCCESS && j->abortable && p->failed == FT_SUCCESS)
        p->failed = rc;
    j->rc = rc;
    j->done = true;
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->mu);
}

static void *progress_main(void *arg)
{
    struct fti_progress *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->head == NULL && !p->stop)
            pthread_cond_wait(&p->more, &p->mu);
        if (p->head == NULL)
            break; /* stop, and nothing left */
        struct fti_job *j = p->head;
        p->head = j->next;
        if (p->head == NULL)
            p->tail = NULL;
        p->running++;
        pthread_mutex_unlock(&p->mu);
        run_job(p, j);
        pthread_mutex_lock(&p->mu);
        p->running--;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int fti_progress_create(bool threaded, fti_progress_h *p_p)
{
    struct fti_progress *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return FT_ERR_NO_MEMORY;
    p->threaded = threaded;
    p->failed = FT_SUCCESS;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->more, NULL);
    pthread_cond_init(&p->done, NULL);
    if (threaded) {
        int err = pthread_create(&p->thread, NULL, progress_main, p);
        if (err != 0) {
            errno = err;
            FTI_ERROR("progress: cannot start the library's progress thread: %m");
            pthread_cond_destroy(&p->done);
            pthread_cond_destroy(&p->more);
            pthread_mutex_destroy(&p->mu);
            free(p);
            return FT_ERR_INTERNAL;
        }
    }
    *p_p = p;
    return FT_SUCCESS;
}

void fti_progress_destroy(fti_progress_h p)
{
    if (p == NULL)
        return;
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_signal(&p->more);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
    }
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->more);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

bool fti_progress_threaded(fti_progress_h p)
{
    return p->threaded;
}

void fti_progress_submit(fti_progress_h p, struct fti_job *j)
{
    j->rc = FT_SUCCESS;
    j->done = false;
    j->next = NULL;
    if (!p->threaded) {
        run_job(p, j);
        return;
    }
    pthread_mutex_lock(&p->mu);
    if (p->tail != NULL)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    pthread_cond_signal(&p->more);
    pthread_mutex_unlock(&p->mu);
}

int fti_progress_run(fti_progress_h p, struct fti_job *j)
{
    if (!fti_progress_busy(p)) {
        /* only the caller submits: nothing can start meanwhile */
        j->next = NULL;
        run_job(p, j);
        return j->rc;
    }
    fti_progress_submit(p, j);
    return fti_progress_wait(p, j);
}

int fti_progress_wait(fti_progress_h p, struct fti_job *j)
{
    pthread_mutex_lock(&p->mu);
    while (!j->done)
        pthread_cond_wait(&p->done, &p->mu);
    int rc = j->rc;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void fti_progress_drain(fti_progress_h p)
{
    pthread_mutex_lock(&p->mu);
    while (p->head != NULL || p->running > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

bool fti_progress_busy(fti_progress_h p)
{
    pthread_mutex_lock(&p->mu);
    bool busy = p->head != NULL || p->running > 0;
    pthread_mutex_unlock(&p->mu);
    return busy;
}

int fti_progress_failed(fti_progress_h p)
{
    pthread_mutex_lock(&p->mu);
    int rc = p->failed;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void fti_progress_reset(fti_progress_h p)
{
    pthread_mutex_lock(&p->mu);
    p->failed = FT_SUCCESS;
    pthread_mutex_unlock(&p->mu);
}
