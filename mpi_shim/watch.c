/*
 * watch.c - the drop-in's watchdog (see watch.h; issue 28): the detector
 * (a hub on world rank 0, hub.c, one connection per rank, pings from a
 * thread), the rules that end the job when a rank is lost and a call
 * cannot be redone, and how the job is ended under plain mpirun and under
 * --enable-recovery.  The design: DESIGN section 10.4.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE 1 /* on_exit */
#include "mpi_shim/watch.h"
#include "mpi_shim/hub.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include "ftmpi_errors.h"
#include "base/agent_mark.h"
#include "base/auth.h"
#include "base/log.h"
#include "base/net.h"
#include "base/sizes.h"
#include "base/util.h"
#include "comm/ulfm.h"

#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5
/* Open MPI 5's switch behind the MCA parameter async_mpi_finalize:
 * MPI_Finalize without its job-wide PMIx fence (arm_exit).  Weak. */
extern bool ompi_async_mpi_finalize __attribute__((weak));
#endif

/* The status of every rank the drop-in ends (plain mpirun returns it). */
#define FTI_SHIM_EXIT_STATUS 70
#define SHIM_REDO_FACTOR 3
#define SHIM_REDO_MARGIN_MS 5000
#define SHIM_MIN_SILENCE_MS 1000
#define SHIM_LOST_TEXT 512
/* what mpirun gets to read the rank's last lines before SIGTERM (at most;
 * see forward_and_end), and to write them out once it read them */
#define SHIM_FORWARD_MS 500
#define SHIM_FORWARD_GRACE_MS 20

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
    int64_t judge_at;          /* when judge ends the job if nothing changes; -1: never */
    char agent_dir[PATH_MAX];  /* ftmpi-run's folder, "" none */
    bool success_after_loss;   /* FTMPI_SHIM_SUCCESS_AFTER_LOSS */
} w = {.hub = {.fd = -1}, .lfd = -1, .judge_at = -1};

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

void fti_shim_watch_agent_dir(const char *dir)
{
    snprintf(w.agent_dir, sizeof(w.agent_dir), "%s", dir != NULL ? dir : "");
}

/* Under ftmpi-run: the note naming the lost ranks (base/agent_mark.h),
 * written whole (a temporary file renamed), then this rank's mark removed:
 * its end is the job's end, no loss, and the agent names the lost ranks
 * first instead of this one (issue 36 item 3).  Best effort, no log. */
static void leave_note(const char *lost, const char *how)
{
    char tmp[PATH_MAX + 64], path[PATH_MAX + 64], text[2 * SHIM_LOST_TEXT + 96];
    if (w.agent_dir[0] == '\0')
        return;
    snprintf(tmp, sizeof(tmp), "%s/.%s%ld.tmp", w.agent_dir, FTI_AGENT_NOTE_PREFIX, (long)getpid());
    snprintf(path, sizeof(path), "%s/%s%ld", w.agent_dir, FTI_AGENT_NOTE_PREFIX, (long)getpid());
    int n = snprintf(text, sizeof(text), "world rank(s) %s lost [%s]; world rank %d ended the job\n",
                     lost[0] ? lost : "unknown", how, w.rank);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    bool ok = n > 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        (void)unlink(tmp);
        return;
    }
    fti_agent_unmark(w.agent_dir);
}

/* Bytes written to fd that its reader (mpirun, an orted) has not taken:
 * a pipe's FIONREAD counts what is in it from either end, a socket's or a
 * terminal's TIOCOUTQ what waits to go; 0 for anything else (a file holds
 * it already). */
static int unread(int fd)
{
    struct stat st;
    int n = 0;
    if (fstat(fd, &st) != 0)
        return 0;
    if (S_ISFIFO(st.st_mode) ? ioctl(fd, FIONREAD, &n) != 0
                             : !(S_ISSOCK(st.st_mode) || isatty(fd)) || ioctl(fd, TIOCOUTQ, &n) != 0)
        return 0;
    return n;
}

