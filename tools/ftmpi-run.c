/*
 * ftmpi-run - the restart agent of mode A (DESIGN.md section 2).
 *
 *     ftmpi-run --replica-id ID [--max-restarts N] [--backoff-ms MS]
 *               [--max-backoff-ms MS] [--grace-ms MS] [--events FILE]
 *               [--no-rank-watch] [--quiet] -- command [args...]
 *
 * Runs one replica group's command (usually `mpirun -np R ./app`) in its own
 * process group with FTMPI_REPLICA_ID and FTMPI_RESTART_COUNT set, and starts
 * it again when it fails, after a doubling backoff, up to --max-restarts
 * times.  SIGUSR1 is passed to the command's process group (the ranks'
 * flight recorders dump: src/obs/flight.h).  SIGTERM, SIGINT and SIGHUP are
 * forwarded to the command's process
 * group; the agent then waits at most --grace-ms for the command and what it
 * started, kills whatever is still there with SIGKILL, and exits with the
 * command's status without restarting it.
 *
 * The agent is single-threaded.  Signals are blocked and read from a
 * signalfd in the one poll loop, so no work runs in a signal handler.
 * Whenever the command ends, whatever it started that is still there (ranks
 * orphaned by a killed mpirun, in process groups of their own, say) is
 * killed with SIGKILL before the next start -- at once after a failure, at
 * the end of the grace period after a stop signal.  The agent is a child
 * subreaper, so all of these stay its descendants.
 *
 * A rank that dies (on this node) is noticed by the agent itself
 * (rank_watch.h): the group is ended and restarted at once, without waiting
 * for mpirun to notice.  A command that cannot start its program (status
 * 126/127, as sh and srun report it, or Open MPI 4's mpirun's 132 "unable
 * to launch", 5's 183) is not restarted: it would fail the same way every
 * time.
 *
 * If the agent itself is killed with SIGKILL, the command gets SIGTERM
 * (PR_SET_PDEATHSIG).
 *
 * Exit status: 0 when the command succeeded; the command's last status when
 * it was stopped or ran out of restarts (its exit code, or 128 + the signal
 * that killed it); 126/127 when it could not be executed; 2 for a bad flag
 * or a bad FTMPI_* value; 1 when the agent itself failed.
 */
#include "ftmpi_config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/settings.h"
#include "base/sizes.h"
#include "base/util.h"
#include "proc_tree.h"
#include "rank_watch.h"
#include "run_args.h"

#define EXIT_AGENT 1
#define EXIT_CANNOT_EXEC 126 /* the command is there but cannot be executed (as sh does) */
#define EXIT_NOT_FOUND 127   /* no such command (as sh does) */
#define EXIT_MPIRUN_LAUNCH 132 /* Open MPI 4's mpirun: "unable to launch" the program */
#define EXIT_PRTE_LAUNCH 183   /* Open MPI 5's (PRRTE's) mpirun: a missing or not executable program */
#define KILL_WAIT_MS 5000 /* after SIGKILL, how long to wait for the command's processes */
#define RANK_WATCH_MS 20  /* how often the ranks' marks are looked at (rank_watch.h) */
#define RANK_DRAIN_MS 100 /* after a rank's death, time for mpirun to pass on its last output */

/* one --events line: the replica id escaped (at most 6 bytes a character,
 * \u00XX) with its quotes, and at most 160 bytes of the rest */
#define EVENT_LINE_SIZE (6 * FTI_REPLICA_ID_SIZE + 2 + 160)

static const char *prog = FTI_RUN_PROG;

struct agent {
    struct agent_opts o;
    sigset_t orig_mask;   /* the mask the agent inherited; restored in the child */
    int sfd;              /* signalfd of SIGCHLD, SIGTERM, SIGINT, SIGHUP */
    int events_fd;        /* --events file, -1 when none */
    int events_failed;    /* a write to it failed (logged once) */
    int stdin_null;       /* stdin is a terminal: the child reads /dev/null */
    pid_t child;          /* running command (not reaped yet), also its process group
                             id; 0 = none */
    int restarts;         /* restarts done so far (FTMPI_RESTART_COUNT of the child) */
    int64_t lost_ms;      /* wall ms the agent saw the run fail (a rank died, or a
                           * non-zero exit), 0 none: the next run's
                           * FTMPI_RESTART_LOST_MS (its recovery starts there) */
    pid_t last_pid;       /* the last command that ended */
    int last_status;      /* its status, as the agent would exit */
    pid_t self;           /* the agent's pid */
    int stopping;         /* a stop signal arrived: forward, wait, never restart */
    int64_t deadline_ms;  /* while stopping: SIGKILL at this time */
    int watching;         /* the ranks' marks are watched (rank_watch.h) */
    pid_t dead_rank;      /* a rank found dead, its group not ended yet (0: none) */
    int64_t dead_kill_ms; /* ... ended at this time (its output drained) */
};

