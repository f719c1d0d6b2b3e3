/*
 * watch.c - the drop-in's watchdog (see watch.h; issue 28): the detector
 * (a hub on world rank 0, hub.c, one connection per rank, pings from a
 * thread), the rules that end the job when a rank is lost and a call
 * cannot be redone, and how the job is ended under plain mpirun and under
 * --enable-recovery.  The design: DESIGN section 10.4.
 */
#define _POSIX_C_SOURCE 200809L
#include "mpi_shim/watch.h"
#include "mpi_shim/hub.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mpi.h>

#include "ftmpi_errors.h"
#include "base/auth.h"
#include "base/log.h"
#include "base/net.h"
#include "base/sizes.h"
#include "base/util.h"

/* The status of every rank the drop-in ends (plain mpirun returns it). */
#define FTI_SHIM_EXIT_STATUS 70
#define SHIM_REDO_FACTOR 3
#define SHIM_REDO_MARGIN_MS 5000
#define SHIM_MIN_SILENCE_MS 1000
#define SHIM_LOST_TEXT 512
/* what mpirun gets to forward the rank's last line before SIGTERM */
#define SHIM_FORWARD_MS 500

enum { WHY_DEAD = FTI_HUB_WHY_DEAD, WHY_SILENT = FTI_HUB_WHY_SILENT };

/* A rank's connection to the hub. */
struct conn {
    int fd;
    int64_t heard;
    unsigned char buf[FTI_HUB_FRAME_LEN];
    size_t got;
};

struct fti_shim_calls fti_shim_calls;

static struct {
    int rank, size;
    int timeout_ms, period_ms, silence_ms;
    bool own_lh, recovery;
    struct conn hub;           /* ranks > 0: the connection to the hub */
    bool hub_left;             /* rank 0 said goodbye, or refused this rank */
    int lfd;                   /* rank 0: listening */
    fti_hub_h table;           /* rank 0: the other ranks' connections */
    struct pollfd *pfds;       /* rank 0: the listener, then the table's slots */
    _Atomic unsigned char *lost; /* per world rank: WHY_* once lost */
    atomic_int n_lost;
    pthread_t thread;
    bool running;
    atomic_int stop, bye;
    bool bye_sent;
    uint64_t seen_seq;         /* the watchdog's view of the program's calls */
    int64_t blocked_since;
} w = {.hub = {.fd = -1}, .lfd = -1};

int fti_shim_watch_n_lost(void)
{
    return atomic_load_explicit(&w.n_lost, memory_order_acquire);
}

bool fti_shim_watch_is_lost(int r)
{
    return w.lost != NULL && r >= 0 && r < w.size && atomic_load(&w.lost[r]) != 0;
}

/* "2, 5" into ranks; "2: its process ended; 5: unresponsive" into why */
static void lost_text(char *ranks, char *why, size_t len)
{
    ranks[0] = why[0] = '\0';
    for (int r = 0; w.lost != NULL && r < w.size; r++) {
        unsigned char k = atomic_load(&w.lost[r]);
        size_t a = strlen(ranks), b = strlen(why);
        if (k == 0 || a + 16 >= len || b + 80 >= len)
            continue;
        snprintf(ranks + a, len - a, "%s%d", a ? ", " : "", r);
        snprintf(why + b, len - b, "%s%d: %s", b ? "; " : "", r,
                 k == WHY_DEAD ? "its process ended (connection closed)"
                               : "unresponsive (silent for FTMPI_TIMEOUT_MS)");
    }
}

/* Under --enable-recovery: mpirun (or the node's orted) is told to end the
 * job (see the top). */
static void end_launcher(void)
{
    pid_t pp = getppid();
    char path[64], comm[32] = "";
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pp);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    if (fgets(comm, sizeof(comm), f) == NULL)
        comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    static const char *const launchers[] = {"mpirun", "orterun", "mpiexec", "orted"};
    for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++)
        if (strcmp(comm, launchers[i]) == 0)
            (void)kill(pp, SIGTERM);
}