/* Waits until the launcher read what this process wrote (stdout, stderr),
 * at most SHIM_FORWARD_MS, then SHIM_FORWARD_GRACE_MS for it to write it
 * out; returns the ms it waited.  (A fixed 500 ms here made a job end
 * FTMPI_TIMEOUT_MS + 0.5 s after the loss: issue 36 item 3.) */
static int64_t wait_forwarded(void)
{
    int64_t t0 = fti_now_ms();
    while ((unread(STDOUT_FILENO) > 0 || unread(STDERR_FILENO) > 0) &&
           fti_now_ms() - t0 < SHIM_FORWARD_MS)
        fti_sleep_ms(2);
    fti_sleep_ms(SHIM_FORWARD_GRACE_MS);
    return fti_now_ms() - t0;
}

/* The name a rank takes in its exit handler (exit_after_loss): its output
 * is out, it may be ended. */
#define SHIM_EXITING_NAME "ftmpi-exit"

/* Whether another child of this process's parent (a rank of this node,
 * under mpirun or an orted) still runs: not gone, a zombie, stopped, nor
 * in its own exit handler (named SHIM_EXITING_NAME). */
static bool sibling_running(void)
{
    pid_t me = getpid(), pp = getppid();
    DIR *d = opendir("/proc");
    struct dirent *e;
    bool busy = false;
    while (d != NULL && !busy && (e = readdir(d)) != NULL) {
        char path[300], buf[512];
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || atol(e->d_name) == (long)me)
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        char *open_p = strchr(buf, '('), *close_p = strrchr(buf, ')'); /* "pid (comm) S ppid" */
        char state = 0;
        long ppid = -1;
        if (open_p == NULL || close_p == NULL || sscanf(close_p + 1, " %c %ld", &state, &ppid) != 2 ||
            ppid != (long)pp)
            continue;
        *close_p = '\0';
        busy = strchr("ZXTt", state) == NULL && strcmp(open_p + 1, SHIM_EXITING_NAME) != 0;
    }
    if (d != NULL)
        closedir(d);
    return busy;
}

/* Before a rank that ends the job at its exit sends mpirun SIGTERM or
 * exits non-zero (plain mpirun then ends every rank): until the other
 * ranks of its node finished too (gone, or in their own exit handler:
 * their output is out), its parent changed, or SHIM_SIBLINGS_MAX_MS (or
 * FTMPI_TIMEOUT_MS if longer) passed (the parent may have other children:
 * srun's slurmstepd).  Ranks of other nodes are not waited for. */
#define SHIM_SIBLINGS_MAX_MS 10000
static void wait_siblings(void)
{
    pid_t pp = getppid();
    int64_t end = fti_now_ms() + FTI_MAX(w.timeout_ms, SHIM_SIBLINGS_MAX_MS);
    (void)prctl(PR_SET_NAME, SHIM_EXITING_NAME, 0, 0, 0);
    while (getppid() == pp && fti_now_ms() < end && sibling_running())
        fti_sleep_ms(10);
}

/* The end of fti_shim_end_job and exit_after_loss: under --enable-recovery
 * mpirun must forward the lines first, then it is sent SIGTERM; the
 * process exits.  since: when the watchdog saw the call entered (-1:
 * none), for the line that says how long the end took. */
static void forward_and_end(int64_t since, int status) __attribute__((noreturn));
static void forward_and_end(int64_t since, int status)
{
    fflush(stderr);
    if (w.recovery) {
        int64_t fwd = wait_forwarded();
        int64_t now = fti_now_ms();
        if (since >= 0)
            FTI_ERROR("libftmpi_pmpi: world rank %d ends the job %lld ms after the call was "
                      "entered (FTMPI_TIMEOUT_MS=%d; mpirun read the line above in %lld ms)",
                      w.rank, (long long)(now - since), w.timeout_ms, (long long)fwd);
        fflush(stderr);
        (void)wait_forwarded();
    }
    if (since < 0) /* at an exit: the node's other ranks may still write */
        wait_siblings();
    if (w.recovery)
        end_launcher();
    _exit(status);
}