/* ---- events ------------------------------------------------------------ */

/* Logs, once, that the --events file could not be written. */
static void events_failed(struct agent *a, const char *why)
{
    if (a->events_failed)
        return;
    a->events_failed = 1;
    FTI_ERROR("cannot write the event log %s: %s", a->o.events_path, why);
}

/* Writes one JSON line to the --events file:
 *   {"event":E,"replica_id":ID,"restart":k,"pid":P,"status":S,"signal":G,
 *    "time_ms":T[,"backoff_ms":B]}
 * E: start (a run began), exit (it ended), restart (another run will start
 * after backoff_ms; restart is its number), giveup (no more runs: out of
 * restarts, or the command cannot be executed), stop (a stop signal came:
 * forwarded while a run is on, or during a backoff).  restart: the number of
 * the run (its FTMPI_RESTART_COUNT); pid: the run's pid (for restart, giveup
 * and stop during a backoff: the run that ended last); status: exit code or
 * 128 + signal, or null; signal: the one that killed the run (exit) or was
 * forwarded (stop), or null; time_ms: wall clock, ms since the epoch.
 * One write per line, so concurrent agents may share the file. */
static void event(struct agent *a, const char *ev, pid_t pid, int status, int sig, int backoff)
{
    char line[EVENT_LINE_SIZE], st[16] = "null", sg[16] = "null", bo[32] = "";
    size_t n, cap = sizeof(line);

    if (a->events_fd < 0)
        return;
    if (status >= 0)
        snprintf(st, sizeof(st), "%d", status);
    if (sig > 0)
        snprintf(sg, sizeof(sg), "%d", sig);
    if (backoff >= 0)
        snprintf(bo, sizeof(bo), ",\"backoff_ms\":%d", backoff);
    n = (size_t)snprintf(line, cap, "{\"event\":\"%s\",\"replica_id\":", ev);
    if (n < cap)
        n += fti_json_escape(line + n, cap - n, a->o.replica_id);
    if (n < cap)
        n += (size_t)snprintf(line + n, cap - n,
                              ",\"restart\":%d,\"pid\":%ld,\"status\":%s,\"signal\":%s,"
                              "\"time_ms\":%" PRId64 "%s}\n",
                              a->restarts, (long)pid, st, sg, fti_wall_ms(), bo);
    if (n >= cap) { /* cannot happen with EVENT_LINE_SIZE; never write half a line */
        events_failed(a, "line too long");
        return;
    }

    ssize_t w;
    do {
        w = write(a->events_fd, line, n);
    } while (w < 0 && errno == EINTR);
    if (w != (ssize_t)n)
        events_failed(a, w < 0 ? strerror(errno) : "short write");
}

/* ---- the command ----------------------------------------------------- */

static const char *sig_name(int sig)
{
    const char *s = sigabbrev_np(sig);
    return s ? s : "?";
}

/* The child's side of start_child: execs the command in a process group of
 * its own; writes errno to pfd[1] when it cannot.  Async-signal-safe calls
 * only until exec (the agent has one thread, so execvp's PATH search is
 * safe too). */
static _Noreturn void exec_child(const struct agent *a, const int pfd[2])
{
    int err;
    close(pfd[0]);
    setpgid(0, 0);
    signal(SIGTERM, SIG_DFL); /* forwarded signals must act even if the */
    signal(SIGINT, SIG_DFL);  /* agent was started with them ignored */
    signal(SIGHUP, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
    sigprocmask(SIG_SETMASK, &a->orig_mask, NULL);
    /* if the agent itself is killed (SIGKILL), the command gets SIGTERM
     * and can take its ranks down instead of running on unsupervised */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != a->self)
        _exit(128 + SIGTERM);
    if (a->stdin_null) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd >= 0 && fd != STDIN_FILENO) {
            dup2(fd, STDIN_FILENO);
            close(fd);
        }
    }
    execvp(a->o.argv[0], a->o.argv);
    err = errno;
    while (write(pfd[1], &err, sizeof(err)) < 0 && errno == EINTR)
        ;
    _exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

