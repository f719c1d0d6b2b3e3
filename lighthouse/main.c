/*
 * main.c - ftmpi-lighthouse: the lighthouse server as its own process
 * (mode A, DESIGN.md section 2).  No MPI.
 *
 *   ftmpi-lighthouse --min-replicas N [--bind HOST:PORT] [--http-bind HOST:PORT] ...
 *
 * After binding it prints one line on stdout,
 *   ftmpi-lighthouse listening on HOST:PORT (http HOST:PORT|http off)
 * so scripts can bind port 0 and read the port.  SIGTERM and SIGINT stop it
 * cleanly (exit 0).  Bad flags exit 2 with a message naming the flag.
 */
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ftmpi_errors.h"
#include "ftmpi_config.h"
#include "base/auth.h"
#include "lighthouse/lighthouse.h"
#include "base/log.h"
#include "base/net.h"
#include "base/sizes.h"
#include "base/util.h"

#define EXIT_USAGE 2

/* limits of the flags (the defaults are fti_lighthouse_opts_default's) */
#define MAX_MIN_REPLICAS 1000000
#define MAX_TIMEOUT_MS INT64_C(86400000) /* a day */
#define MAX_TICK_MS 60000
#define MIN_FRAME_BYTES 1024
#define MAX_FRAME_BYTES (INT64_C(1) << 30)
#define HTTP_BIND_EXAMPLE "127.0.0.1:29511"
#define FLAG_NAME_SIZE 64   /* longer than any flag's name */

/* The usage text, with the defaults of *d. */
static void usage(const fti_lighthouse_opts_t *d)
{
    printf("Usage: ftmpi-lighthouse --min-replicas N [options]\n"
           "       ftmpi-lighthouse --make-token FILE\n"
           "\n"
           "Tracks live replica groups through heartbeats and issues quorums (libftmpi).\n"
           "\n"
           "  --min-replicas N          groups a quorum needs (required, >= 1)\n"
           "  --bind HOST:PORT          RPC address (port 0 = any; default %s, loopback\n"
           "                            only, without --token-file; " FTI_LH_BIND_ANY " with\n"
           "                            it: an unauthenticated job is not served to other\n"
           "                            hosts unless --bind names an address)\n"
           "  --join-timeout-ms MS      wait this long for groups that have not asked yet\n"
           "                            (default %" PRId64 ")\n"
           "  --quorum-tick-ms MS       re-evaluate the quorum this often (default %" PRId64 ")\n"
           "  --heartbeat-timeout-ms MS a group without a heartbeat this long is unhealthy\n"
           "                            (default %" PRId64 ")\n"
           "  --http-bind HOST:PORT     serve the dashboard, /status.json and /metrics there\n"
           "                            (default: off; e.g. " HTTP_BIND_EXAMPLE ")\n"
           "  --job NAME                the job label of /metrics' recovery and rank series\n"
           "                            (default ftmpi)\n"
           "  --token-file FILE         the job secret (the file's content, trimmed; the file\n"
           "                            must not be readable by others): every RPC\n"
           "                            connection must prove it (groups set\n"
           "                            FTMPI_TOKEN_FILE), and HTTP needs\n"
           "                            'Authorization: Bearer <secret>' to kill a group or\n"
           "                            to see the groups' addresses\n"
           "                            (at least 128 bits of secret)\n"
           "  --make-token FILE         write a new job secret (256 random bits, hex) to\n"
           "                            FILE, created with mode 0600 (never overwritten)\n"
           "                            and exit\n"
           "  --max-frame-bytes N       largest RPC frame accepted (suffixes k, m, g;\n"
           "                            default %zu)\n"
           "  --initial-quorum-id N     the first quorum gets N + 1 (default: the wall clock\n"
           "                            in ms, so a restarted lighthouse never repeats an id)\n"
           "  --exit-when-finalized N   exit 0 once N groups finalized and no group is\n"
           "                            left (N: the job's groups; default 0 = never)\n"
           "  --summary-interval S      log a summary line (steps/s, quorum, failures)\n"
           "                            every S seconds; 0 = never (default %" PRId64 ")\n"
           "  --forget-after S          forget a group S seconds after it died, went\n"
           "                            silent or finalized: its /metrics series,\n"
           "                            recoveries and SDC fingerprints (default %" PRId64 ",\n"
           "                            the history window)\n"
           "  --log-level LEVEL         error|warn|info|debug|trace|none (default info)\n"
           "  --help                    this text\n"
           "  --version                 the version\n",
           d->bind, d->join_timeout_ms, d->quorum_tick_ms, d->heartbeat_timeout_ms, d->max_frame,
           d->summary_interval_ms / 1000, d->forget_after_ms / 1000);
}

