/* flight.c - the flight recorder (see flight.h). */
#include "obs/flight.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"

typedef struct fti_flight_rec {
    uint64_t seq;        /* 0 = empty */
    int op;
    int result;
    uint64_t bytes;
    int64_t quorum_id, step, start_ms, end_ms; /* end -1: running */
} fti_flight_rec_t;

struct fti_flight {
    pthread_mutex_t mu;
    fti_flight_rec_t *ring;
    size_t n;
    uint64_t next;       /* last seq handed out */
    fti_event_log_h elog;
    uint64_t dumps;
    pthread_t thread;
    bool thread_started;
    int pipe_r, pipe_w;
    bool handler;        /* ours is installed */
};

/* The one recorder the signal handler writes to (a process has one). */
static volatile sig_atomic_t sig_fd = -1;

static void on_sigusr1(int sig)
{
    (void)sig;
    int saved = errno;
    if (sig_fd >= 0) {
        ssize_t n = write(sig_fd, "u", 1);
        (void)n;
    }
    errno = saved;
}

const char *fti_flight_op_name(int op)
{
    switch (op) {
    case FTI_FLIGHT_QUORUM:
        return "quorum";
    case FTI_FLIGHT_ALLREDUCE:
        return "allreduce";
    default:
        return "commit";
    }
}

static void *dump_thread(void *arg)
{
    struct fti_flight *f = arg;
    for (;;) {
        char c;
        ssize_t n = read(f->pipe_r, &c, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || c == 'q')
            break;
        fti_flight_dump(f, "sigusr1");
    }
    return NULL;
}

/* SIGUSR1 -> the pipe, when nobody else handles it. */
static void install_handler(struct fti_flight *f)
{
    struct sigaction old, sa;
    if (sigaction(SIGUSR1, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
        (old.sa_flags & SA_SIGINFO) || sig_fd >= 0)
        return;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigusr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sig_fd = f->pipe_w;
    if (sigaction(SIGUSR1, &sa, NULL) == 0)
        f->handler = true;
    else
        sig_fd = -1;
}

int fti_flight_create(size_t n, fti_event_log_h elog, fti_flight_h *f_p)
{
    if (n < 1)
        return FT_ERR_ARG;
    struct fti_flight *f = calloc(1, sizeof(*f));
    int fds[2];
    if (f == NULL || (f->ring = calloc(n, sizeof(*f->ring))) == NULL) {
        free(f);
        return FT_ERR_NO_MEMORY;
    }
    f->n = n;
    f->elog = elog;
    pthread_mutex_init(&f->mu, NULL);
    f->pipe_r = f->pipe_w = -1;
    if (pipe2(fds, O_CLOEXEC) == 0) {
        f->pipe_r = fds[0];
        f->pipe_w = fds[1];
        (void)fcntl(f->pipe_w, F_SETFL, O_NONBLOCK); /* the handler never blocks */
        f->thread_started = pthread_create(&f->thread, NULL, dump_thread, f) == 0;
        if (f->thread_started)
            install_handler(f);
    }
    if (!f->thread_started)
        FTI_WARN("flight recorder: no SIGUSR1 dump thread (%m); dumps on errors only");
    *f_p = f;
    return FT_SUCCESS;
}

void fti_flight_destroy(fti_flight_h f)
{
    if (f == NULL)
        return;
    if (f->handler) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = SIG_DFL;
        sigemptyset(&sa.sa_mask);
        (void)sigaction(SIGUSR1, &sa, NULL);
        sig_fd = -1;
    }
    if (f->thread_started) {
        ssize_t w = write(f->pipe_w, "q", 1);
        (void)w;
        pthread_join(f->thread, NULL);
    }
    if (f->pipe_r >= 0)
        close(f->pipe_r);
    if (f->pipe_w >= 0)
        close(f->pipe_w);
    pthread_mutex_destroy(&f->mu);
    free(f->ring);
    free(f);
}

uint64_t fti_flight_begin(fti_flight_h f, int op, uint64_t bytes, int64_t quorum_id,
                          int64_t step)
{
    if (f == NULL)
        return 0;
    int64_t now = fti_wall_ms();
    pthread_mutex_lock(&f->mu);
    uint64_t seq = ++f->next;
    f->ring[(seq - 1) % f->n] = (fti_flight_rec_t){
        .seq = seq, .op = op, .bytes = bytes, .quorum_id = quorum_id, .step = step,
        .start_ms = now, .end_ms = -1};
    pthread_mutex_unlock(&f->mu);
    return seq;
}

void fti_flight_end(fti_flight_h f, uint64_t seq, int result)
{
    if (f == NULL || seq == 0)
        return;
    int64_t now = fti_wall_ms();
    pthread_mutex_lock(&f->mu);
    fti_flight_rec_t *r = &f->ring[(seq - 1) % f->n];
    if (r->seq == seq) {
        r->end_ms = now;
        r->result = result;
    }
    pthread_mutex_unlock(&f->mu);
}

void fti_flight_dump(fti_flight_h f, const char *reason)
{
    if (f == NULL)
        return;
    fti_flight_rec_t *copy = malloc(f->n * sizeof(*copy));
    if (copy == NULL)
        return;
    pthread_mutex_lock(&f->mu);
    uint64_t last = f->next, dump = ++f->dumps;
    memcpy(copy, f->ring, f->n * sizeof(*copy));
    pthread_mutex_unlock(&f->mu);
    uint64_t first = last >= f->n ? last - f->n + 1 : 1;
    size_t records = 0;
    int64_t step = -1;
    for (uint64_t s = first; s <= last && s > 0; s++)
        if (copy[(s - 1) % f->n].seq == s) {
            records++;
            step = copy[(s - 1) % f->n].step;
        }
    /* the header first: a dump of no record still says the rank is there */
    if (f->elog)
        fti_event_flight_dump(f->elog, step, dump, reason, records);
    else
        FTI_WARN("flight %s dump %llu: %zu records", reason, (unsigned long long)dump, records);
    for (uint64_t s = first; s <= last && s > 0; s++) {
        const fti_flight_rec_t *r = &copy[(s - 1) % f->n];
        if (r->seq != s)
            continue;
        const char *res = r->end_ms < 0 ? "running" : fti_error_name(r->result);
        if (f->elog)
            fti_event_flight(f->elog, r->step, dump, reason, r->seq, fti_flight_op_name(r->op),
                             r->bytes, r->quorum_id, r->start_ms, r->end_ms, res);
        else
            FTI_WARN("flight %s #%llu: %s %llu bytes quorum %lld step %lld start %lld end %lld %s",
                     reason, (unsigned long long)r->seq, fti_flight_op_name(r->op),
                     (unsigned long long)r->bytes, (long long)r->quorum_id, (long long)r->step,
                     (long long)r->start_ms, (long long)r->end_ms, res);
    }
    free(copy);
}
