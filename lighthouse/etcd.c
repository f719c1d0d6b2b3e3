/* lighthouse/etcd.c - etcd's v3 JSON gateway over libcurl (see etcd.h). */
#include "lighthouse/etcd.h"

#include "ftmpi_config.h" /* FTMPI_HAVE_ETCD */

#ifdef FTMPI_HAVE_ETCD

#include <curl/curl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

#define ETCD_MAX_ENDPOINTS 16
#define ETCD_MAX_REPLY (4u << 20)  /* the largest answer read */
#define ETCD_URL_SIZE 256
#define ETCD_TOKEN_SIZE 512
/* gRPC status codes the gateway returns in "code" */
#define GRPC_NOT_FOUND 5
#define GRPC_UNAUTHENTICATED 16
#define GRPC_INVALID_ARGUMENT 3
#define GRPC_PERMISSION_DENIED 7

struct fti_etcd {
    pthread_mutex_t mu;
    CURL *curl;
    char url[ETCD_MAX_ENDPOINTS][ETCD_URL_SIZE];
    size_t n_url, cur;       /* cur: the endpoint asked first */
    fti_etcd_auth_t auth;
    int timeout_ms;
    char token[ETCD_TOKEN_SIZE]; /* etcd's auth token, "" = none yet */
    char err[FTI_REASON_SIZE];
    char *buf;               /* the answer being read */
    size_t len, cap;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void set_err(struct fti_etcd *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(struct fti_etcd *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err, sizeof(e->err), fmt, ap);
    va_end(ap);
}

int fti_etcd_create(const char *endpoints, const fti_etcd_auth_t *auth, int timeout_ms,
                    fti_etcd_h *e_p, char *why, size_t why_len)
{
    char dummy[8];
    if (why == NULL)
        why = dummy, why_len = sizeof(dummy);
    if (endpoints == NULL || e_p == NULL || timeout_ms < 1) {
        snprintf(why, why_len, "no endpoints");
        return FT_ERR_ARG;
    }
    struct fti_etcd *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return FT_ERR_NO_MEMORY;
    const char *p = endpoints;
    while (*p) {
        size_t n = strcspn(p, ",");
        bool ok = n > 0 && n < ETCD_URL_SIZE && e->n_url < ETCD_MAX_ENDPOINTS &&
                  ((n > 7 && strncmp(p, "http://", 7) == 0) ||
                   (n > 8 && strncmp(p, "https://", 8) == 0));
        if (!ok) {
            snprintf(why, why_len, "'%.*s' is not an etcd endpoint (http://HOST:PORT or "
                     "https://HOST:PORT; at most %d)", (int)FTI_MIN(n, 200), p, ETCD_MAX_ENDPOINTS);
            free(e);
            return FT_ERR_ARG;
        }
        memcpy(e->url[e->n_url], p, n);
        e->url[e->n_url][n] = '\0';
        if (n > 1 && e->url[e->n_url][n - 1] == '/')
            e->url[e->n_url][n - 1] = '\0';
        e->n_url++;
        p += n;
        if (*p == ',')
            p++;
    }
    if (e->n_url == 0) {
        snprintf(why, why_len, "no endpoints");
        free(e);
        return FT_ERR_ARG;
    }
    if (auth)
        e->auth = *auth;
    e->timeout_ms = timeout_ms;
    pthread_once(&curl_once, curl_init_once);
    e->curl = curl_easy_init();
    if (e->curl == NULL) {
        free(e);
        return FT_ERR_NO_MEMORY;
    }
    pthread_mutex_init(&e->mu, NULL);
    *e_p = e;
    return FT_SUCCESS;
}

void fti_etcd_destroy(fti_etcd_h e)
{
    if (e == NULL)
        return;
    curl_easy_cleanup(e->curl);
    pthread_mutex_destroy(&e->mu);
    free(e->buf);
    free(e);
}

void fti_etcd_last_error(fti_etcd_h e, char *buf, size_t len)
{
    pthread_mutex_lock(&e->mu);
    snprintf(buf, len, "%s", e->err);
    pthread_mutex_unlock(&e->mu);
}

void fti_etcd_kv_clear(fti_etcd_kv_t *kv)
{
    if (kv) {
        free(kv->value);
        memset(kv, 0, sizeof(*kv));
    }
}

/* ---- base64 (OpenSSL) ---------------------------------------------------- */

static json_object *b64_json(const void *data, size_t len)
{
    size_t out_len = 4 * ((len + 2) / 3) + 1;
    char *out = malloc(out_len);
    if (out == NULL)
        return NULL;
    EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    json_object *j = json_object_new_string(out);
    free(out);
    return j;
}

/* Decodes s (malloc'ed, NUL-terminated); NULL on bad input or memory. */
static char *b64_decode(const char *s, size_t *len_p)
{
    size_t n = strlen(s);
    if (n % 4 != 0)
        return NULL;
    char *out = malloc(n / 4 * 3 + 1);
    if (out == NULL)
        return NULL;
    int m = n ? EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n) : 0;
    if (m < 0) {
        free(out);
        return NULL;
    }
    while (n > 0 && s[n - 1] == '=' && m > 0)
        n--, m--;
    out[m] = '\0';
    *len_p = (size_t)m;
    return out;
}

