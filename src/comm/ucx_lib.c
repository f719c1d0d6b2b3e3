/*
 * comm/ucx_lib.c - loading UCX and the process-wide UCP context (see
 * ucx_lib.h, ucx.h).
 */
#include "comm/ucx_lib.h"
#include "comm/ucx.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_config.h" /* FTMPI_UCX_LIBUCP */
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

struct fti_ucx_fns fti_ucx;

static struct {
    pthread_once_t once;
    int rc;
    char why[256];
    ucp_context_h ctx;
    int timeout_ms; /* the first fti_ucx_context's */
} lib = {PTHREAD_ONCE_INIT, FT_ERR_UNSUPPORTED, "", NULL, 0};

/* The symbols of fti_ucx, in the order of its fields. */
static const char *const names[] = {
    "ucp_config_read", "ucp_config_release", "ucp_config_modify", "ucp_init_version", "ucp_get_version_string",
    "ucp_context_print_info", "ucp_worker_create", "ucp_worker_destroy", "ucp_worker_get_efd",
    "ucp_worker_arm", "ucp_worker_progress", "ucp_worker_query", "ucp_worker_release_address",
    "ucp_ep_create", "ucp_ep_close_nbx", "ucp_tag_send_nbx", "ucp_tag_recv_nbx",
    "ucp_request_free", "ucp_request_cancel", "ucp_request_check_status", "ucs_status_string",
    "ucp_mem_map", "ucp_mem_unmap", "ucp_rkey_pack", "ucp_rkey_buffer_release",
    "ucp_ep_rkey_unpack", "ucp_rkey_destroy", "ucp_get_nbx", "ucp_ep_print_info",
};

/* Fills fti_ucx from libucp (its dependencies give ucs_status_string);
 * the library stays loaded. */
static int lib_load(void)
{
    _Static_assert(sizeof(fti_ucx) == sizeof(names) / sizeof(names[0]) * sizeof(void (*)(void)),
                   "one name per function of fti_ucx");
    void *h = dlopen(FTMPI_UCX_LIBUCP, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(lib.why, sizeof(lib.why), "cannot load %s: %s", FTMPI_UCX_LIBUCP, dlerror());
        return FT_ERR_UNSUPPORTED;
    }
    char *slot = (char *)&fti_ucx;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        void *f = dlsym(h, names[i]);
        if (f == NULL) {
            snprintf(lib.why, sizeof(lib.why), "%s has no %s", FTMPI_UCX_LIBUCP, names[i]);
            return FT_ERR_UNSUPPORTED;
        }
        memcpy(slot + i * sizeof(f), &f, sizeof(f));
    }
    return FT_SUCCESS;
}

/* UCX's variable name (UCX_name) to value, unless the user set it. */
static void config_default(ucp_config_t *cfg, const char *name, const char *value)
{
    char env[64];
    snprintf(env, sizeof(env), "UCX_%s", name);
    if (getenv(env) != NULL) /* UCX's own setting, read by UCX: not an FTMPI_* one */
        return;
    ucs_status_t st = fti_ucx.config_modify(cfg, name, value);
    if (st != UCS_OK)
        FTI_DEBUG("ucx: %s=%s not set: %s", env, value, fti_ucx.status_string(st));
}

static void lib_init(void)
{
    lib.rc = lib_load();
    if (lib.rc != FT_SUCCESS) {
        FTI_ERROR("ucx: %s", lib.why);
        return;
    }
    /* Cross-memory attach (one copy between two processes of a node) as the
     * rendezvous lane of endpoints that report a dead peer: UCX 1.13 gives
     * such an endpoint an RMA lane only on a memory domain that can
     * invalidate a registration, and cma's cannot by default (the lanes:
     * tcp/lo alone; with it tcp/lo and cma/memory, logged once by ucx.c).
     * A memory domain's setting is read from the environment only
     * (ucp_config_modify does not reach it in 1.13), so it is set there,
     * unless the user set it, once, before UCX reads it.  DESIGN section 5;
     * doc/PERFORMANCE.md section 14. */
    if (setenv("UCX_CMA_MEMORY_INVALIDATE", "y", 0) != 0)
        FTI_DEBUG("ucx: UCX_CMA_MEMORY_INVALIDATE not set: no memory");
    ucp_config_t *cfg = NULL;
    ucs_status_t st = fti_ucx.config_read(NULL, NULL, &cfg);
    if (st == UCS_OK && lib.timeout_ms > 0) {
        char ka[32];
        snprintf(ka, sizeof(ka), "%dms", FTI_MAX(lib.timeout_ms / 4, 50));
        config_default(cfg, "KEEPALIVE_INTERVAL", ka);
    }
    if (st == UCS_OK) {
        ucp_params_t p = {
            .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
            .features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP,
            /* workers on several threads: a slice's, the heal's serving one and
             * a healer's per source (comm/ucx_heal.c), made and mapping
             * memory concurrently */
            .mt_workers_shared = 1,
        };
        st = fti_ucx.init_version(UCP_API_MAJOR, UCP_API_MINOR, &p, cfg, &lib.ctx);
        fti_ucx.config_release(cfg);
    }
    if (st != UCS_OK) {
        snprintf(lib.why, sizeof(lib.why), "no UCP context: %s", fti_ucx.status_string(st));
        FTI_ERROR("ucx: %s (UCX_TLS, UCX_NET_DEVICES?)", lib.why);
        lib.rc = FT_ERR_SYSTEM;
        return;
    }
    lib.rc = FT_SUCCESS;
}