static void die_usage(const char *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void die_usage(const char *flag, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "ftmpi-lighthouse: %s: ", flag);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'ftmpi-lighthouse --help'.\n");
    exit(EXIT_USAGE);
}

/* fti_parse_int64 (size false) or fti_parse_size; exits 2 naming flag. */
static int64_t parse_num(const char *flag, const char *v, bool size, int64_t min, int64_t max)
{
    char why[FTI_REASON_SIZE];
    int64_t x;
    if ((size ? fti_parse_size : fti_parse_int64)(v, min, max, &x, why, sizeof(why)) !=
        FT_SUCCESS)
        die_usage(flag, "%s", why);
    return x;
}

static void check_addr(const char *flag, const char *v, char *out, size_t outlen)
{
    char host[FTI_ADDRESS_SIZE];
    int port;
    if (fti_addr_split(v, host, sizeof(host), &port) != FT_SUCCESS ||
        fti_strlcpy(out, v, outlen) != 0)
        die_usage(flag, "'%s' is not HOST:PORT (port 0-65535)", v);
}

/* Reads the job secret (auth.h's checks: not readable by others, not
 * empty) into tok, the HTTP bearer token, and derives into o the key that
 * every RPC connection must prove.  Exits 2 naming the file. */
static void read_token(const char *flag, const char *path, char *tok, size_t len,
                       fti_lighthouse_opts_t *o)
{
    char err[FTI_PATH_SIZE + FTI_REASON_SIZE];
    if (fti_auth_read_token(path, tok, len, err, sizeof(err)) != FT_SUCCESS)
        die_usage(flag, "%s", err);
    if (fti_auth_key_from_token(tok, &o->key) != FT_SUCCESS)
        die_usage(flag, "cannot derive a key from '%s'", path);
    o->has_key = true;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    FTI_INFO("signal %d: stopping", (int)sig);
    event_base_loopexit(arg, NULL);
}

/* What the command line asks for. */
struct lh_args {
    fti_lighthouse_opts_t o;
    char http_bind[FTI_ADDRESS_SIZE]; /* "" = no dashboard */
    char token[FTI_TOKEN_SIZE];       /* "" = kill needs no token */
    int log_level;
    int have_min;                     /* --min-replicas was given */
    int have_bind;                    /* --bind was given */
};

static const char *const known_flags[] = {
    "--bind", "--min-replicas", "--join-timeout-ms", "--quorum-tick-ms",
    "--heartbeat-timeout-ms", "--http-bind", "--token-file", "--max-frame-bytes",
    "--initial-quorum-id", "--summary-interval", "--log-level", "--job", "--forget-after",
    "--exit-when-finalized"};