static int64_t jint(json_object *o, const char *field)
{
    json_object *v;
    return o && json_object_object_get_ex(o, field, &v) ? json_object_get_int64(v) : 0;
}

static json_object *jget(json_object *o, const char *field)
{
    json_object *v;
    return o && json_object_object_get_ex(o, field, &v) ? v : NULL;
}

static void jset_int(json_object *o, const char *field, int64_t x)
{
    char s[32];
    snprintf(s, sizeof(s), "%" PRId64, x);
    json_object_object_add(o, field, json_object_new_string(s));
}

/* ---- HTTP ------------------------------------------------------------------ */

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct fti_etcd *e = arg;
    size_t n = size * nmemb;
    if (e->len + n + 1 > ETCD_MAX_REPLY)
        return 0; /* makes curl fail the transfer */
    if (e->len + n + 1 > e->cap) {
        size_t cap = FTI_MAX(e->cap * 2, e->len + n + 1);
        char *b = realloc(e->buf, cap);
        if (b == NULL)
            return 0;
        e->buf = b;
        e->cap = cap;
    }
    memcpy(e->buf + e->len, ptr, n);
    e->len += n;
    e->buf[e->len] = '\0';
    return n;
}

/* One POST of body to url + path: FT_SUCCESS with the HTTP status, or
 * FT_ERR_CONNECT (e->err says why). */
static int http_post(struct fti_etcd *e, const char *url, const char *path, const char *body,
                     long *status_p)
{
    char full[ETCD_URL_SIZE + 64], authz[ETCD_TOKEN_SIZE + 32];
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (e->token[0] && strcmp(path, "/v3/auth/authenticate") != 0) {
        snprintf(authz, sizeof(authz), "Authorization: %s", e->token);
        h = curl_slist_append(h, authz);
    }
    snprintf(full, sizeof(full), "%s%s", url, path);
    CURL *c = e->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, full);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)e->timeout_ms);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, e);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (e->auth.ca[0])
        curl_easy_setopt(c, CURLOPT_CAINFO, e->auth.ca);
    if (e->auth.cert[0]) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, e->auth.cert);
        curl_easy_setopt(c, CURLOPT_SSLKEY, e->auth.key);
    }
    e->len = 0;
    if (e->buf)
        e->buf[0] = '\0';
    CURLcode cc = curl_easy_perform(c);
    curl_slist_free_all(h);
    if (cc != CURLE_OK) {
        set_err(e, "etcd %s: %s", url, curl_easy_strerror(cc));
        return FT_ERR_CONNECT;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status_p);
    return FT_SUCCESS;
}

static int post_once(struct fti_etcd *e, const char *path, const char *body, json_object **resp_p,
                     bool *reauth_p);