int fti_ucx_context(int timeout_ms, ucp_context_h *ctx_p)
{
    static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&first);
    if (lib.timeout_ms == 0)
        lib.timeout_ms = timeout_ms;
    pthread_mutex_unlock(&first);
    pthread_once(&lib.once, lib_init);
    if (lib.rc == FT_SUCCESS)
        *ctx_p = lib.ctx;
    return lib.rc;
}

/* What a UCX *_print_info wrote about obj, as a list: each line that item
 * makes a piece of (true) joined with ", " into buf (cut to len). */
static void print_list(void (*print)(void *obj, FILE *f), void *obj,
                       bool (*item)(char *line, char *piece, size_t plen), char *buf, size_t len)
{
    char *text = NULL, line[512], piece[512];
    size_t tlen = 0, n = 0;
    if (len > 0)
        buf[0] = '\0';
    FILE *f = open_memstream(&text, &tlen);
    if (f == NULL)
        return;
    print(obj, f);
    fclose(f);
    FILE *in = fmemopen(text, tlen, "r");
    while (in != NULL && fgets(line, sizeof(line), in) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (item(line, piece, sizeof(piece)) && n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", piece);
    }
    if (in != NULL)
        fclose(in);
    free(text);
}

static void print_context(void *obj, FILE *f)
{
    fti_ucx.context_print_info(obj, f);
}

static void print_ep(void *obj, FILE *f)
{
    fti_ucx.ep_print_info(obj, f);
}

/* "tcp/lo" of a context's resource line ("# resource 1 : md 1 dev 1 flags -- tcp/lo") */
static bool transport_item(char *line, char *piece, size_t plen)
{
    char *dash = strstr(line, "-- ");
    if (strstr(line, "resource") == NULL || dash == NULL)
        return false;
    (void)fti_strlcpy(piece, dash + 3, plen); /* cut to fit */
    return true;
}

/* "cma/memory.0 (rma_bw#0)" of an endpoint's lane line
 * ("#  lane[1]:  5:cma/memory.0 md[4]  -> md[4]/cma/sysdev[255] rma_bw#0") */
static bool lane_item(char *line, char *piece, size_t plen)
{
    char tl[128], *lane = strstr(line, "lane["), *to = strstr(line, "-> ");
    if (lane == NULL || to == NULL || sscanf(lane, "lane[%*d]: %*d:%127s", tl) != 1)
        return false;
    char *roles = strchr(to + 3, ' '); /* after "md[4]/cma/sysdev[255]" */
    roles = roles ? roles + strspn(roles, " ") : to + 3;
    snprintf(piece, plen, "%s (%s)", tl, roles);
    return true;
}

void fti_ucx_ep_lanes(ucp_ep_h ep, char *buf, size_t len)
{
    print_list(print_ep, ep, lane_item, buf, len);
}

int fti_ucx_describe(char *version, size_t vlen, char *tls, size_t tlen)
{
    ucp_context_h ctx = NULL;
    int rc = fti_ucx_context(0, &ctx);
    if (rc != FT_SUCCESS) {
        (void)fti_strlcpy(version, lib.why, vlen); /* cut to fit */
        if (tlen > 0)
            tls[0] = '\0';
        return rc;
    }
    (void)fti_strlcpy(version, fti_ucx.get_version_string(), vlen); /* cut to fit */
    print_list(print_context, ctx, transport_item, tls, tlen);
    return FT_SUCCESS;
}

int fti_ucx_available(int timeout_ms, char *why, size_t wlen)
{
    ucp_context_h ctx = NULL;
    int rc = fti_ucx_context(timeout_ms, &ctx);
    if (rc != FT_SUCCESS)
        (void)fti_strlcpy(why, lib.why, wlen); /* cut to fit */
    return rc;
}