/* Applies one known flag with its value (exits 2 on a bad value). */
static void apply_flag(struct lh_args *a, const char *flag, const char *v)
{
    fti_lighthouse_opts_t *o = &a->o;
    if (strcmp(flag, "--bind") == 0) {
        check_addr(flag, v, o->bind, sizeof(o->bind));
        a->have_bind = 1;
    } else if (strcmp(flag, "--min-replicas") == 0) {
        o->min_replicas = (int)parse_num(flag, v, false, 1, MAX_MIN_REPLICAS);
        a->have_min = 1;
    } else if (strcmp(flag, "--join-timeout-ms") == 0)
        o->join_timeout_ms = parse_num(flag, v, false, 0, MAX_TIMEOUT_MS);
    else if (strcmp(flag, "--quorum-tick-ms") == 0)
        o->quorum_tick_ms = parse_num(flag, v, false, 1, MAX_TICK_MS);
    else if (strcmp(flag, "--heartbeat-timeout-ms") == 0)
        o->heartbeat_timeout_ms = parse_num(flag, v, false, 1, MAX_TIMEOUT_MS);
    else if (strcmp(flag, "--http-bind") == 0)
        check_addr(flag, v, a->http_bind, sizeof(a->http_bind));
    else if (strcmp(flag, "--token-file") == 0)
        read_token(flag, v, a->token, sizeof(a->token), o);
    else if (strcmp(flag, "--max-frame-bytes") == 0)
        o->max_frame = (size_t)parse_num(flag, v, true, MIN_FRAME_BYTES, MAX_FRAME_BYTES);
    else if (strcmp(flag, "--initial-quorum-id") == 0)
        o->initial_quorum_id = parse_num(flag, v, false, 0, INT64_MAX / 2);
    else if (strcmp(flag, "--exit-when-finalized") == 0)
        o->exit_when_finalized = (size_t)parse_num(flag, v, false, 0, FTI_LH_MAX_FINALIZED);
    else if (strcmp(flag, "--summary-interval") == 0)
        o->summary_interval_ms = parse_num(flag, v, false, 0, MAX_TIMEOUT_MS / 1000) * 1000;
    else if (strcmp(flag, "--forget-after") == 0)
        o->forget_after_ms = parse_num(flag, v, false, 1, MAX_TIMEOUT_MS / 1000) * 1000;
    else if (strcmp(flag, "--job") == 0) {
        if (v[0] == '\0' || fti_strlcpy(o->job, v, sizeof(o->job)) != 0 ||
            strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:") !=
                strlen(v))
            die_usage(flag, "'%s': 1 to %d letters, digits or _-.:", v, FTI_LH_JOB_SIZE - 1);
    } else if (strcmp(flag, "--log-level") == 0) {
        a->log_level = fti_log_level_parse(v);
        if (a->log_level < 0)
            die_usage(flag, "'%s' is not one of error|warn|info|debug|trace|none", v);
    }
}

/* Fills *a from argv (exits 2 on a bad flag).  Returns 1 when --help or
 * --version printed and the program should exit 0, else 0. */
static int parse_flags(int argc, char **argv, struct lh_args *a)
{
    memset(a, 0, sizeof(*a));
    a->log_level = FTI_LOG_INFO;
    fti_lighthouse_opts_default(&a->o);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v = NULL;
        char flag[FLAG_NAME_SIZE];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(&a->o);
            return 1;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("ftmpi-lighthouse (libftmpi) %s\n", PACKAGE_VERSION);
            return 1;
        }
        if (strncmp(arg, "--", 2) != 0)
            die_usage(arg, "unexpected argument");
        const char *eq = strchr(arg, '=');
        size_t fl = eq ? (size_t)(eq - arg) : strlen(arg);
        if (fl >= sizeof(flag))
            die_usage(arg, "unknown flag");
        memcpy(flag, arg, fl);
        flag[fl] = '\0';
        int ok = 0;
        for (size_t k = 0; k < FTI_ARRAY_SIZE(known_flags); k++)
            ok |= strcmp(flag, known_flags[k]) == 0;
        if (!ok)
            die_usage(flag, "unknown flag");
        if (eq)
            v = eq + 1;
        else if (i + 1 < argc)
            v = argv[++i];
        else
            die_usage(flag, "needs a value");
        apply_flag(a, flag, v);
    }
    if (!a->have_min)
        die_usage("--min-replicas", "is required");
    if (!a->have_bind && a->token[0])
        snprintf(a->o.bind, sizeof(a->o.bind), "%s", FTI_LH_BIND_ANY);
    return 0;
}