/* Asks etcd for an auth token with the user and password. */
static int authenticate(struct fti_etcd *e)
{
    json_object *req = json_object_new_object(), *resp = NULL;
    json_object_object_add(req, "name", json_object_new_string(e->auth.user));
    json_object_object_add(req, "password", json_object_new_string(e->auth.password));
    bool reauth = false;
    e->token[0] = '\0';
    int rc = post_once(e, "/v3/auth/authenticate", json_object_to_json_string(req), &resp, &reauth);
    json_object_put(req);
    if (rc != FT_SUCCESS)
        return rc == FT_ERR_NOT_FOUND ? FT_ERR_AUTH : rc;
    json_object *t = jget(resp, "token");
    if (t == NULL || fti_strlcpy(e->token, json_object_get_string(t), sizeof(e->token)) != 0) {
        set_err(e, "etcd: no auth token for user '%s'", e->auth.user);
        e->token[0] = '\0';
        rc = FT_ERR_AUTH;
    }
    json_object_put(resp);
    return rc;
}

/* One call, trying each endpoint from e->cur; *resp_p the decoded
 * answer.  *reauth_p: etcd said the token is invalid. */
static int post_once(struct fti_etcd *e, const char *path, const char *body, json_object **resp_p,
                     bool *reauth_p)
{
    int rc = FT_ERR_CONNECT;
    long status = 0;
    for (size_t k = 0; k < e->n_url; k++) {
        size_t i = (e->cur + k) % e->n_url;
        rc = http_post(e, e->url[i], path, body, &status);
        if (rc != FT_SUCCESS)
            continue;
        json_object *j = e->len ? json_tokener_parse(e->buf) : NULL;
        if (j == NULL) {
            set_err(e, "etcd %s%s: HTTP %ld, an answer that is not JSON", e->url[i], path, status);
            rc = status == 200 ? FT_ERR_BAD_MESSAGE : FT_ERR_CONNECT;
            continue;
        }
        if (status == 200) {
            e->cur = i;
            e->err[0] = '\0';
            *resp_p = j;
            return FT_SUCCESS;
        }
        int64_t code = jint(j, "code");
        json_object *m = jget(j, "message");
        if (m == NULL)
            m = jget(j, "error");
        set_err(e, "etcd %s%s: HTTP %ld: %s", e->url[i], path, status,
                m ? json_object_get_string(m) : "no message");
        json_object_put(j);
        e->cur = i;
        if (code == GRPC_NOT_FOUND)
            return FT_ERR_NOT_FOUND;
        if (code == GRPC_UNAUTHENTICATED || strstr(e->err, "invalid auth token")) {
            *reauth_p = true;
            return FT_ERR_AUTH;
        }
        if (code == GRPC_PERMISSION_DENIED)
            return FT_ERR_AUTH;
        if (code == GRPC_INVALID_ARGUMENT) /* etcd's auth errors come as this too */
            return strstr(e->err, "authentication failed") || strstr(e->err, "user name is empty")
                       ? FT_ERR_AUTH
                       : FT_ERR_ARG;
        rc = FT_ERR_CONNECT; /* unavailable (no etcd leader): the next endpoint */
    }
    return rc;
}

/* A call under e->mu, with the token (asked for first, and again once when
 * etcd says it is invalid).  Takes req. */
static int call(struct fti_etcd *e, const char *path, json_object *req, json_object **resp_p)
{
    if (req == NULL)
        return FT_ERR_NO_MEMORY;
    const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
    int rc = FT_SUCCESS;
    for (int attempt = 0; attempt < 2; attempt++) {
        bool reauth = false;
        if (e->auth.user[0] && e->token[0] == '\0' && (rc = authenticate(e)) != FT_SUCCESS)
            break;
        rc = post_once(e, path, body, resp_p, &reauth);
        if (!reauth || !e->auth.user[0])
            break;
        e->token[0] = '\0';
    }
    json_object_put(req);
    return rc;
}

/* ---- the calls ---------------------------------------------------------- */

