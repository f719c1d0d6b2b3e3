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
#include <unistd.h>

#include "ftmpi_errors.h"
#include "ftmpi_config.h"
#include "base/auth.h"
#include "lighthouse/leader.h"
#include "lighthouse/lighthouse.h"
#include "base/log.h"
#include "base/net.h"
#include "base/settings.h"
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
           "  --etcd URL[,URL...]       several lighthouses of one job: one leads, elected\n"
           "                            through an etcd lease, the others stand by and\n"
           "                            name it to the groups (FTMPI_LH_ETCD; default off)\n"
           "  --etcd-prefix PATH        the job's keys in etcd (default " FTI_LH_ETCD_PREFIX ")\n"
           "  --etcd-ttl S              the leader's lease, at most the heartbeat timeout\n"
           "                            (default %d)\n"
           "  --etcd-advertise H:P      what standbys name as the leader (default: --bind's\n"
           "                            address, the host name for 0.0.0.0)\n"
           "  --etcd-ca F, --etcd-cert F, --etcd-key F\n"
           "                            TLS to etcd: CA file, client certificate and key\n"
           "  --etcd-user U, --etcd-password-file F\n"
           "                            etcd authentication\n"
           "  --log-level LEVEL         error|warn|info|debug|trace|none (default info)\n"
           "  --help                    this text\n"
           "  --version                 the version\n",
           d->bind, d->join_timeout_ms, d->quorum_tick_ms, d->heartbeat_timeout_ms, d->max_frame,
           d->summary_interval_ms / 1000, d->forget_after_ms / 1000, FTI_LH_ETCD_TTL_S);
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
    fti_lh_leader_opts_t etcd;        /* endpoints "" = no election */
    char etcd_password_file[FTI_PATH_SIZE];
};

static const char *const known_flags[] = {
    "--bind", "--min-replicas", "--join-timeout-ms", "--quorum-tick-ms",
    "--heartbeat-timeout-ms", "--http-bind", "--token-file", "--max-frame-bytes",
    "--initial-quorum-id", "--summary-interval", "--log-level", "--job", "--forget-after",
    "--exit-when-finalized", "--etcd", "--etcd-prefix", "--etcd-ttl", "--etcd-advertise",
    "--etcd-ca", "--etcd-cert", "--etcd-key", "--etcd-user", "--etcd-password-file"};

/* A string flag into out (exits 2 when it does not fit). */
static void copy_flag(const char *flag, const char *v, char *out, size_t len)
{
    if (fti_strlcpy(out, v, len) != 0)
        die_usage(flag, "'%.64s...' is longer than %zu characters", v, len - 1);
}

/* The --etcd* flags; false when flag is none of them. */
static bool apply_etcd_flag(struct lh_args *a, const char *flag, const char *v)
{
    fti_lh_leader_opts_t *e = &a->etcd;
    if (strcmp(flag, "--etcd") == 0)
        copy_flag(flag, v, e->endpoints, sizeof(e->endpoints));
    else if (strcmp(flag, "--etcd-prefix") == 0)
        copy_flag(flag, v, e->prefix, sizeof(e->prefix));
    else if (strcmp(flag, "--etcd-ttl") == 0)
        e->ttl_s = parse_num(flag, v, false, 1, 3600);
    else if (strcmp(flag, "--etcd-advertise") == 0)
        check_addr(flag, v, e->advertise, sizeof(e->advertise));
    else if (strcmp(flag, "--etcd-ca") == 0)
        copy_flag(flag, v, e->auth.ca, sizeof(e->auth.ca));
    else if (strcmp(flag, "--etcd-cert") == 0)
        copy_flag(flag, v, e->auth.cert, sizeof(e->auth.cert));
    else if (strcmp(flag, "--etcd-key") == 0)
        copy_flag(flag, v, e->auth.key, sizeof(e->auth.key));
    else if (strcmp(flag, "--etcd-user") == 0)
        copy_flag(flag, v, e->auth.user, sizeof(e->auth.user));
    else if (strcmp(flag, "--etcd-password-file") == 0)
        copy_flag(flag, v, a->etcd_password_file, sizeof(a->etcd_password_file));
    else
        return false;
    return true;
}

/* Only the FTMPI_LH_ETCD* settings of the table are the lighthouse's. */
static const char *etcd_env(const char *name, void *arg)
{
    (void)arg;
    return strncmp(name, "FTMPI_LH_ETCD", 13) == 0 ? getenv(name) : NULL;
}

/* The --etcd* defaults from the FTMPI_LH_ETCD* settings (exits 2 on a bad
 * value, naming it). */
static void etcd_defaults(struct lh_args *a)
{
    fti_config_t cfg;
    char err[FTI_REASON_SIZE];
    if (fti_config_load_from(&cfg, etcd_env, NULL, err, sizeof(err)) != FT_SUCCESS)
        die_usage("FTMPI_LH_ETCD*", "%s", err);
    fti_lh_leader_opts_t *e = &a->etcd;
    snprintf(e->endpoints, sizeof(e->endpoints), "%s", cfg.lh_etcd);
    snprintf(e->prefix, sizeof(e->prefix), "%s", cfg.lh_etcd_prefix);
    e->ttl_s = cfg.lh_etcd_ttl_s;
    snprintf(e->advertise, sizeof(e->advertise), "%s", cfg.lh_etcd_advertise);
    snprintf(e->auth.ca, sizeof(e->auth.ca), "%s", cfg.lh_etcd_ca);
    snprintf(e->auth.cert, sizeof(e->auth.cert), "%s", cfg.lh_etcd_cert);
    snprintf(e->auth.key, sizeof(e->auth.key), "%s", cfg.lh_etcd_key);
    snprintf(e->auth.user, sizeof(e->auth.user), "%s", cfg.lh_etcd_user);
    snprintf(a->etcd_password_file, sizeof(a->etcd_password_file), "%s",
             cfg.lh_etcd_password_file);
}