/* One connection per replica group (and more for heartbeats): take every
 * descriptor the hard limit allows. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            FTI_WARN("cannot raise the open-file limit: %m");
    }
}

/* Serves until SIGTERM or SIGINT; returns the exit status. */
static int serve(const struct lh_args *a)
{
    struct event_base *base = event_base_new();
    if (base == NULL) {
        fprintf(stderr, "ftmpi-lighthouse: cannot create the event loop\n");
        return 1;
    }
    fti_lighthouse_h lh = NULL;
    fti_lh_http_h http = NULL;
    int rc = fti_lighthouse_create(base, &a->o, &lh);
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "ftmpi-lighthouse: --bind: cannot serve on '%s': %s\n", a->o.bind,
                FT_Error_string(rc));
        event_base_free(base);
        return EXIT_USAGE;
    }
    if (a->http_bind[0] &&
        (rc = fti_lh_http_create(base, lh, a->http_bind, a->token, &http)) != FT_SUCCESS) {
        fprintf(stderr, "ftmpi-lighthouse: --http-bind: cannot serve on '%s': %s\n",
                a->http_bind, FT_Error_string(rc));
        fti_lighthouse_destroy(lh);
        event_base_free(base);
        return EXIT_USAGE;
    }
    struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, base);
    struct event *sigint = evsignal_new(base, SIGINT, on_signal, base);
    if (sigterm == NULL || sigint == NULL || evsignal_add(sigterm, NULL) != 0 ||
        evsignal_add(sigint, NULL) != 0) {
        fprintf(stderr, "ftmpi-lighthouse: cannot install signal handlers\n");
        rc = FT_ERR_SYSTEM;
    } else {
        printf("ftmpi-lighthouse listening on %s (%s%s)\n", fti_lighthouse_address(lh),
               http ? "http " : "http off", http ? fti_lh_http_address(http) : "");
        fflush(stdout);
        if (event_base_dispatch(base) < 0) {
            FTI_ERROR("event loop failed");
            rc = FT_ERR_SYSTEM;
        }
    }
    if (sigterm)
        event_free(sigterm);
    if (sigint)
        event_free(sigint);
    fti_lh_http_destroy(http);
    fti_lighthouse_destroy(lh);
    event_base_free(base);
    FTI_INFO("stopped");
    return rc == FT_SUCCESS ? 0 : 1;
}

int main(int argc, char **argv)
{
    struct lh_args a;
    if (argc >= 2 && strcmp(argv[1], "--make-token") == 0) {
        char err[FTI_PATH_SIZE + FTI_REASON_SIZE];
        if (argc != 3)
            die_usage(argv[1], "needs one value, the file to write");
        if (fti_auth_make_token(argv[2], err, sizeof(err)) != FT_SUCCESS) {
            fprintf(stderr, "ftmpi-lighthouse: --make-token: %s\n", err);
            return 1;
        }
        printf("wrote a new job secret (256 bits) to %s (mode 0600): give it to the lighthouse "
               "(--token-file) and the groups (FTMPI_TOKEN_FILE)\n", argv[2]);
        return 0;
    }
    if (parse_flags(argc, argv, &a) != 0)
        return 0;
    fti_log_init("lighthouse", a.log_level);
    if (!a.token[0]) {
        fti_auth_warn_unauthenticated(); /* the first log line */
        if (!a.have_bind)
            FTI_WARN("no --token-file: listening on loopback only (%s); give --token-file "
                     "(and --bind HOST:PORT) to serve groups on other hosts", a.o.bind);
    }
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();
    return serve(&a);
}
