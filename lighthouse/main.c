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
#include <ctype.h>
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
#include "lighthouse.h"
#include "log.h"
#include "net.h"
#include "util.h"

#define EXIT_USAGE 2

static const char usage_text[] =
    "Usage: ftmpi-lighthouse --min-replicas N [options]\n"
    "\n"
    "Tracks live replica groups through heartbeats and issues quorums (libftmpi).\n"
    "\n"
    "  --min-replicas N          groups a quorum needs (required, >= 1)\n"
    "  --bind HOST:PORT          RPC address (default 0.0.0.0:29510; port 0 = any)\n"
    "  --join-timeout-ms MS      wait this long for groups that have not asked yet\n"
    "                            (default 60000)\n"
    "  --quorum-tick-ms MS       re-evaluate the quorum this often (default 100)\n"
    "  --heartbeat-timeout-ms MS a group without a heartbeat this long is unhealthy\n"
    "                            (default 5000)\n"
    "  --http-bind HOST:PORT     serve the dashboard, /status.json and /metrics there\n"
    "                            (default: off; e.g. 127.0.0.1:29511)\n"
    "  --token-file FILE         POST /replica/<id>/kill needs\n"
    "                            'Authorization: Bearer <token>' (token = the file's\n"
    "                            content, trimmed)\n"
    "  --max-frame-bytes N       largest RPC frame accepted (suffixes k, m, g;\n"
    "                            default 4m)\n"
    "  --initial-quorum-id N     the first quorum gets N + 1 (default: the wall clock\n"
    "                            in ms, so a restarted lighthouse never repeats an id)\n"
    "  --log-level LEVEL         error|warn|info|debug|trace|none (default info)\n"
    "  --help                    this text\n"
    "  --version                 the version\n";

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

static int64_t parse_int(const char *flag, const char *v, int64_t min, int64_t max)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end != '\0' || x < min || x > max)
        die_usage(flag, "'%s' is not an integer in [%" PRId64 ", %" PRId64 "]", v, min, max);
    return (int64_t)x;
}

static int64_t parse_bytes(const char *flag, const char *v, int64_t min, int64_t max)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    int64_t mult = 1;
    if (!errno && end != v && *end) {
        switch (tolower((unsigned char)*end)) {
        case 'k': mult = INT64_C(1) << 10; break;
        case 'm': mult = INT64_C(1) << 20; break;
        case 'g': mult = INT64_C(1) << 30; break;
        default: mult = 0;
        }
        end++;
        if (tolower((unsigned char)*end) == 'b' || tolower((unsigned char)*end) == 'i')
            end++;
    }
    if (errno || end == v || *end != '\0' || mult == 0 || x < 0 || x > max / mult ||
        x * mult < min)
        die_usage(flag, "'%s' is not a size in [%" PRId64 ", %" PRId64 "] bytes (suffixes k, m, g)",
                  v, min, max);
    return (int64_t)x * mult;
}

static void check_addr(const char *flag, const char *v, char *out, size_t outlen)
{
    char host[256];
    int port;
    if (fti_addr_split(v, host, sizeof(host), &port) != FT_SUCCESS ||
        fti_strlcpy(out, v, outlen) != 0)
        die_usage(flag, "'%s' is not HOST:PORT (port 0-65535)", v);
}

static void read_token(const char *flag, const char *path, char *tok, size_t len)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        die_usage(flag, "cannot read '%s': %s", path, strerror(errno));
    char buf[1024];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    int err = ferror(f), more = !feof(f) && fgetc(f) != EOF;
    fclose(f);
    if (err)
        die_usage(flag, "cannot read '%s'", path);
    buf[n] = '\0';
    if (more || strlen(buf) != n)
        die_usage(flag, "'%s' is not a short text token", path);
    char *s = buf, *e = buf + n;
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    *e = '\0';
    if (*s == '\0')
        die_usage(flag, "'%s' holds no token", path);
    if (fti_strlcpy(tok, s, len) != 0)
        die_usage(flag, "the token in '%s' is longer than %zu bytes", path, len - 1);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    FTI_INFO("signal %d: stopping", (int)sig);
    event_base_loopexit(arg, NULL);
}