/* Starts the command.  Returns 0, or the status to exit with (126/127)
 * when it could not be executed (no restart helps then), or EXIT_AGENT. */
static int start_child(struct agent *a)
{
    char count[16];
    int pfd[2];

    char lost[24];
    snprintf(count, sizeof(count), "%d", a->restarts);
    snprintf(lost, sizeof(lost), "%" PRId64, a->restarts > 0 ? a->lost_ms : 0);
    a->lost_ms = 0;
    if (setenv("FTMPI_REPLICA_ID", a->o.replica_id, 1) != 0 ||
        setenv("FTMPI_RESTART_COUNT", count, 1) != 0 ||
        setenv("FTMPI_RESTART_LOST_MS", lost, 1) != 0) {
        FTI_ERROR("setenv: %m");
        return EXIT_AGENT;
    }
    /* exec failure report: the write end closes on a successful exec */
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        FTI_ERROR("pipe2: %m");
        return EXIT_AGENT;
    }
    if (a->watching)
        fti_rank_watch_clear(); /* marks of the last run's ranks */
    pid_t pid = fork();
    if (pid < 0) {
        FTI_ERROR("fork: %m");
        close(pfd[0]);
        close(pfd[1]);
        return EXIT_AGENT;
    }
    if (pid == 0)
        exec_child(a, pfd);

    /* parent: also set the group here, so that it exists before the first
     * kill(-pid) whichever process runs first (EACCES once it has exec'd) */
    setpgid(pid, pid);
    close(pfd[1]);
    int err = 0;
    ssize_t r;
    do {
        r = read(pfd[0], &err, sizeof(err));
    } while (r < 0 && errno == EINTR);
    close(pfd[0]);
    if (r == (ssize_t)sizeof(err)) {
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        errno = err;
        FTI_ERROR("cannot execute '%s': %m", a->o.argv[0]);
        int code = err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
        a->last_status = code;
        event(a, "giveup", pid, code, 0, -1);
        return code;
    }
    a->child = pid;
    a->stopping = 0;
    a->dead_rank = 0;
    FTI_INFO("started '%s' as pid %ld (restart %d of at most %d)", a->o.argv[0], (long)pid,
             a->restarts, a->o.max_restarts);
    event(a, "start", pid, -1, 0, -1);
    return 0;
}

/* ---- the command's process tree (proc_tree.h) -------------------------- */

/* Names (log, events) every rank newly found dead unless stopping: all of
 * them (hydra ends the others at once); the first starts the drain. */
static int report_dead_ranks(struct agent *a, const char *what_now)
{
    pid_t dead[8];
    if (a->watching && !a->stopping)
        (void)fti_rank_watch_notes(); /* the lost ranks first (rank_watch.h) */
    int n = a->watching && !a->stopping ? fti_rank_watch_dead(dead, 8, what_now) : 0;
    for (int i = 0; i < n; i++)
        event(a, "rank_died", dead[i], -1, 0, -1);
    if (n > 0 && a->lost_ms == 0)
        a->lost_ms = fti_wall_ms();
    if (n > 0 && a->dead_rank == 0) {
        a->dead_rank = dead[0];
        a->dead_kill_ms = fti_now_ms() + RANK_DRAIN_MS; /* its last lines: in mpirun's pipes */
    }
    return n;
}

/* Records how the command ended (a->child = 0 afterwards), dead ranks first. */
static void record_exit(struct agent *a, int st)
{
    pid_t pid = a->child;

    report_dead_ranks(a, "the command ended too");
    a->child = 0;
    a->last_pid = pid;
    if ((!WIFEXITED(st) || WEXITSTATUS(st) != 0) && a->lost_ms == 0)
        a->lost_ms = fti_wall_ms();
    if (WIFEXITED(st)) {
        a->last_status = WEXITSTATUS(st);
        if (a->last_status == 0)
            FTI_INFO("pid %ld exited with status 0", (long)pid);
        else
            FTI_WARN("pid %ld exited with status %d (restart %d)", (long)pid, a->last_status,
                     a->restarts);
        event(a, "exit", pid, a->last_status, 0, -1);
    } else {
        int sig = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
        a->last_status = 128 + sig;
        FTI_WARN("pid %ld killed by signal %d (SIG%s), status %d (restart %d)", (long)pid, sig,
                 sig_name(sig), a->last_status, a->restarts);
        event(a, "exit", pid, a->last_status, sig, -1);
    }
}

