/* baby.c - the baby runner: start, command and kill ftmpi-baby (baby.h). */
#include "comm/baby.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/auth.h"
#include "comm/baby_chan.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

#ifndef FTI_BINDIR
#define FTI_BINDIR "/usr/local/bin"
#endif
#define BABY_MAX_MAPPED 256 /* regions one child maps (ftmpi-baby's limit) */
#define BABY_EXIT_MS 500    /* a polite EXIT before the SIGKILL */
#define BABY_MAX_UNREAPED 64

extern char **environ;

struct fti_baby {
    char path[FTI_PATH_SIZE];
    char cpus[FTI_REASON_SIZE];
    char **env; /* copies of opts->env */
    int grace_ms, reap_ms;
    bool has_key;
    fti_auth_key_t key; /* copy of opts->key */
    pid_t pid;
    int chan;
    uint32_t seq;
    int spawns;
    uint64_t mapped[BABY_MAX_MAPPED]; /* region ids the child has mapped */
    int nmapped;
    uint64_t frees_seen;
    fti_mem_region_t staging;
};

/* Children SIGKILLed but not reaped within reap_ms (in D state, say): reaped
 * at the next start or kill, so none stays a zombie for long. */
static pthread_mutex_t unreaped_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t unreaped[BABY_MAX_UNREAPED];
static int n_unreaped;

static void reap_stragglers(void)
{
    pthread_mutex_lock(&unreaped_lock);
    for (int i = 0; i < n_unreaped;) {
        pid_t r = waitpid(unreaped[i], NULL, WNOHANG);
        if (r == unreaped[i] || (r < 0 && errno == ECHILD))
            unreaped[i] = unreaped[--n_unreaped];
        else
            i++;
    }
    pthread_mutex_unlock(&unreaped_lock);
}