void fti_shim_end_job(const char *call, const char *why)
{
    static atomic_int once;
    if (atomic_exchange(&once, 1) != 0)
        for (;;)
            pause(); /* the other thread ends the process */
    char lost[SHIM_LOST_TEXT], how[SHIM_LOST_TEXT];
    lost_text(lost, how, sizeof(lost));
    FTI_ERROR("libftmpi_pmpi: world rank(s) %s lost; aborting the job: world rank %d %s %s "
              "[%s] (exit status %d%s)",
              lost[0] ? lost : "an unknown rank", w.rank, why, call,
              how[0] ? how : "the survivors could not re-form", FTI_SHIM_EXIT_STATUS,
              w.recovery ? "; mpirun --enable-recovery is sent SIGTERM and returns 1" : "");
    fflush(stderr);
    if (w.recovery) {
        /* mpirun forwards the line above: it must not die first */
        fti_sleep_ms(SHIM_FORWARD_MS);
        end_launcher();
    }
    _exit(FTI_SHIM_EXIT_STATUS);
}

/* The watchdog's look at the program (see the top). */
static void judge(int64_t now)
{
    int depth = atomic_load_explicit(&fti_shim_calls.depth, memory_order_relaxed);
    int kind = atomic_load_explicit(&fti_shim_calls.kind, memory_order_relaxed);
    uint64_t seq = atomic_load_explicit(&fti_shim_calls.seq, memory_order_relaxed);
    if (depth <= 0 && kind != FTI_CALL_POLL) {
        w.blocked_since = -1;
        return;
    }
    if (seq != w.seen_seq || w.blocked_since < 0) {
        w.seen_seq = seq;
        w.blocked_since = now;
    }
    if (fti_shim_watch_n_lost() == 0)
        return;
    int64_t limit = w.timeout_ms;
    if (kind == FTI_CALL_REDOABLE && !(w.own_lh && fti_shim_watch_is_lost(0)))
        limit = (int64_t)SHIM_REDO_FACTOR * w.timeout_ms + SHIM_REDO_MARGIN_MS;
    else if (kind == FTI_CALL_LOSS_ENDS)
        limit = 0;
    if (now - w.blocked_since < limit)
        return;
    const char *name = atomic_load_explicit(&fti_shim_calls.name, memory_order_relaxed);
    char why[96];
    if (kind == FTI_CALL_LOSS_ENDS)
        snprintf(why, sizeof(why), "had a rank lost (FTMPI_SHIM_ON_FAILURE=abort) in");
    else
        snprintf(why, sizeof(why), "was blocked for %lld ms in",
                 (long long)(now - w.blocked_since));
    fti_shim_end_job(name != NULL ? name : "an MPI call", why);
}