/* Reaps every child that has ended: the command (its status is recorded)
 * and adopted orphans.  Returns 1 while the agent has children left. */
static int reap_children(struct agent *a)
{
    for (;;) {
        int st = 0;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p == 0)
            return 1;
        if (p < 0) {
            if (errno == EINTR)
                continue;
            if (errno != ECHILD)
                FTI_ERROR("waitpid: %m");
            return 0;
        }
        if (p == a->child)
            record_exit(a, st);
        else
            FTI_DEBUG("reaped pid %ld, left behind by the command", (long)p);
    }
}

/* Kills every descendant with SIGKILL (the command too, if it still runs)
 * and reaps them, for at most KILL_WAIT_MS. */
static void kill_tree(struct agent *a)
{
    int64_t deadline = fti_now_ms() + KILL_WAIT_MS;
    int killed = 0;

    for (;;) {
        int alive = fti_proc_signal_descendants(a->self, SIGKILL);
        int children = reap_children(a);
        if (alive > 0 && !killed) {
            FTI_INFO("killing %d process%s left by the command", alive, alive == 1 ? "" : "es");
            killed = 1;
        }
        if (alive == 0 && !children && a->child == 0)
            return;
        if (fti_ms_left(deadline) == 0) {
            FTI_ERROR("%d process%s of the command still there %d ms after SIGKILL; leaving them",
                      alive, alive == 1 ? "" : "es", KILL_WAIT_MS);
            if (a->child != 0) {
                a->last_status = 128 + SIGKILL;
                a->last_pid = a->child;
                a->child = 0;
            }
            return;
        }
        fti_sleep_ms(10);
    }
}

/* A stop signal while the command's tree exists: forward it to the
 * command's process group (to the remaining descendants once the command
 * itself has ended) and start the grace period. */
static void forward(struct agent *a, int sig)
{
    if (a->child != 0) {
        /* not reaped yet, so the group id is still the command's */
        if (kill(-a->child, sig) != 0 && errno != ESRCH)
            FTI_ERROR("kill(-%ld, %d): %m", (long)a->child, sig);
    } else {
        fti_proc_signal_descendants(a->self, sig);
    }
    if (!a->stopping) {
        a->stopping = 1;
        a->deadline_ms = fti_now_ms() + a->o.grace_ms;
        FTI_WARN("got SIG%s: forwarded to process group %ld, waiting up to %d ms", sig_name(sig),
                 (long)a->child, a->o.grace_ms);
        event(a, "stop", a->child, -1, sig, -1);
    } else {
        FTI_WARN("got SIG%s again: forwarded", sig_name(sig));
    }
}

/* SIGUSR1 goes to the command's process group (mpirun passes it to the
 * ranks: their flight recorders dump, src/obs/flight.h); no stop. */
static void pass_usr1(struct agent *a)
{
    if (a->child == 0)
        return;
    if (kill(-a->child, SIGUSR1) != 0 && errno != ESRCH)
        FTI_ERROR("kill(-%ld, SIGUSR1): %m", (long)a->child);
    else
        FTI_INFO("got SIGUSR1: passed to process group %ld (the ranks' flight recorders)",
                 (long)a->child);
}

/* Reads the pending signals (SIGUSR1 passed on at once).  Returns the last
 * stop signal read (0: none, only SIGCHLD or SIGUSR1), or -1 on an error. */
static int drain_signals(struct agent *a)
{
    struct signalfd_siginfo si[8];
    int stop = 0;

    for (;;) {
        ssize_t r = read(a->sfd, si, sizeof(si));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return stop;
            FTI_ERROR("read(signalfd): %m");
            return -1;
        }
        for (size_t k = 0; k < (size_t)r / sizeof(si[0]); k++) {
            if (si[k].ssi_signo == SIGUSR1)
                pass_usr1(a);
            else if (si[k].ssi_signo != SIGCHLD)
                stop = (int)si[k].ssi_signo;
        }
    }
}

/* Waits for the running command to end, forwarding stop signals, then
 * clears its process tree.  Returns with a->last_status set and
 * a->child = 0.
 *
 * After a failure of the command, what it left is killed at once.  After a
 * stop signal, the rest of the tree gets the same grace period as the
 * command (ranks may still be writing a checkpoint); what is left at the
 * deadline is killed. */