int main(int argc, char **argv)
{
    fti_lighthouse_opts_t o;
    char http_bind[128] = "", token[256] = "";
    int have_min = 0, log_level = FTI_LOG_INFO;

    fti_lighthouse_opts_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        char flag[64];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (strcmp(a, "--version") == 0) {
            printf("ftmpi-lighthouse (libftmpi) %s\n", PACKAGE_VERSION);
            return 0;
        }
        if (strncmp(a, "--", 2) != 0)
            die_usage(a, "unexpected argument");
        const char *eq = strchr(a, '=');
        size_t fl = eq ? (size_t)(eq - a) : strlen(a);
        if (fl >= sizeof(flag))
            die_usage(a, "unknown flag");
        memcpy(flag, a, fl);
        flag[fl] = '\0';
        static const char *const known[] = {
            "--bind", "--min-replicas", "--join-timeout-ms", "--quorum-tick-ms",
            "--heartbeat-timeout-ms", "--http-bind", "--token-file", "--max-frame-bytes",
            "--initial-quorum-id", "--log-level"};
        int ok = 0;
        for (size_t k = 0; k < FTI_ARRAY_SIZE(known); k++)
            ok |= strcmp(flag, known[k]) == 0;
        if (!ok)
            die_usage(flag, "unknown flag");
        if (eq)
            v = eq + 1;
        else if (i + 1 < argc)
            v = argv[++i];
        else
            die_usage(flag, "needs a value");

        if (strcmp(flag, "--bind") == 0)
            check_addr(flag, v, o.bind, sizeof(o.bind));
        else if (strcmp(flag, "--min-replicas") == 0) {
            o.min_replicas = (int)parse_int(flag, v, 1, 1000000);
            have_min = 1;
        } else if (strcmp(flag, "--join-timeout-ms") == 0)
            o.join_timeout_ms = parse_int(flag, v, 0, INT64_C(86400000));
        else if (strcmp(flag, "--quorum-tick-ms") == 0)
            o.quorum_tick_ms = parse_int(flag, v, 1, 60000);
        else if (strcmp(flag, "--heartbeat-timeout-ms") == 0)
            o.heartbeat_timeout_ms = parse_int(flag, v, 1, INT64_C(86400000));
        else if (strcmp(flag, "--http-bind") == 0)
            check_addr(flag, v, http_bind, sizeof(http_bind));
        else if (strcmp(flag, "--token-file") == 0)
            read_token(flag, v, token, sizeof(token));
        else if (strcmp(flag, "--max-frame-bytes") == 0)
            o.max_frame = (size_t)parse_bytes(flag, v, 1024, INT64_C(1) << 30);
        else if (strcmp(flag, "--initial-quorum-id") == 0)
            o.initial_quorum_id = parse_int(flag, v, 0, INT64_MAX / 2);
        else if (strcmp(flag, "--log-level") == 0) {
            log_level = fti_log_level_parse(v);
            if (log_level < 0)
                die_usage(flag, "'%s' is not one of error|warn|info|debug|trace|none", v);
        }
    }
    if (!have_min)
        die_usage("--min-replicas", "is required");
    if (token[0] && !http_bind[0])
        fprintf(stderr, "ftmpi-lighthouse: --token-file: ignored without --http-bind\n");

    fti_log_init("lighthouse", log_level);
    signal(SIGPIPE, SIG_IGN);
    /* one connection per replica group (and more for heartbeats): take
     * every descriptor the hard limit allows */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            FTI_WARN("cannot raise the open-file limit: %m");
    }

    struct event_base *base = event_base_new();
    if (base == NULL) {
        fprintf(stderr, "ftmpi-lighthouse: cannot create the event loop\n");
        return 1;
    }
    fti_lighthouse_h lh = NULL;
    fti_lh_http_h http = NULL;
    int rc = fti_lighthouse_create(base, &o, &lh);
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "ftmpi-lighthouse: --bind: cannot serve on '%s': %s\n", o.bind,
                FT_Error_string(rc));
        event_base_free(base);
        return EXIT_USAGE;
    }
    if (http_bind[0] && (rc = fti_lh_http_create(base, lh, http_bind, token, &http)) != FT_SUCCESS) {
        fprintf(stderr, "ftmpi-lighthouse: --http-bind: cannot serve on '%s': %s\n", http_bind,
                FT_Error_string(rc));
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
