/* run_args.c - ftmpi-run's command line (see run_args.h and the head of
 * ftmpi-run.c): the usage text, the flags checked and parsed. */
#include "ftmpi_config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/sizes.h"
#include "base/util.h"
#include "run_args.h"

static const char *prog = FTI_RUN_PROG;

/* flag defaults (the usage text names them too) and limits */
#define DEFAULT_MAX_RESTARTS 3
#define DEFAULT_BACKOFF_MS 1000
#define DEFAULT_MAX_BACKOFF_MS 30000
#define DEFAULT_GRACE_MS 10000
#define MAX_WAIT_MS 86400000 /* a day: the longest backoff or grace period taken */
#define FLAG_NAME_SIZE 32    /* longer than any flag's name */

/* ---- command line ---------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: %s --replica-id ID [options] -- command [args...]\n"
            "\n"
            "Runs one replica group's command in its own process group and restarts it\n"
            "when it fails (mode A of libftmpi).  The command gets FTMPI_REPLICA_ID=ID and\n"
            "FTMPI_RESTART_COUNT=k (0 on the first start) and FTMPI_RESTART_LOST_MS (the\n"
            "wall-clock ms when the agent saw the last run fail: the restarted group's\n"
            "recovery starts there; 0 on the first start).  SIGUSR1 is passed to the\n"
            "command's process group (the ranks' flight recorders dump).\n"
            "\n"
            "Options:\n"
            "  --replica-id ID       replica group id (required, 1..%d characters)\n"
            "  --max-restarts N      restarts after a failure (default %d)\n"
            "  --backoff-ms MS       wait before the first restart, doubled after each\n"
            "                        (default %d)\n"
            "  --max-backoff-ms MS   cap of the wait (default %d)\n"
            "  --grace-ms MS         after forwarding SIGTERM/SIGINT/SIGHUP, how long to wait\n"
            "                        before SIGKILL to the process group (default %d)\n"
            "  --events FILE         append one JSON line per event (start, exit, restart,\n"
            "                        giveup, stop) to FILE\n"
            "  --no-rank-watch       notice a rank's death only when the command ends\n"
            "                        (default: the ranks on this node are watched and the\n"
            "                        group is ended and restarted as soon as one dies)\n"
            "  --quiet               log errors only (default: FTMPI_LOG_LEVEL, warn)\n"
            "  --help, --version\n"
            "\n"
            "A command that exits 0 ends the agent with 0.  A command that fails after the\n"
            "last restart ends it with the command's status (exit code, or 128 + signal).\n"
            "When the command ends, whatever it started that still runs is killed (at once\n"
            "after a failure, after the grace period after a stop signal).  When stdin is\n"
            "a terminal the command reads /dev/null instead.\n"
            "\n"
            "The job secret travels as a file, never on a command line (where any user of\n"
            "the node sees it in ps): set FTMPI_TOKEN_FILE to a file only you can read; the\n"
            "command inherits it, and the agent checks the file before the first start.\n",
            prog, FTI_REPLICA_ID_SIZE - 1, DEFAULT_MAX_RESTARTS, DEFAULT_BACKOFF_MS,
            DEFAULT_MAX_BACKOFF_MS, DEFAULT_GRACE_MS);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help'.\n", prog);
    return EXIT_USAGE;
}

/* The integer flags: where each goes in struct agent_opts, and its largest value. */
static const struct {
    const char *name;
    size_t off;
    int64_t max;
} int_flags[] = {
    {"--max-restarts", offsetof(struct agent_opts, max_restarts), INT_MAX},
    {"--backoff-ms", offsetof(struct agent_opts, backoff_ms), MAX_WAIT_MS},
    {"--max-backoff-ms", offsetof(struct agent_opts, max_backoff_ms), MAX_WAIT_MS},
    {"--grace-ms", offsetof(struct agent_opts, grace_ms), MAX_WAIT_MS},
};

static bool takes_value(const char *name)
{
    bool known = !strcmp(name, "--replica-id") || !strcmp(name, "--events");
    for (size_t k = 0; k < FTI_ARRAY_SIZE(int_flags); k++)
        known |= !strcmp(name, int_flags[k].name);
    return known;
}

/* Sets flag name (one takes_value knows) to val; 0, or 2 after a message. */
static int set_value(struct agent_opts *o, const char *name, const char *val)
{
    if (!strcmp(name, "--replica-id")) {
        o->replica_id = val;
        return 0;
    }
    if (!strcmp(name, "--events")) {
        o->events_path = val;
        return 0;
    }
    for (size_t k = 0; k < FTI_ARRAY_SIZE(int_flags); k++) {
        char why[FTI_REASON_SIZE];
        int64_t v;
        if (strcmp(name, int_flags[k].name) != 0)
            continue;
        if (fti_parse_int64(val, 0, int_flags[k].max, &v, why, sizeof(why)) != FT_SUCCESS)
            return usage_error("%s %s", name, why);
        *(int *)((char *)o + int_flags[k].off) = (int)v;
    }
    return 0;
}

/* Checks the options once every flag is read; 0, or 2 after a message. */
static int check_opts(struct agent_opts *o)
{
    if (o->replica_id == NULL)
        return usage_error("--replica-id is required");
    if (o->replica_id[0] == '\0' || strlen(o->replica_id) >= FTI_REPLICA_ID_SIZE)
        return usage_error("--replica-id '%s': expected 1 to %d characters", o->replica_id,
                           FTI_REPLICA_ID_SIZE - 1);
    for (const char *p = o->replica_id; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return usage_error("--replica-id: control characters are not allowed");
    if (o->backoff_ms > o->max_backoff_ms)
        o->backoff_ms = o->max_backoff_ms;
    return 0;
}

/* Fills *o from argv; returns 0, or the exit status (2 after a message, or
 * -1 when --help/--version printed and the agent should exit 0). */
int fti_run_parse_args(int argc, char **argv, struct agent_opts *o)
{
    int i, rc;

    memset(o, 0, sizeof(*o));
    o->max_restarts = DEFAULT_MAX_RESTARTS;
    o->backoff_ms = DEFAULT_BACKOFF_MS;
    o->max_backoff_ms = DEFAULT_MAX_BACKOFF_MS;
    o->grace_ms = DEFAULT_GRACE_MS;

    for (i = 1; i < argc; i++) {
        char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[0] != '-')
            break; /* the command starts here */
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return -1;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("%s (libftmpi) %s\n", prog, PACKAGE_VERSION);
            return -1;
        }
        if (strcmp(arg, "--no-rank-watch") == 0) {
            o->no_rank_watch = 1;
            continue;
        }
        if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "-q") == 0) {
            o->quiet = 1;
            continue;
        }

        /* the flags below take a value: --flag VALUE or --flag=VALUE */
        char name[FLAG_NAME_SIZE];
        const char *val;
        const char *eq = strchr(arg, '=');
        if (eq != NULL && (size_t)(eq - arg) < sizeof(name)) {
            memcpy(name, arg, eq - arg);
            name[eq - arg] = '\0';
            val = eq + 1;
        } else {
            fti_strlcpy(name, arg, sizeof(name));
            val = NULL;
        }
        if (!takes_value(name))
            return usage_error("unknown flag '%s'", arg);
        if (val == NULL) {
            if (i + 1 >= argc)
                return usage_error("%s needs a value", name);
            val = argv[++i];
        }
        if ((rc = set_value(o, name, val)) != 0)
            return rc;
    }
    if ((rc = check_opts(o)) != 0)
        return rc;
    if (i >= argc)
        return usage_error("no command given (put it after --)");
    o->argv = argv + i;
    return 0;
}