static void supervise(struct agent *a)
{
    struct pollfd pfd = {.fd = a->sfd, .events = POLLIN};

    for (;;) {
        reap_children(a);
        if (a->child == 0 && (!a->stopping || fti_proc_signal_descendants(a->self, 0) == 0)) {
            kill_tree(a);
            return;
        }
        int timeout = a->stopping ? fti_ms_left(a->deadline_ms) : -1;
        if (a->child == 0)
            timeout = FTI_MIN(timeout, 50); /* no SIGCHLD from grandchildren: poll */
        else if (a->watching && !a->stopping)
            timeout = timeout < 0 ? RANK_WATCH_MS : FTI_MIN(timeout, RANK_WATCH_MS);
        if (a->dead_rank != 0)
            timeout = FTI_MIN(timeout < 0 ? RANK_DRAIN_MS : timeout, fti_ms_left(a->dead_kill_ms));
        int r = poll(&pfd, 1, timeout);
        if (r < 0 && errno != EINTR) {
            FTI_ERROR("poll: %m");
            fti_sleep_ms(100); /* never spin; the deadline still applies */
        }
        if (r > 0) {
            int sig = drain_signals(a);
            if (sig > 0)
                forward(a, sig);
        }
        if (a->child != 0)
            report_dead_ranks(a, "ending the group now (not waiting for the command to notice)");
        if (a->dead_rank != 0 && (a->child == 0 || fti_ms_left(a->dead_kill_ms) == 0)) {
            fti_rank_watch_clear(); /* the ranks killed now are not news */
            if (a->child != 0)
                kill(-a->child, SIGKILL);
            kill_tree(a);
            return;
        }
        if (a->stopping && fti_ms_left(a->deadline_ms) == 0) {
            FTI_WARN("the command's processes still there after %d ms: SIGKILL", a->o.grace_ms);
            if (a->child != 0)
                kill(-a->child, SIGKILL);
            kill_tree(a);
            return;
        }
    }
}

/* Waits ms milliseconds before a restart.  Returns 1 when a stop signal
 * arrived meanwhile (no restart then), 0 otherwise. */
static int backoff_wait(struct agent *a, int ms)
{
    struct pollfd pfd = {.fd = a->sfd, .events = POLLIN};
    int64_t deadline = fti_now_ms() + ms;
    int stop = 0;

    while (stop <= 0) {
        int left = fti_ms_left(deadline);
        if (left == 0)
            return 0;
        int r = poll(&pfd, 1, left);
        if (r < 0 && errno != EINTR) {
            FTI_ERROR("poll: %m");
            fti_sleep_ms(FTI_MIN(left, 100));
        }
        if (r > 0)
            stop = drain_signals(a);
        if (stop < 0)
            fti_sleep_ms(FTI_MIN(left, 100));
        reap_children(a); /* stragglers kill_tree gave up on */
    }
    FTI_WARN("got SIG%s during the backoff: not restarting", sig_name(stop));
    event(a, "stop", a->last_pid, a->last_status, stop, -1);
    return 1;
}

/* The wait before restart number k+1 (k restarts done): backoff * 2^k, capped. */
static int backoff_for(const struct agent_opts *o, int k)
{
    int64_t ms = o->backoff_ms;
    for (int i = 0; i < k && ms < o->max_backoff_ms; i++)
        ms *= 2;
    return (int)FTI_MIN(ms, (int64_t)o->max_backoff_ms);
}

/* Each launcher's "could not start the program" statuses, by the name of
 * the command: Open MPI 4's mpirun 132 ("unable to launch the specified
 * application"), Open MPI 5's 183 (a missing or not executable program);
 * one table, whatever else a status means to another command. */
static const struct {
    const char *name;
    int status;
} launch_failed[] = {
    {"mpirun", EXIT_MPIRUN_LAUNCH}, {"mpiexec", EXIT_MPIRUN_LAUNCH},
    {"orterun", EXIT_MPIRUN_LAUNCH}, {"mpirun", EXIT_PRTE_LAUNCH},
    {"mpiexec", EXIT_PRTE_LAUNCH},  {"prterun", EXIT_PRTE_LAUNCH},
};

/* Whether the command's last status says its program could not be
 * started at all: 126/127 (sh's and srun's "cannot execute" / "not
 * found"), or its launcher's own (launch_failed). */