/* After the flags: the lease within the heartbeat timeout, the password
 * read (exits 2 naming the flag). */
static void etcd_check(struct lh_args *a)
{
    fti_lh_leader_opts_t *e = &a->etcd;
    if (e->endpoints[0] == '\0')
        return;
    if (e->ttl_s * 1000 > a->o.heartbeat_timeout_ms)
        die_usage("--etcd-ttl", "%" PRId64 " s is longer than the heartbeat timeout (%" PRId64
                  " ms): a dead leader must be replaced before the groups count as gone",
                  e->ttl_s, a->o.heartbeat_timeout_ms);
    if ((e->auth.cert[0] != '\0') != (e->auth.key[0] != '\0'))
        die_usage("--etcd-cert", "a client certificate needs its key (--etcd-key), and a key its "
                  "certificate");
    if ((e->auth.user[0] != '\0') != (a->etcd_password_file[0] != '\0'))
        die_usage("--etcd-user", "an etcd user needs --etcd-password-file, and a password its user");
    if (a->etcd_password_file[0]) {
        FILE *f = fopen(a->etcd_password_file, "r");
        if (f == NULL || fgets(e->auth.password, sizeof(e->auth.password), f) == NULL)
            die_usage("--etcd-password-file", "cannot read '%s': %s", a->etcd_password_file,
                      f ? "empty" : strerror(errno));
        fclose(f);
        e->auth.password[strcspn(e->auth.password, "\r\n")] = '\0';
    }
}

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
    else if (apply_etcd_flag(a, flag, v))
        ;
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
    etcd_defaults(a);
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
    etcd_check(a);
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

/* --etcd: the election's handle, its gate put into *o (nothing without
 * --etcd).  Prints the error naming the flag. */
static int etcd_start(const struct lh_args *a, fti_lighthouse_opts_t *o, fti_lh_leader_h *l_p)
{
    char why[FTI_REASON_SIZE] = "";
    if (a->etcd.endpoints[0] == '\0')
        return FT_SUCCESS;
    int rc = fti_lh_leader_create(&a->etcd, l_p, why, sizeof(why));
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "ftmpi-lighthouse: --etcd: %s\n", why[0] ? why : FT_Error_string(rc));
        return rc;
    }
    o->gate = fti_lh_leader_gate(*l_p);
    return FT_SUCCESS;
}

/* Starts the election, advertising the RPC address (the host name for a
 * wildcard bind) unless --etcd-advertise names one. */
static int etcd_begin(const struct lh_args *a, fti_lh_leader_h l, fti_lighthouse_h lh)
{
    char adv[FTI_ADDRESS_SIZE], host[FTI_ADDRESS_SIZE], name[FTI_HOST_SIZE];
    int port = 0;
    snprintf(adv, sizeof(adv), "%s", fti_lighthouse_address(lh));
    if (a->etcd.advertise[0] == '\0' &&
        fti_addr_split(adv, host, sizeof(host), &port) == FT_SUCCESS &&
        (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0) &&
        gethostname(name, sizeof(name)) == 0) {
        name[sizeof(name) - 1] = '\0';
        snprintf(adv, sizeof(adv), "%s:%d", name, port);
    }
    int rc = fti_lh_leader_begin(l, adv);
    if (rc != FT_SUCCESS)
        fprintf(stderr, "ftmpi-lighthouse: --etcd: cannot start the election: %s\n",
                FT_Error_string(rc));
    return rc;
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
    fti_lh_leader_h leader = NULL;
    fti_lighthouse_opts_t o = a->o;
    int rc = etcd_start(a, &o, &leader);
    if (rc == FT_SUCCESS && (rc = fti_lighthouse_create(base, &o, &lh)) != FT_SUCCESS)
        fprintf(stderr, "ftmpi-lighthouse: --bind: cannot serve on '%s': %s\n", a->o.bind,
                FT_Error_string(rc));
    if (rc == FT_SUCCESS && leader && (rc = etcd_begin(a, leader, lh)) != FT_SUCCESS)
        fti_lighthouse_destroy(lh);
    if (rc != FT_SUCCESS) {
        fti_lh_leader_stop(leader);
        event_base_free(base);
        return EXIT_USAGE;
    }
    if (a->http_bind[0] &&
        (rc = fti_lh_http_create(base, lh, a->http_bind, a->token, &http)) != FT_SUCCESS) {
        fprintf(stderr, "ftmpi-lighthouse: --http-bind: cannot serve on '%s': %s\n",
                a->http_bind, FT_Error_string(rc));
        fti_lighthouse_destroy(lh);
        fti_lh_leader_stop(leader);
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
    fti_lh_leader_stop(leader); /* a leader gives its lease back */
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