/* waitpid(pid) for at most ms; parks it in unreaped[] if it is not gone. */
static void reap(pid_t pid, int ms)
{
    int64_t deadline = fti_now_ms() + ms;
    long nap_us = 50;
    for (;;) {
        pid_t r = waitpid(pid, NULL, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return;
        if (r < 0 && errno != EINTR)
            break;
        if (fti_ms_left(deadline) <= 0)
            break;
        struct timespec ts = {0, nap_us * 1000};
        nanosleep(&ts, NULL);
        nap_us = nap_us < 10000 ? nap_us * 2 : nap_us;
    }
    FTI_WARN("baby: child %d not reaped %d ms after SIGKILL; reaping it later", (int)pid, ms);
    pthread_mutex_lock(&unreaped_lock);
    if (n_unreaped < BABY_MAX_UNREAPED)
        unreaped[n_unreaped++] = pid;
    pthread_mutex_unlock(&unreaped_lock);
}

void fti_baby_kill(fti_baby_h b)
{
    if (b == NULL || b->pid <= 0)
        return;
    kill(b->pid, SIGKILL);
    reap(b->pid, b->reap_ms);
    close(b->chan);
    b->pid = -1;
    b->chan = -1;
    b->nmapped = 0;
}

int fti_baby_create(const fti_baby_opts_t *o, fti_baby_h *b_p)
{
    fti_baby_opts_t none = {0};
    if (o == NULL)
        o = &none;
    struct fti_baby *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return FT_ERR_NO_MEMORY;
    int rc = FT_SUCCESS;
    if (o->path && o->path[0])
        rc = fti_strlcpy(b->path, o->path, sizeof(b->path));
    else
        rc = fti_strlcpy(b->path, FTI_BINDIR "/ftmpi-baby", sizeof(b->path));
    if (rc == FT_SUCCESS && o->cpus)
        rc = fti_strlcpy(b->cpus, o->cpus, sizeof(b->cpus));
    size_t n = 0;
    while (o->env && o->env[n])
        n++;
    if (rc == FT_SUCCESS && (b->env = calloc(n + 1, sizeof(char *))) == NULL)
        rc = FT_ERR_NO_MEMORY;
    for (size_t i = 0; rc == FT_SUCCESS && i < n; i++)
        if (strchr(o->env[i], '=') == NULL || (b->env[i] = strdup(o->env[i])) == NULL)
            rc = strchr(o->env[i], '=') ? FT_ERR_NO_MEMORY : FT_ERR_ARG;
    b->grace_ms = o->grace_ms > 0 ? o->grace_ms : 250;
    b->reap_ms = o->reap_ms > 0 ? o->reap_ms : 2000;
    b->has_key = o->key != NULL;
    if (o->key != NULL)
        b->key = *o->key;
    b->pid = -1;
    b->chan = -1;
    b->staging.fd = -1;
    if (rc != FT_SUCCESS) {
        fti_baby_destroy(b);
        return rc == FT_ERR_NO_MEMORY ? rc : FT_ERR_ARG;
    }
    *b_p = b;
    return FT_SUCCESS;
}

/* environ with b->env set over it (the same names replaced).  Release with
 * free (the strings are borrowed). */
static char **child_env(const struct fti_baby *b)
{
    size_t n = 0, m = 0;
    while (environ && environ[n])
        n++;
    while (b->env[m])
        m++;
    char **e = calloc(n + m + 1, sizeof(char *)), **p = e;
    if (e == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t k = strcspn(environ[i], "=");
        int over = 0;
        for (size_t j = 0; j < m && !over; j++)
            over = !strncmp(b->env[j], environ[i], k + 1);
        if (!over)
            *p++ = environ[i];
    }
    for (size_t j = 0; j < m; j++)
        *p++ = b->env[j];
    return e;
}

/* posix_spawn: a fork+exec that runs no atfork handler in the parent's
 * image; the child gets sv as fd 3 and no other fd of ours. */
static int spawn_child(struct fti_baby *b, int sv)
{
    char lvl[16];
    snprintf(lvl, sizeof(lvl), "%d", (int)atomic_load(&fti_log_level));
    char *argv[] = {b->path, "--log-level", lvl, b->cpus[0] ? "--cpus" : NULL, b->cpus, NULL};
    char **envp = child_env(b);
    if (envp == NULL)
        return FT_ERR_NO_MEMORY;
    posix_spawn_file_actions_t fa;
    int e = posix_spawn_file_actions_init(&fa);
    if (e == 0)
        e = posix_spawn_file_actions_adddup2(&fa, sv, FTI_BABY_FD);
    if (e == 0)
        e = posix_spawn_file_actions_addclosefrom_np(&fa, FTI_BABY_FD + 1);
    if (e == 0)
        e = posix_spawn(&b->pid, b->path, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    if (e != 0) {
        errno = e;
        FTI_ERROR("baby: cannot start %s: %m", b->path);
        b->pid = -1;
        return FT_ERR_SYSTEM;
    }
    return FT_SUCCESS;
}

static int call(struct fti_baby *b, int type, const void *pl, size_t len, int pass_fd,
                int64_t deadline_ms, void *reply, size_t rcap, size_t *rlen_p);

/* Hands the new child the job's key (baby_chan.h, FTI_BABY_AUTH) over the
 * channel, if the runner has one (opts.key): its ring then authenticates as
 * the in-process one does.  A child that did not take it is killed: it
 * would build a ring without the handshake. */
static int send_key(struct fti_baby *b, int64_t deadline_ms)
{
    if (!b->has_key)
        return FT_SUCCESS;
    const fti_auth_key_t *k = &b->key;
    fti_baby_auth_t a;
    _Static_assert(sizeof(a.key) == sizeof(k->k), "the key's size");
    memcpy(a.key, k->k, sizeof(a.key));
    int rc = call(b, FTI_BABY_AUTH, &a, sizeof(a), -1, deadline_ms, NULL, 0, NULL);
    explicit_bzero(&a, sizeof(a));
    if (rc != FT_SUCCESS && b->pid > 0) { /* it answered no (a channel failure killed it) */
        FTI_WARN("baby: child %d refused the job key (%s); killing it", (int)b->pid,
                 FT_Error_string(rc));
        fti_baby_kill(b);
    }
    return rc;
}

int fti_baby_start(fti_baby_h b, int64_t deadline_ms)
{
    if (b->pid > 0)
        return FT_SUCCESS;
    reap_stragglers();
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        FTI_ERROR("baby: socketpair: %m");
        return FT_ERR_SYSTEM;
    }
    if (sv[1] == FTI_BABY_FD) { /* dup2 onto itself would keep CLOEXEC */
        int f = fcntl(sv[1], F_DUPFD_CLOEXEC, FTI_BABY_FD + 1);
        close(sv[1]);
        sv[1] = f;
    }
    int rc = sv[1] < 0 ? FT_ERR_SYSTEM : spawn_child(b, sv[1]);
    if (sv[1] >= 0)
        close(sv[1]);
    int fl = fcntl(sv[0], F_GETFL);
    if (rc == FT_SUCCESS && (fl < 0 || fcntl(sv[0], F_SETFL, fl | O_NONBLOCK) != 0)) {
        FTI_ERROR("baby: fcntl O_NONBLOCK: %m");
        b->chan = sv[0];
        fti_baby_kill(b);
        return FT_ERR_SYSTEM;
    }
    if (rc != FT_SUCCESS) {
        close(sv[0]);
        return rc;
    }
    b->chan = sv[0];
    b->nmapped = 0;
    b->spawns++;
    FTI_DEBUG("baby: started child %d (%s)", (int)b->pid, b->path);
    return send_key(b, deadline_ms);
}

pid_t fti_baby_pid(fti_baby_h b)
{
    return b ? b->pid : -1;
}

int fti_baby_spawns(fti_baby_h b)
{
    return b ? b->spawns : 0;
}

static const char *cmd_name(int type)
{
    static const char *const names[] = {"?", "listen", "connect", "map", "unmap",
                                        "allreduce", "abort", "exit", "nccl-id",
                                        "nccl-init", "nccl-allreduce", "auth"};
    _Static_assert(sizeof(names) / sizeof(names[0]) == FTI_BABY_TYPE_END, "a name per command");
    return type > 0 && type < FTI_BABY_TYPE_END ? names[type] : "?";
}

/* One command and its reply, the reply waited for until deadline_ms plus
 * grace.  A channel failure (no reply in time, garbage, closed) kills the
 * child and is logged here; an error the child reports is returned as is
 * (the child lives on). */
static int call(struct fti_baby *b, int type, const void *pl, size_t len, int pass_fd,
                int64_t deadline_ms, void *reply, size_t rcap, size_t *rlen_p)
{
    if (b->pid <= 0)
        return FT_ERR_ABORTED; /* killed after an error: a new quorum starts a new one */
    fti_baby_hdr_t h = {.type = (uint16_t)type, .seq = ++b->seq, .deadline_ms = deadline_ms};
    int64_t wait_until = deadline_ms + b->grace_ms;
    int rc = fti_baby_send(b->chan, &h, pl, len, pass_fd, wait_until);
    fti_baby_hdr_t r;
    _Alignas(8) char buf[FTI_BABY_MAX_PAYLOAD];
    /* no spin before the wait (fti_baby_recv_spin): the reply comes when the
     * collective ends, and a spinning parent takes the core its child needs */
    if (rc == FT_SUCCESS)
        rc = fti_baby_recv(b->chan, &r, buf, sizeof(buf), NULL, wait_until);
    if (rc == FT_SUCCESS && (r.type != (type | FTI_BABY_REPLY) || r.seq != h.seq ||
                             r.rc > 0 || r.rc < -1000 || r.len > rcap)) {
        FTI_WARN("baby: child %d answered %s #%u with type %#x #%u rc %d len %u",
                 (int)b->pid, cmd_name(type), h.seq, r.type, r.seq, r.rc, r.len);
        rc = FT_ERR_BAD_MESSAGE;
    }
    if (rc != FT_SUCCESS) {
        if (rc != FT_ERR_BAD_MESSAGE)
            FTI_WARN("baby: child %d, %s: %s; killing it", (int)b->pid, cmd_name(type),
                     rc == FT_ERR_TIMEOUT ? "no reply before the deadline"
                                          : "the channel closed");
        fti_baby_kill(b);
        return rc;
    }
    if (r.rc == FT_SUCCESS && rlen_p) {
        memcpy(reply, buf, r.len);
        *rlen_p = r.len;
    }
    return r.rc;
}

int fti_baby_listen(fti_baby_h b, const char *bind_host, int64_t deadline_ms, char *addr,
                    size_t len)
{
    fti_baby_listen_t l;
    memset(&l, 0, sizeof(l));
    if (bind_host && fti_strlcpy(l.bind_host, bind_host, sizeof(l.bind_host)) != FT_SUCCESS)
        return FT_ERR_ARG;
    int rc = fti_baby_start(b, deadline_ms);
    if (rc != FT_SUCCESS)
        return rc;
    fti_baby_addr_t a;
    size_t alen = 0;
    rc = call(b, FTI_BABY_LISTEN, &l, sizeof(l), -1, deadline_ms, &a, sizeof(a), &alen);
    if (rc == FT_SUCCESS && (alen != sizeof(a) || memchr(a.address, '\0', sizeof(a.address)) == NULL)) {
        FTI_WARN("baby: child %d sent a bad listener address", (int)b->pid);
        fti_baby_kill(b);
        rc = FT_ERR_BAD_MESSAGE;
    }
    if (rc == FT_SUCCESS)
        rc = fti_strlcpy(addr, a.address, len);
    return rc;
}

int fti_baby_connect(fti_baby_h b, int rank, int size, const char *next_addr,
                     size_t chunk_bytes, size_t small_max, int64_t deadline_ms)
{
    fti_baby_connect_t c;
    memset(&c, 0, sizeof(c));
    c.rank = rank;
    c.size = size;
    c.chunk_bytes = chunk_bytes;
    c.small_max = small_max == SIZE_MAX ? UINT64_MAX : small_max;
    if (next_addr && fti_strlcpy(c.next_addr, next_addr, sizeof(c.next_addr)) != FT_SUCCESS)
        return FT_ERR_ARG;
    int rc = call(b, FTI_BABY_CONNECT, &c, sizeof(c), -1, deadline_ms, NULL, 0, NULL);
    if (rc != FT_SUCCESS)
        fti_baby_kill(b);
    return rc;
}

/* Unmaps from the child the regions freed since the last look. */
static int prune_mapped(struct fti_baby *b, int64_t deadline_ms)
{
    uint64_t f = fti_mem_frees();
    if (f == b->frees_seen)
        return FT_SUCCESS;
    b->frees_seen = f;
    for (int i = 0; i < b->nmapped;) {
        if (b->mapped[i] == b->staging.id || fti_mem_live(b->mapped[i])) {
            i++;
            continue;
        }
        fti_baby_map_t m = {b->mapped[i], 0};
        int rc = call(b, FTI_BABY_UNMAP, &m, sizeof(m), -1, deadline_ms, NULL, 0, NULL);
        if (rc != FT_SUCCESS)
            return rc;
        b->mapped[i] = b->mapped[--b->nmapped];
    }
    return FT_SUCCESS;
}

static int is_mapped(const struct fti_baby *b, uint64_t id)
{
    for (int i = 0; i < b->nmapped; i++)
        if (b->mapped[i] == id)
            return 1;
    return 0;
}

static int map_region(struct fti_baby *b, uint64_t id, size_t bytes, int fd, int64_t deadline_ms)
{
    fti_baby_map_t m = {id, bytes};
    int rc = call(b, FTI_BABY_MAP, &m, sizeof(m), fd, deadline_ms, NULL, 0, NULL);
    if (rc == FT_SUCCESS)
        b->mapped[b->nmapped++] = id;
    return rc;
}

/* The staging region, at least bytes, mapped by the child. */
static int staging_for(struct fti_baby *b, size_t bytes, int64_t deadline_ms)
{
    if (b->staging.base && b->staging.bytes >= bytes && is_mapped(b, b->staging.id))
        return FT_SUCCESS;
    if (b->staging.base && b->staging.bytes < bytes) {
        uint64_t old = b->staging.id;
        fti_mem_region_delete(&b->staging);
        if (is_mapped(b, old)) {
            fti_baby_map_t m = {old, 0};
            int rc = call(b, FTI_BABY_UNMAP, &m, sizeof(m), -1, deadline_ms, NULL, 0, NULL);
            if (rc != FT_SUCCESS)
                return rc;
            for (int i = 0; i < b->nmapped; i++)
                if (b->mapped[i] == old)
                    b->mapped[i] = b->mapped[--b->nmapped];
        }
    }
    if (b->staging.base == NULL) {
        int rc = fti_mem_region_new(bytes, &b->staging);
        if (rc != FT_SUCCESS)
            return rc;
    }
    if (b->nmapped == BABY_MAX_MAPPED)
        return FT_ERR_NO_MEMORY;
    return map_region(b, b->staging.id, b->staging.bytes, b->staging.fd, deadline_ms);
}

/* Where buf lies for the child: a region of fti_mem_alloc (mapped now if
 * it is not yet), else NULL (*id_p = 0: stage it). */
static int locate(struct fti_baby *b, const void *buf, size_t bytes, uint64_t *id_p,
                  size_t *off_p, int64_t deadline_ms)
{
    *id_p = 0;
    int rc = prune_mapped(b, deadline_ms);
    if (rc != FT_SUCCESS)
        return rc;
    if (fti_mem_find(buf, bytes, id_p, off_p, NULL) != FT_SUCCESS) {
        *id_p = 0;
        return FT_SUCCESS;
    }
    if (is_mapped(b, *id_p))
        return FT_SUCCESS;
    int fd = -1;
    uint64_t id;
    if (b->nmapped == BABY_MAX_MAPPED || fti_mem_find(buf, bytes, &id, off_p, &fd) != FT_SUCCESS) {
        *id_p = 0; /* freed meanwhile, or the child maps too many: stage it */
        return FT_SUCCESS;
    }
    /* the size of the region, for the child's mmap: its fd knows */
    struct stat st;
    rc = fstat(fd, &st) != 0 || st.st_size <= 0
             ? FT_ERR_SYSTEM
             : map_region(b, id, (size_t)st.st_size, fd, deadline_ms);
    close(fd);
    *id_p = rc == FT_SUCCESS ? id : 0;
    return rc;
}

int fti_baby_allreduce(fti_baby_h b, void *buf, size_t count, enum fti_dtype dtype,
                       enum fti_op op, int64_t deadline_ms)
{
    if (!fti_reduce_supported(dtype, op))
        return FT_ERR_UNSUPPORTED;
    if (b->pid <= 0)
        return FT_ERR_ABORTED;
    size_t es = fti_dtype_size(dtype), bytes = count * es;
    if (count == 0)
        return FT_SUCCESS;
    if (count > SIZE_MAX / es)
        return FT_ERR_ARG;
    fti_baby_allreduce_t a = {.count = count, .dtype = dtype, .op = op};
    size_t off = 0;
    int rc = locate(b, buf, bytes, &a.region_id, &off, deadline_ms);
    if (rc == FT_SUCCESS && a.region_id == 0) {
        rc = staging_for(b, bytes, deadline_ms);
        if (rc == FT_SUCCESS) {
            memcpy(b->staging.base, buf, bytes);
            a.region_id = b->staging.id;
        }
    }
    a.offset = off;
    if (rc == FT_SUCCESS)
        rc = call(b, FTI_BABY_ALLREDUCE, &a, sizeof(a), -1, deadline_ms, NULL, 0, NULL);
    if (rc == FT_SUCCESS && a.region_id == b->staging.id)
        memcpy(buf, b->staging.base, bytes);
    if (rc != FT_SUCCESS)
        fti_baby_kill(b);
    return rc;
}

int fti_baby_command(fti_baby_h b, int type, const void *pl, size_t len, int64_t deadline_ms,
                     void *reply, size_t rcap, size_t *rlen_p)
{
    int rc = fti_baby_start(b, deadline_ms);
    if (rc == FT_SUCCESS)
        rc = call(b, type, pl, len, -1, deadline_ms, reply, rcap, rlen_p);
    return rc;
}

void fti_baby_destroy(fti_baby_h b)
{
    if (b == NULL)
        return;
    if (b->pid > 0 &&
        call(b, FTI_BABY_EXIT, NULL, 0, -1, fti_now_ms() + BABY_EXIT_MS, NULL, 0, NULL) ==
            FT_SUCCESS) {
        reap(b->pid, b->reap_ms);
        close(b->chan);
        b->pid = -1;
    }
    fti_baby_kill(b);
    fti_mem_region_delete(&b->staging);
    for (size_t i = 0; b->env && b->env[i]; i++)
        free(b->env[i]);
    free(b->env);
    free(b);
}