/* kv of one kvs entry. */
static int kv_from_json(struct fti_etcd *e, json_object *o, fti_etcd_kv_t *kv)
{
    json_object *v = jget(o, "value");
    size_t len = 0;
    char *val = b64_decode(v ? json_object_get_string(v) : "", &len);
    if (val == NULL) {
        set_err(e, "etcd: a value that is not base64");
        return FT_ERR_BAD_MESSAGE;
    }
    kv->value = val;
    kv->len = len;
    kv->create_rev = jint(o, "create_revision");
    kv->mod_rev = jint(o, "mod_revision");
    kv->lease = jint(o, "lease");
    return FT_SUCCESS;
}

int fti_etcd_get(fti_etcd_h e, const char *key, fti_etcd_kv_t *kv_p)
{
    if (e == NULL || key == NULL || kv_p == NULL)
        return FT_ERR_ARG;
    json_object *req = json_object_new_object(), *resp = NULL;
    json_object_object_add(req, "key", b64_json(key, strlen(key)));
    pthread_mutex_lock(&e->mu);
    int rc = call(e, "/v3/kv/range", req, &resp);
    if (rc == FT_SUCCESS) {
        json_object *kvs = jget(resp, "kvs");
        fti_etcd_kv_t kv = {0};
        if (kvs == NULL || json_object_array_length(kvs) == 0)
            rc = FT_ERR_NOT_FOUND;
        else if ((rc = kv_from_json(e, json_object_array_get_idx(kvs, 0), &kv)) == FT_SUCCESS)
            *kv_p = kv;
        json_object_put(resp);
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int fti_etcd_list(fti_etcd_h e, const char *prefix, fti_etcd_kv_t *kvs, size_t max, size_t *n_p)
{
    size_t pl = prefix ? strlen(prefix) : 0;
    if (e == NULL || pl == 0 || pl >= 1024 || (max && kvs == NULL) || n_p == NULL)
        return FT_ERR_ARG;
    /* range_end: the prefix with its last byte one higher (etcd's prefix) */
    char end[1024];
    memcpy(end, prefix, pl);
    size_t el = pl;
    while (el > 0 && (unsigned char)end[el - 1] == 0xff)
        el--;
    if (el == 0)
        return FT_ERR_ARG;
    end[el - 1] = (char)((unsigned char)end[el - 1] + 1);
    json_object *req = json_object_new_object(), *resp = NULL;
    json_object_object_add(req, "key", b64_json(prefix, pl));
    json_object_object_add(req, "range_end", b64_json(end, el));
    jset_int(req, "limit", (int64_t)(max ? max : 1));
    pthread_mutex_lock(&e->mu);
    int rc = call(e, "/v3/kv/range", req, &resp);
    size_t n = 0;
    if (rc == FT_SUCCESS) {
        json_object *a = jget(resp, "kvs");
        size_t len = a ? json_object_array_length(a) : 0;
        for (size_t i = 0; i < len && n < max && rc == FT_SUCCESS; i++) {
            fti_etcd_kv_t kv = {0};
            rc = kv_from_json(e, json_object_array_get_idx(a, i), &kv);
            if (rc == FT_SUCCESS)
                kvs[n++] = kv;
        }
        json_object_put(resp);
    }
    pthread_mutex_unlock(&e->mu);
    if (rc != FT_SUCCESS) {
        while (n > 0)
            fti_etcd_kv_clear(&kvs[--n]);
        return rc;
    }
    *n_p = n;
    return FT_SUCCESS;
}

int fti_etcd_lease_grant(fti_etcd_h e, int64_t ttl_s, int64_t *id_p, int64_t *ttl_p)
{
    if (e == NULL || ttl_s < 1 || id_p == NULL)
        return FT_ERR_ARG;
    json_object *req = json_object_new_object(), *resp = NULL;
    jset_int(req, "TTL", ttl_s);
    pthread_mutex_lock(&e->mu);
    int rc = call(e, "/v3/lease/grant", req, &resp);
    if (rc == FT_SUCCESS) {
        int64_t id = jint(resp, "ID"), ttl = jint(resp, "TTL");
        if (id == 0 || ttl <= 0) {
            set_err(e, "etcd: lease grant without an id: %s", jget(resp, "error")
                    ? json_object_get_string(jget(resp, "error")) : "no reason");
            rc = FT_ERR_BAD_MESSAGE;
        } else {
            *id_p = id;
            if (ttl_p)
                *ttl_p = ttl;
        }
        json_object_put(resp);
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int fti_etcd_lease_keepalive(fti_etcd_h e, int64_t id, int64_t *ttl_p)
{
    if (e == NULL || id == 0)
        return FT_ERR_ARG;
    json_object *req = json_object_new_object(), *resp = NULL;
    jset_int(req, "ID", id);
    pthread_mutex_lock(&e->mu);
    int rc = call(e, "/v3/lease/keepalive", req, &resp);
    if (rc == FT_SUCCESS) {
        /* a stream of one message: {"result": {...}} */
        json_object *r = jget(resp, "result");
        int64_t ttl = jint(r, "TTL");
        if (r == NULL) {
            set_err(e, "etcd: keepalive answer without a result");
            rc = FT_ERR_BAD_MESSAGE;
        } else if (ttl <= 0) {
            set_err(e, "etcd: lease %" PRIx64 " expired", (uint64_t)id);
            rc = FT_ERR_NOT_FOUND;
        } else if (ttl_p) {
            *ttl_p = ttl;
        }
        json_object_put(resp);
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int fti_etcd_lease_revoke(fti_etcd_h e, int64_t id)
{
    if (e == NULL || id == 0)
        return FT_ERR_ARG;
    json_object *req = json_object_new_object(), *resp = NULL;
    jset_int(req, "ID", id);
    pthread_mutex_lock(&e->mu);
    int rc = call(e, "/v3/lease/revoke", req, &resp);
    if (rc == FT_SUCCESS)
        json_object_put(resp);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int fti_etcd_txn(fti_etcd_h e, const fti_etcd_cmp_t *cmp, size_t n_cmp, const fti_etcd_put_t *put,
                 size_t n_put, bool *ok_p, int64_t *rev_p)
{
    if (e == NULL || (n_cmp && cmp == NULL) || (n_put && put == NULL) || ok_p == NULL)
        return FT_ERR_ARG;
    json_object *req = json_object_new_object(), *resp = NULL;
    json_object *jc = json_object_new_array(), *js = json_object_new_array();
    for (size_t i = 0; i < n_cmp; i++) {
        json_object *c = json_object_new_object();
        bool create = cmp[i].target == FTI_ETCD_CREATE_REV;
        json_object_object_add(c, "key", b64_json(cmp[i].key, strlen(cmp[i].key)));
        json_object_object_add(c, "result", json_object_new_string("EQUAL"));
        json_object_object_add(c, "target", json_object_new_string(create ? "CREATE" : "MOD"));
        jset_int(c, create ? "create_revision" : "mod_revision", cmp[i].rev);
        json_object_array_add(jc, c);
    }
    for (size_t i = 0; i < n_put; i++) {
        json_object *op = json_object_new_object(), *p = json_object_new_object();
        json_object_object_add(p, "key", b64_json(put[i].key, strlen(put[i].key)));
        json_object_object_add(p, "value", b64_json(put[i].value, put[i].len));
        if (put[i].lease)
            jset_int(p, "lease", put[i].lease);
        json_object_object_add(op, "request_put", p);
        json_object_array_add(js, op);
    }
    json_object_object_add(req, "compare", jc);
    json_object_object_add(req, "success", js);
    pthread_mutex_lock(&e->mu);
    int rc = call(e, "/v3/kv/txn", req, &resp);
    if (rc == FT_SUCCESS) {
        json_object *s = jget(resp, "succeeded");
        *ok_p = s && json_object_get_boolean(s);
        if (rev_p)
            *rev_p = jint(jget(resp, "header"), "revision");
        json_object_put(resp);
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

#else
typedef int fti_etcd_not_built; /* an empty file is not C */
#endif /* FTMPI_HAVE_ETCD */