static bool cannot_start(const struct agent *a)
{
    if (a->last_status == EXIT_CANNOT_EXEC || a->last_status == EXIT_NOT_FOUND)
        return true;
    const char *base = strrchr(a->o.argv[0], '/');
    base = base ? base + 1 : a->o.argv[0];
    for (size_t i = 0; i < sizeof(launch_failed) / sizeof(launch_failed[0]); i++)
        if (a->last_status == launch_failed[i].status && strcmp(base, launch_failed[i].name) == 0)
            return true;
    return false;
}

static int run(struct agent *a)
{
    for (;;) {
        int rc = start_child(a);
        if (rc != 0)
            return rc;
        supervise(a);
        if (a->last_status == 0)
            return 0;
        if (a->stopping)
            return a->last_status;
        if (cannot_start(a)) {
            FTI_ERROR("the command could not start its program (status %d%s): not restarting "
                      "(it would fail the same way); check the program's path and that it is "
                      "built",
                      a->last_status,
                      a->last_status == EXIT_MPIRUN_LAUNCH || a->last_status == EXIT_PRTE_LAUNCH
                          ? ", the launcher's 'unable to launch'"
                          : "");
            event(a, "giveup", a->last_pid, a->last_status, 0, -1);
            return a->last_status;
        }
        if (a->restarts >= a->o.max_restarts) {
            FTI_ERROR("giving up after %d restart%s: last status %d", a->restarts,
                      a->restarts == 1 ? "" : "s", a->last_status);
            event(a, "giveup", a->last_pid, a->last_status, 0, -1);
            return a->last_status;
        }
        int ms = backoff_for(&a->o, a->restarts);
        a->restarts++;
        FTI_WARN("restart %d of %d in %d ms", a->restarts, a->o.max_restarts, ms);
        event(a, "restart", a->last_pid, a->last_status, 0, ms);
        if (backoff_wait(a, ms))
            return a->last_status;
    }
}

int main(int argc, char **argv)
{
    struct agent a;
    sigset_t mask;
    char err[FTI_REASON_SIZE];
    fti_config_t cfg;

    memset(&a, 0, sizeof(a));
    a.events_fd = -1;
    int rc = fti_run_parse_args(argc, argv, &a.o);
    if (rc != 0)
        return rc < 0 ? 0 : rc;

    /* check the FTMPI_* settings once here (with the two this agent sets),
     * so that a bad value fails now instead of in every restart */
    if (setenv("FTMPI_REPLICA_ID", a.o.replica_id, 1) != 0 ||
        setenv("FTMPI_RESTART_COUNT", "0", 1) != 0) {
        fprintf(stderr, "%s: setenv: %s\n", prog, strerror(errno));
        return EXIT_AGENT;
    }
    if (fti_config_load(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return EXIT_USAGE;
    }
    fti_log_init("ftmpi-run", a.o.quiet ? FTI_LOG_ERROR : cfg.log_level);
    (void)fti_config_warn_unknown();
    fti_log_set_replica_id(a.o.replica_id);

    if (a.o.events_path != NULL) {
        a.events_fd = open(a.o.events_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (a.events_fd < 0) {
            fprintf(stderr, "%s: --events %s: %s\n", prog, a.o.events_path, strerror(errno));
            return EXIT_USAGE;
        }
    }
    a.stdin_null = isatty(STDIN_FILENO);
    a.self = getpid();
    /* orphans of the command come to the agent, not to init (see above) */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        FTI_WARN("prctl(PR_SET_CHILD_SUBREAPER): %m; orphans of the command may survive it");

    /* an inherited SIG_IGN for SIGCHLD would make the kernel reap the
     * command before waitid could see it */
    signal(SIGCHLD, SIG_DFL);
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGUSR1);
    if (sigprocmask(SIG_BLOCK, &mask, &a.orig_mask) != 0) {
        FTI_ERROR("sigprocmask: %m");
        return EXIT_AGENT;
    }
    a.sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (a.sfd < 0) {
        FTI_ERROR("signalfd: %m");
        return EXIT_AGENT;
    }

    a.watching = !a.o.no_rank_watch && fti_rank_watch_create() == 0;
    rc = run(&a);
    if (a.watching)
        fti_rank_watch_destroy();
    close(a.sfd);
    if (a.events_fd >= 0)
        close(a.events_fd);
    return rc;
}