static void send_frame(int fd, uint32_t type, uint32_t value)
{
    uint8_t f[FTI_HUB_FRAME_LEN];
    fti_hub_frame_encode(f, type, value);
    if (fd >= 0) /* a full buffer (a stopped peer) loses the frame: fine */
        (void)send(fd, f, sizeof(f), MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void close_conn(struct conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->got = 0;
}

static void mark_lost(int r, int why)
{
    if (r < 0 || r >= w.size || r == w.rank || atomic_load(&w.lost[r]) != 0)
        return;
    atomic_store(&w.lost[r], (unsigned char)why);
    atomic_fetch_add_explicit(&w.n_lost, 1, memory_order_release);
    if (w.rank == 0)
        fti_hub_tell_lost(w.table, r, why);
}

/* The hub's word that rank r is lost (hub.h's rule 5). */
static void hub_lost(int r, int why, void *arg)
{
    (void)arg;
    mark_lost(r, why);
}

/* One frame from the hub in c->buf. */
static void rank_frame(struct conn *c)
{
    uint32_t type, value;
    fti_hub_frame_decode(c->buf, &type, &value);
    if (type == FTI_HUB_LOST) {
        mark_lost((int)(value & 0xffffffu), (int)(value >> 24));
    } else if (type == FTI_HUB_BYE) {
        w.hub_left = true;
    } else if (type == FTI_HUB_REFUSED) {
        /* another connection claimed this rank first (without a job secret
         * anyone can): the hub closes ours, which is no loss of rank 0 */
        FTI_ERROR("libftmpi_pmpi: the watchdog hub refused world rank %d (another connection "
                  "claimed it first; a job without FTMPI_TOKEN_FILE lets anyone who reaches "
                  "the hub's port do that): this rank runs without its watchdog from now on",
                  w.rank);
        w.hub_left = true;
    }
}

/* Reads what the hub sent; rank_frame per frame.  False once it closed. */
static bool read_frames(struct conn *c)
{
    for (;;) {
        ssize_t n = recv(c->fd, c->buf + c->got, sizeof(c->buf) - c->got, MSG_DONTWAIT);
        if (n == 0)
            return false;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        c->got += (size_t)n;
        if (c->got == sizeof(c->buf)) {
            c->got = 0;
            rank_frame(c);
            if (c->fd < 0)
                return true;
        }
    }
}

static void hub_step(int64_t now, bool ping)
{
    struct pollfd *p = w.pfds;
    p[0] = (struct pollfd){.fd = w.lfd, .events = POLLIN};
    fti_hub_poll_set(w.table, p + 1);
    int n = poll(p, (nfds_t)fti_hub_slots(w.table) + 1, w.period_ms);
    now = fti_now_ms();
    if (n > 0) {
        fti_hub_polled(w.table, p + 1, now);
        if (p[0].revents & POLLIN)
            fti_hub_accept(w.table, w.lfd, now);
    }
    fti_hub_tick(w.table, now, ping);
}

static void rank_step(int64_t now, bool ping)
{
    struct conn *c = &w.hub;
    if (c->fd < 0) {
        fti_sleep_ms(w.period_ms);
        return;
    }
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int n = poll(&p, 1, w.period_ms);
    now = fti_now_ms();
    if (n > 0) {
        c->heard = now;
        if (!read_frames(c)) {
            close_conn(c);
            if (!w.hub_left)
                mark_lost(0, WHY_DEAD);
            return;
        }
    }
    if (w.hub_left) {
        close_conn(c);
        return;
    }
    if (now - c->heard > w.silence_ms) {
        close_conn(c);
        mark_lost(0, WHY_SILENT);
        return;
    }
    if (atomic_load(&w.bye) && !w.bye_sent) {
        send_frame(c->fd, FTI_HUB_BYE, 0);
        w.bye_sent = true;
    }
    if (ping)
        send_frame(c->fd, FTI_HUB_PING, 0);
}

static void *watch_main(void *arg)
{
    (void)arg;
    int64_t next_ping = 0;
    while (!atomic_load(&w.stop)) {
        int64_t now = fti_now_ms();
        bool ping = now >= next_ping;
        if (ping)
            next_ping = now + w.period_ms;
        if (w.rank == 0)
            hub_step(now, ping);
        else
            rank_step(now, ping);
        judge(fti_now_ms());
    }
    return NULL;
}

/* Rank 0: the hub's goodbye to every rank, its connections closed. */
static void hub_close(void)
{
    fti_hub_destroy(w.table);
    w.table = NULL;
    free(w.pfds);
    w.pfds = NULL;
    if (w.lfd >= 0)
        close(w.lfd);
    w.lfd = -1;
}

/* Rank 0: the hub's table and listener on bind_host, its address into addr. */
static int hub_open(const char *bind_host, const fti_auth_key_t *key, char *addr, size_t len)
{
    char bind[FTI_ADDRESS_SIZE];
    if (key == NULL)
        fti_auth_warn_unauthenticated();
    int rc = fti_hub_create(w.size, key, w.silence_ms, hub_lost, NULL, &w.table);
    if (rc == FT_SUCCESS) {
        w.pfds = calloc((size_t)fti_hub_slots(w.table) + 1, sizeof(*w.pfds));
        rc = w.pfds == NULL ? FT_ERR_NO_MEMORY : fti_addr_any_port(bind, sizeof(bind), bind_host);
    }
    if (rc == FT_SUCCESS)
        rc = fti_tcp_listen(bind, w.size < 4096 ? w.size + 16 : 4096, &w.lfd);
    if (rc == FT_SUCCESS)
        rc = fti_sock_name(w.lfd, addr, len);
    return rc;
}

/* Ranks > 0: connect to the hub at addr, prove the job secret (key; the
 * hub proves it back), claim this rank. */
static int hub_join(const char *addr, const fti_auth_key_t *key, int connect_timeout_ms)
{
    uint8_t hello[FTI_HUB_FRAME_LEN];
    int rc = fti_tcp_connect(addr, fti_now_ms() + connect_timeout_ms, &w.hub.fd);
    int64_t deadline = fti_now_ms() + FTI_AUTH_TIMEOUT_MS; /* what the hub grants */
    if (rc == FT_SUCCESS)
        rc = fti_auth_connect_fd(w.hub.fd, key, deadline);
    fti_hub_frame_encode(hello, FTI_HUB_HELLO, (uint32_t)w.rank);
    if (rc == FT_SUCCESS)
        rc = fti_write_full(w.hub.fd, hello, sizeof(hello), deadline);
    w.hub.heard = fti_now_ms();
    return rc;
}

int fti_shim_watch_start(int rank, int size, const char *bind_host, const fti_auth_key_t *key,
                         bool own_lh, int timeout_ms, int heartbeat_ms, int connect_timeout_ms)
{
    w.rank = rank;
    w.size = size;
    w.own_lh = own_lh;
    w.timeout_ms = timeout_ms;
    w.silence_ms = FTI_MAX(timeout_ms, SHIM_MIN_SILENCE_MS);
    w.period_ms = FTI_MAX(1, FTI_MIN(heartbeat_ms, w.silence_ms / 4));
    w.blocked_since = -1;
    /* Open MPI's own setting, read to learn the launch line (see the top):
     * not an FTMPI_* setting */
    const char *rec = getenv("OMPI_MCA_orte_enable_recovery");
    w.recovery = rec != NULL && (strcmp(rec, "1") == 0 || strcmp(rec, "true") == 0);
    w.lost = calloc((size_t)size, sizeof(*w.lost));
    int rc = w.lost != NULL ? FT_SUCCESS : FT_ERR_NO_MEMORY;
    char addr[FTI_ADDRESS_SIZE] = "";
    if (rc == FT_SUCCESS && rank == 0 &&
        (rc = hub_open(bind_host, key, addr, sizeof(addr))) != FT_SUCCESS)
        addr[0] = '\0';
    if (PMPI_Bcast(addr, (int)sizeof(addr), MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        addr[0] = '\0';
    addr[sizeof(addr) - 1] = '\0';
    if (rc == FT_SUCCESS && addr[0] == '\0')
        rc = FT_ERR_CONFIG;
    if (rc == FT_SUCCESS && rank != 0)
        rc = hub_join(addr, key, connect_timeout_ms);
    if (rc == FT_SUCCESS && pthread_create(&w.thread, NULL, watch_main, NULL) != 0)
        rc = FT_ERR_SYSTEM;
    if (rc != FT_SUCCESS) {
        FTI_ERROR("libftmpi_pmpi: world rank %d runs without its watchdog (%s): a lost rank "
                  "may leave it blocked",
                  rank, FT_Error_string(rc));
        close_conn(&w.hub);
        hub_close();
        return rc;
    }
    w.running = true;
    FTI_INFO("libftmpi_pmpi: watchdog on (hub %s, %s, ping every %d ms, silence limit %d ms)",
             addr, key != NULL ? "authenticated" : "no job secret", w.period_ms, w.silence_ms);
    return FT_SUCCESS;
}

/* atexit: the program's output is out (fflush), then the job ends as
 * fti_shim_end_job does, so that mpirun does not wait for the stopped rank */
static void end_at_exit(void)
{
    fflush(NULL);
    char lost[SHIM_LOST_TEXT], how[SHIM_LOST_TEXT];
    lost_text(lost, how, sizeof(lost));
    FTI_ERROR("libftmpi_pmpi: world rank(s) %s lost and maybe still there [%s]: world rank %d "
              "ends the job at its exit, or mpirun would wait for them (exit status %d%s)",
              lost, how, w.rank, FTI_SHIM_EXIT_STATUS,
              w.recovery ? "; mpirun --enable-recovery is sent SIGTERM and returns 1" : "");
    fflush(stderr);
    if (w.recovery) {
        fti_sleep_ms(SHIM_FORWARD_MS);
        end_launcher();
    }
    _exit(FTI_SHIM_EXIT_STATUS);
}

void fti_shim_watch_end_if_silent(void)
{
    bool silent = false;
    for (int r = 0; w.lost != NULL && r < w.size; r++)
        silent = silent || atomic_load(&w.lost[r]) == WHY_SILENT;
    if (silent && atexit(end_at_exit) != 0)
        end_at_exit();
}

void fti_shim_watch_bye(void)
{
    atomic_store(&w.bye, 1);
}

void fti_shim_watch_stop(void)
{
    if (!w.running)
        return;
    atomic_store(&w.stop, 1);
    pthread_join(w.thread, NULL);
    w.running = false;
    if (w.rank != 0 && w.hub.fd >= 0 && !w.bye_sent)
        send_frame(w.hub.fd, FTI_HUB_BYE, 0);
    close_conn(&w.hub);
    hub_close();
}