/* fti_shim_end_job; since: as forward_and_end's (the watchdog thread's
 * own blocked_since; another thread passes -1). */
static void end_job(const char *call, const char *why, int64_t since) __attribute__((noreturn));
static void end_job(const char *call, const char *why, int64_t since)
{
    static atomic_int once;
    if (atomic_exchange(&once, 1) != 0)
        for (;;)
            pause(); /* the other thread ends the process */
    char lost[SHIM_LOST_TEXT], how[SHIM_LOST_TEXT];
    lost_text(lost, how, sizeof(lost));
    leave_note(lost, how);
    FTI_ERROR("libftmpi_pmpi: world rank(s) %s lost; aborting the job: world rank %d %s %s "
              "[%s] (exit status %d%s)",
              lost[0] ? lost : "an unknown rank", w.rank, why, call,
              how[0] ? how : "the survivors could not re-form", FTI_SHIM_EXIT_STATUS,
              w.recovery ? "; mpirun --enable-recovery is sent SIGTERM and returns 1" : "");
    forward_and_end(since, FTI_SHIM_EXIT_STATUS);
}

void fti_shim_end_job(const char *call, const char *why)
{
    end_job(call, why, -1);
}

/* The watchdog's look at the program (see the top). */
static void judge(int64_t now)
{
    int depth = atomic_load_explicit(&fti_shim_calls.depth, memory_order_relaxed);
    int kind = atomic_load_explicit(&fti_shim_calls.kind, memory_order_relaxed);
    uint64_t seq = atomic_load_explicit(&fti_shim_calls.seq, memory_order_relaxed);
    w.judge_at = -1;
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
    if (now - w.blocked_since < limit) {
        w.judge_at = w.blocked_since + limit;
        return;
    }
    const char *name = atomic_load_explicit(&fti_shim_calls.name, memory_order_relaxed);
    char why[96];
    if (kind == FTI_CALL_LOSS_ENDS)
        snprintf(why, sizeof(why), "had a rank lost (FTMPI_SHIM_ON_FAILURE=abort) in");
    else
        snprintf(why, sizeof(why), "was blocked for %lld ms in",
                 (long long)(now - w.blocked_since));
    end_job(name != NULL ? name : "an MPI call", why, w.blocked_since);
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

static void arm_exit(void);

static void mark_lost(int r, int why)
{
    if (r < 0 || r >= w.size || r == w.rank || atomic_load(&w.lost[r]) != 0)
        return;
    atomic_store(&w.lost[r], (unsigned char)why);
    atomic_fetch_add_explicit(&w.n_lost, 1, memory_order_release);
    if (w.rank == 0)
        fti_hub_tell_lost(w.table, r, why);
    arm_exit(); /* the exit status (exit_after_loss) */
    /* Under ULFM (mpirun --with-ft ulfm) every MPI_Finalize first agrees
     * with every rank not known dead, and a stopped rank is none: world
     * rank 0 (the hub; world rank 1 for rank 0) has it ended through the
     * launcher and reported failed (comm/ulfm.h), or the survivors waited
     * there until the watchdog ended the job (issue 38 item 3).  PMIx only,
     * no MPI call: this may be the watchdog thread. */
    if (why == WHY_SILENT && fti_ulfm_active() && w.rank == (r == 0 ? 1 : 0))
        fti_ulfm_end_rank(r, "was silent for FTMPI_TIMEOUT_MS (the drop-in's watchdog)");
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

/* How long the watchdog thread may wait for its peers at now: a period,
 * or less when judge ends the job sooner (its deadline, not a period
 * later). */
static int wait_ms(int64_t now)
{
    int64_t d = w.judge_at < 0 ? w.period_ms : w.judge_at - now;
    return d <= 0 ? 0 : d < w.period_ms ? (int)d : w.period_ms;
}

static void hub_step(int64_t now, bool ping)
{
    struct pollfd *p = w.pfds;
    p[0] = (struct pollfd){.fd = w.lfd, .events = POLLIN};
    fti_hub_poll_set(w.table, p + 1);
    int n = poll(p, (nfds_t)fti_hub_slots(w.table) + 1, wait_ms(now));
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
        fti_sleep_ms(wait_ms(now));
        return;
    }
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int n = poll(&p, 1, wait_ms(now));
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

/* libgfortran's FLUSH of every unit (a NULL unit): weak, present only in a
 * process that loaded it. */
extern void _gfortran_flush_i4(int *unit) __attribute__((weak));

/* on_exit after a loss (arm_exit): the program's output is out (C stdio,
 * Fortran units), then the rank exits non-zero, and under
 * --enable-recovery once the ranks of its node finished mpirun is sent
 * SIGTERM (it returns 1; it returns 0 after any exits of the ranks, and
 * would wait for a stopped rank forever).  Nothing after a loss of dead
 * ranks only with FTMPI_SHIM_SUCCESS_AFTER_LOSS=1: the exit goes on with
 * the program's status.  status: the program's; a non-zero one is kept. */
static void exit_after_loss(int status, void *arg)
{
    (void)arg;
    bool silent = false;
    for (int r = 0; w.lost != NULL && r < w.size; r++)
        silent = silent || atomic_load(&w.lost[r]) == WHY_SILENT;
    if (!silent && w.success_after_loss)
        return;
    fflush(NULL);
    if (_gfortran_flush_i4 != NULL)
        _gfortran_flush_i4(NULL);
    int st = status != 0 ? status : FTI_SHIM_EXIT_STATUS;
    char lost[SHIM_LOST_TEXT], how[SHIM_LOST_TEXT];
    lost_text(lost, how, sizeof(lost));
    leave_note(lost, how);
    if (silent)
        FTI_ERROR("libftmpi_pmpi: world rank(s) %s lost and maybe still there [%s]: world rank "
                  "%d ends the job at its exit, or mpirun would wait for them (exit status %d%s)",
                  lost, how, w.rank, st,
                  w.recovery ? "; mpirun --enable-recovery is sent SIGTERM and returns 1" : "");
    else
        FTI_ERROR("libftmpi_pmpi: world rank(s) %s lost [%s]: world rank %d exits with status %d "
                  "(FTMPI_SHIM_SUCCESS_AFTER_LOSS=1 keeps the program's %d%s)",
                  lost[0] ? lost : "unknown", how, w.rank, st, status,
                  w.recovery ? "; mpirun --enable-recovery is sent SIGTERM once this node's ranks "
                               "finished, and returns 1"
                             : "");
    forward_and_end(-1, st);
}

/* Registers exit_after_loss once (any thread).  On Open MPI 5 the
 * survivors' MPI_Finalize also skips its job-wide PMIx fence from then on:
 * the fence waited for a stopped rank (until the watchdog ended the job,
 * exit 70, before the program's last lines and this handler; issue 38
 * item 3), as mode B's did after a SIGKILL (mode/mode_b.c).  Open MPI 4.1
 * keeps its fence: there it returned (test_shim_end's stopped cells). */
static void arm_exit(void)
{
    static atomic_int armed;
    if (atomic_exchange(&armed, 1) != 0)
        return;
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5
    if (&ompi_async_mpi_finalize != NULL)
        ompi_async_mpi_finalize = true;
#endif
    if (on_exit(exit_after_loss, NULL) != 0)
        FTI_WARN("libftmpi_pmpi: on_exit: the exit status after a loss stays the program's");
}

void fti_shim_watch_exit_after_loss(bool success_ok)
{
    w.success_after_loss = success_ok;
}

void fti_shim_watch_saw_loss(void)
{
    arm_exit();
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
