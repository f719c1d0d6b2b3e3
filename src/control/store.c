/*
 * store.c - the rendezvous key-value store (see store.h).
 *
 * Server data: a chained hash table of entries.  An entry holds a value,
 * or the gets waiting for one, or both; an entry with neither is freed at
 * once.  Every waiting get is also on the server's list of waiters, which
 * a one-second sweep walks (only while there are waiters) to drop the
 * gets whose client has gone.  Everything but the counters is touched only
 * on the loop thread, so no lock is needed; the counters are atomics for
 * fti_store_server_stats.
 */
#include "control/store.h"
#include "control/message.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "control/proto/ftmpi.pb-c.h"

#define WAIT_MAX_MS (24LL * 3600 * 1000) /* a longer wait is cut to a day */
#define SWEEP_MS 1000

struct store_entry;

struct store_waiter {
    TAILQ_ENTRY(store_waiter) in_entry;
    TAILQ_ENTRY(store_waiter) in_server;
    struct store_entry *entry;
    struct fti_store_server *s;
    fti_rpc_call_h call;
    struct event *timer;
};
TAILQ_HEAD(waiter_list, store_waiter);

struct store_entry {
    struct store_entry *next; /* hash chain */
    uint64_t hash;
    char *key;
    size_t klen;
    uint8_t *val; /* NULL when the key has no value */
    size_t len;
    struct waiter_list waiters;
};

struct fti_store_server {
    struct event_base *base;
    struct store_entry **buckets;
    size_t n_buckets; /* a power of two */
    size_t n_entries;
    size_t max_keys;
    struct event *sweep;
    struct waiter_list waiters;
    atomic_uint_fast64_t keys, bytes, n_waiters, requests, timeouts, dropped, refused;
};

/* ---- table ------------------------------------------------------------- */

static uint64_t key_hash(const char *key, size_t klen)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (size_t i = 0; i < klen; i++) {
        h ^= (uint8_t)key[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static struct store_entry *entry_find(struct fti_store_server *s, const char *key, size_t klen)
{
    uint64_t h = key_hash(key, klen);
    for (struct store_entry *e = s->buckets[h & (s->n_buckets - 1)]; e != NULL; e = e->next) {
        if (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0)
            return e;
    }
    return NULL;
}

static void table_grow(struct fti_store_server *s)
{
    size_t n = s->n_buckets * 2;
    struct store_entry **b = calloc(n, sizeof(*b));
    if (b == NULL)
        return; /* keep the longer chains */
    for (size_t i = 0; i < s->n_buckets; i++) {
        struct store_entry *e = s->buckets[i], *next;
        for (; e != NULL; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->n_buckets = n;
}

/* Returns key's entry, creating an empty one; NULL when out of memory. */
static struct store_entry *entry_get(struct fti_store_server *s, const char *key, size_t klen)
{
    struct store_entry *e = entry_find(s, key, klen);
    if (e != NULL)
        return e;
    e = calloc(1, sizeof(*e));
    if (e == NULL || (e->key = malloc(klen + 1)) == NULL) {
        free(e);
        FTI_ERROR("store: out of memory for a key");
        return NULL;
    }
    memcpy(e->key, key, klen);
    e->key[klen] = '\0';
    e->klen = klen;
    e->hash = key_hash(key, klen);
    TAILQ_INIT(&e->waiters);
    size_t b = e->hash & (s->n_buckets - 1);
    e->next = s->buckets[b];
    s->buckets[b] = e;
    if (++s->n_entries > s->n_buckets)
        table_grow(s);
    return e;
}

/* Frees e when it has neither a value nor waiters. */
static void entry_release(struct fti_store_server *s, struct store_entry *e)
{
    if (e->val != NULL || !TAILQ_EMPTY(&e->waiters))
        return;
    struct store_entry **pp = &s->buckets[e->hash & (s->n_buckets - 1)];
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    s->n_entries--;
    free(e->key);
    free(e);
}

static void value_drop(struct fti_store_server *s, struct store_entry *e)
{
    if (e->val == NULL)
        return;
    atomic_fetch_sub(&s->keys, 1);
    atomic_fetch_sub(&s->bytes, e->klen + e->len);
    free(e->val);
    e->val = NULL;
    e->len = 0;
}

/* ---- waiters ----------------------------------------------------------- */

/* Unlinks and frees w (not its call). */
static void waiter_free(struct store_waiter *w)
{
    struct fti_store_server *s = w->s;
    TAILQ_REMOVE(&w->entry->waiters, w, in_entry);
    TAILQ_REMOVE(&s->waiters, w, in_server);
    event_free(w->timer);
    atomic_fetch_sub(&s->n_waiters, 1);
    if (TAILQ_EMPTY(&s->waiters))
        evtimer_del(s->sweep);
    free(w);
}

/* Ends a waiting get with an error and frees it; the caller releases the
 * entry. */
static void waiter_fail(struct store_waiter *w, int status, const char *msg)
{
    fti_rpc_call_h call = w->call;
    waiter_free(w);
    fti_rpc_reply_error(call, status, msg);
}

static void waiter_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct store_waiter *w = arg;
    struct store_entry *e = w->entry;
    struct fti_store_server *s = w->s;
    (void)fd;
    (void)what;
    atomic_fetch_add(&s->timeouts, 1);
    FTI_DEBUG("store: get %.64s from %s timed out", e->key, fti_rpc_call_peer(w->call));
    waiter_fail(w, FT_ERR_TIMEOUT, "key not set within the timeout");
    entry_release(s, e);
}

static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fti_store_server *s = arg;
    struct store_waiter *w, *next;
    (void)fd;
    (void)what;
    for (w = TAILQ_FIRST(&s->waiters); w != NULL; w = next) {
        next = TAILQ_NEXT(w, in_server);
        if (fti_rpc_call_alive(w->call))
            continue;
        struct store_entry *e = w->entry;
        atomic_fetch_add(&s->dropped, 1);
        FTI_DEBUG("store: dropping get %.64s: its client left", e->key);
        waiter_fail(w, FT_ERR_PROC_FAILED, "client gone");
        entry_release(s, e);
    }
}

/* Answers every get waiting on e with its value. */
static void waiters_wake(struct fti_store_server *s, struct store_entry *e)
{
    if (TAILQ_EMPTY(&e->waiters))
        return;
    Ftmpi__StoreGetResponse resp = FTMPI__STORE_GET_RESPONSE__INIT;
    resp.value.data = e->val;
    resp.value.len = e->len;
    size_t n = ftmpi__store_get_response__get_packed_size(&resp);
    uint8_t *buf = malloc(n ? n : 1);
    if (buf != NULL)
        ftmpi__store_get_response__pack(&resp, buf);
    else
        FTI_ERROR("store: out of memory answering waiting gets");
    while (!TAILQ_EMPTY(&e->waiters)) {
        struct store_waiter *w = TAILQ_FIRST(&e->waiters);
        fti_rpc_call_h call = w->call;
        waiter_free(w);
        if (buf != NULL)
            fti_rpc_reply(call, buf, n);
        else
            fti_rpc_reply_error(call, FT_ERR_NO_MEMORY, "store out of memory");
    }
    (void)s;
    free(buf);
}

/* ---- requests ---------------------------------------------------------- */

static void refuse(struct fti_store_server *s, fti_rpc_call_h call, int status, const char *msg)
{
    atomic_fetch_add(&s->refused, 1);
    fti_rpc_reply_error(call, status, msg);
}

/* Checks a key (or prefix); empty is allowed only for prefixes. */
static bool key_ok(const char *key, bool allow_empty)
{
    if (key == NULL)
        return false;
    size_t n = strnlen(key, FTI_STORE_MAX_KEY + 1);
    return n <= FTI_STORE_MAX_KEY && (allow_empty || n > 0);
}

/* Stores a copy of val under key and wakes its waiters.  Replies nothing;
 * returns an FT_Error and sets *why on refusal. */
static int store_put(struct fti_store_server *s, const char *key, const void *val, size_t len,
                     const char **why)
{
    size_t klen = strlen(key);
    if (len > FTI_STORE_MAX_VALUE) {
        *why = "value larger than the store's cap";
        return FT_ERR_ARG;
    }
    struct store_entry *e = entry_find(s, key, klen);
    bool fresh = e == NULL || e->val == NULL;
    uint64_t bytes = atomic_load(&s->bytes) + klen + len - (fresh ? 0 : klen + e->len);
    if (fresh && atomic_load(&s->keys) >= s->max_keys) {
        *why = "the store holds too many keys";
        return FT_ERR_ARG;
    }
    if (bytes > FTI_STORE_MAX_BYTES) {
        *why = "the store holds too many bytes";
        return FT_ERR_ARG;
    }
    uint8_t *copy = malloc(len ? len : 1);
    if (copy == NULL || (e == NULL && (e = entry_get(s, key, klen)) == NULL)) {
        free(copy);
        *why = "store out of memory";
        return FT_ERR_NO_MEMORY;
    }
    if (len > 0)
        memcpy(copy, val, len);
    value_drop(s, e);
    e->val = copy;
    e->len = len;
    atomic_fetch_add(&s->keys, 1);
    atomic_fetch_add(&s->bytes, klen + len);
    waiters_wake(s, e);
    return FT_SUCCESS;
}

static void handle_set(struct fti_store_server *s, fti_rpc_call_h call, const uint8_t *p,
                       size_t len)
{
    Ftmpi__StoreSetRequest *req = (Ftmpi__StoreSetRequest *)fti_rpc_unpack(
        &ftmpi__store_set_request__descriptor, p, len);
    const char *why = "bad key";
    int rc = FT_ERR_ARG;
    if (req == NULL) {
        refuse(s, call, FT_ERR_BAD_MESSAGE, "StoreSetRequest does not decode");
        return;
    }
    if (key_ok(req->key, false))
        rc = store_put(s, req->key, req->value.data, req->value.len, &why);
    if (rc == FT_SUCCESS) {
        Ftmpi__StoreSetResponse resp = FTMPI__STORE_SET_RESPONSE__INIT;
        fti_rpc_reply_msg(call, &resp.base);
    } else {
        FTI_WARN("store: set from %s refused: %s", fti_rpc_call_peer(call), why);
        refuse(s, call, rc, why);
    }
    ftmpi__store_set_request__free_unpacked(req, NULL);
}

static void handle_get(struct fti_store_server *s, fti_rpc_call_h call, const uint8_t *p,
                       size_t len)
{
    Ftmpi__StoreGetRequest *req = (Ftmpi__StoreGetRequest *)fti_rpc_unpack(
        &ftmpi__store_get_request__descriptor, p, len);
    if (req == NULL) {
        refuse(s, call, FT_ERR_BAD_MESSAGE, "StoreGetRequest does not decode");
        return;
    }
    if (!key_ok(req->key, false)) {
        FTI_WARN("store: get from %s refused: bad key", fti_rpc_call_peer(call));
        refuse(s, call, FT_ERR_ARG, "bad key");
        goto out;
    }
    size_t klen = strlen(req->key);
    struct store_entry *e = entry_find(s, req->key, klen);
    if (e != NULL && e->val != NULL) {
        Ftmpi__StoreGetResponse resp = FTMPI__STORE_GET_RESPONSE__INIT;
        resp.value.data = e->val;
        resp.value.len = e->len;
        fti_rpc_reply_msg(call, &resp.base);
        goto out;
    }
    if (req->timeout_ms <= 0) {
        fti_rpc_reply_error(call, FT_ERR_NOT_FOUND, "no such key");
        goto out;
    }
    if (atomic_load(&s->n_waiters) >= FTI_STORE_MAX_WAITERS) {
        FTI_WARN("store: get from %s refused: too many waiting gets", fti_rpc_call_peer(call));
        refuse(s, call, FT_ERR_ARG, "too many waiting gets");
        goto out;
    }
    struct store_waiter *w = calloc(1, sizeof(*w));
    if (w == NULL || (e = entry_get(s, req->key, klen)) == NULL) {
        free(w);
        refuse(s, call, FT_ERR_NO_MEMORY, "store out of memory");
        goto out;
    }
    w->timer = evtimer_new(s->base, waiter_timeout_cb, w);
    if (w->timer == NULL) {
        FTI_ERROR("store: evtimer_new failed");
        free(w);
        entry_release(s, e);
        refuse(s, call, FT_ERR_SYSTEM, "store timer failed");
        goto out;
    }
    int64_t ms = req->timeout_ms < WAIT_MAX_MS ? req->timeout_ms : WAIT_MAX_MS;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    w->s = s;
    w->entry = e;
    w->call = call;
    TAILQ_INSERT_TAIL(&e->waiters, w, in_entry);
    if (TAILQ_EMPTY(&s->waiters)) {
        struct timeval sv = {SWEEP_MS / 1000, (SWEEP_MS % 1000) * 1000};
        evtimer_add(s->sweep, &sv);
    }
    TAILQ_INSERT_TAIL(&s->waiters, w, in_server);
    atomic_fetch_add(&s->n_waiters, 1);
    evtimer_add(w->timer, &tv);
out:
    ftmpi__store_get_request__free_unpacked(req, NULL);
}

/* Parses a whole buffer as a decimal int64. */
static bool parse_i64(const uint8_t *p, size_t len, int64_t *v_p)
{
    char buf[32];
    if (len == 0 || len >= sizeof(buf))
        return false;
    memcpy(buf, p, len);
    buf[len] = '\0';
    for (size_t i = 0; i < len; i++) {
        bool sign = i == 0 && (buf[i] == '-' || buf[i] == '+') && len > 1;
        if (!sign && (buf[i] < '0' || buf[i] > '9'))
            return false;
    }
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *v_p = v;
    return true;
}

static void handle_add(struct fti_store_server *s, fti_rpc_call_h call, const uint8_t *p,
                       size_t len)
{
    Ftmpi__StoreAddRequest *req = (Ftmpi__StoreAddRequest *)fti_rpc_unpack(
        &ftmpi__store_add_request__descriptor, p, len);
    const char *why = "bad key";
    int rc = FT_ERR_ARG;
    int64_t v = 0;
    if (req == NULL) {
        refuse(s, call, FT_ERR_BAD_MESSAGE, "StoreAddRequest does not decode");
        return;
    }
    if (key_ok(req->key, false)) {
        struct store_entry *e = entry_find(s, req->key, strlen(req->key));
        rc = FT_SUCCESS;
        if (e != NULL && e->val != NULL && !parse_i64(e->val, e->len, &v)) {
            why = "value is not a decimal int64";
            rc = FT_ERR_ARG;
        } else if (__builtin_add_overflow(v, req->delta, &v)) {
            why = "add overflows int64";
            rc = FT_ERR_ARG;
        }
    }
    if (rc == FT_SUCCESS) {
        char text[32];
        int n = snprintf(text, sizeof(text), "%" PRId64, v);
        rc = store_put(s, req->key, text, (size_t)n, &why);
    }
    if (rc == FT_SUCCESS) {
        Ftmpi__StoreAddResponse resp = FTMPI__STORE_ADD_RESPONSE__INIT;
        resp.value = v;
        fti_rpc_reply_msg(call, &resp.base);
    } else {
        FTI_WARN("store: add from %s refused: %s", fti_rpc_call_peer(call), why);
        refuse(s, call, rc, why);
    }
    ftmpi__store_add_request__free_unpacked(req, NULL);
}

static void handle_delete_prefix(struct fti_store_server *s, fti_rpc_call_h call,
                                 const uint8_t *p, size_t len)
{
    Ftmpi__StoreDeletePrefixRequest *req = (Ftmpi__StoreDeletePrefixRequest *)fti_rpc_unpack(
        &ftmpi__store_delete_prefix_request__descriptor, p, len);
    if (req == NULL) {
        refuse(s, call, FT_ERR_BAD_MESSAGE, "StoreDeletePrefixRequest does not decode");
        return;
    }
    if (!key_ok(req->prefix, true)) {
        refuse(s, call, FT_ERR_ARG, "bad prefix");
        ftmpi__store_delete_prefix_request__free_unpacked(req, NULL);
        return;
    }
    size_t plen = strlen(req->prefix);
    int64_t deleted = 0;
    for (size_t b = 0; b < s->n_buckets; b++) {
        struct store_entry *e = s->buckets[b], *next;
        for (; e != NULL; e = next) {
            next = e->next;
            if (e->val == NULL || e->klen < plen || memcmp(e->key, req->prefix, plen) != 0)
                continue;
            value_drop(s, e);
            entry_release(s, e);
            deleted++;
        }
    }
    Ftmpi__StoreDeletePrefixResponse resp = FTMPI__STORE_DELETE_PREFIX_RESPONSE__INIT;
    resp.deleted = deleted;
    fti_rpc_reply_msg(call, &resp.base);
    ftmpi__store_delete_prefix_request__free_unpacked(req, NULL);
}

void fti_store_handle(fti_store_server_h s, fti_rpc_call_h call, uint16_t method,
                      const uint8_t *payload, size_t len)
{
    atomic_fetch_add(&s->requests, 1);
    switch (method) {
    case FTMPI__METHOD__STORE_SET:
        handle_set(s, call, payload, len);
        break;
    case FTMPI__METHOD__STORE_GET:
        handle_get(s, call, payload, len);
        break;
    case FTMPI__METHOD__STORE_ADD:
        handle_add(s, call, payload, len);
        break;
    case FTMPI__METHOD__STORE_DELETE_PREFIX:
        handle_delete_prefix(s, call, payload, len);
        break;
    default:
        refuse(s, call, FT_ERR_UNSUPPORTED, "not a store method");
        break;
    }
}

static void store_rpc_cb(fti_rpc_call_h call, const uint8_t *payload, size_t len, void *arg)
{
    fti_store_handle(arg, call, fti_rpc_call_method(call), payload, len);
}

size_t fti_store_server_methods(fti_rpc_method_t *out, size_t max)
{
    static const uint16_t methods[] = {FTMPI__METHOD__STORE_SET, FTMPI__METHOD__STORE_GET,
                                       FTMPI__METHOD__STORE_ADD,
                                       FTMPI__METHOD__STORE_DELETE_PREFIX};
    size_t n = sizeof(methods) / sizeof(methods[0]);
    if (out == NULL || max < n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        out[i].method = methods[i];
        out[i].fn = store_rpc_cb;
    }
    return n;
}

/* ---- server lifetime --------------------------------------------------- */

int fti_store_server_create(struct event_base *base, fti_store_server_h *s_p)
{
    if (base == NULL || s_p == NULL)
        return FT_ERR_ARG;
    struct fti_store_server *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return FT_ERR_NO_MEMORY;
    s->n_buckets = 64;
    s->buckets = calloc(s->n_buckets, sizeof(*s->buckets));
    s->sweep = event_new(base, -1, EV_PERSIST, sweep_cb, s);
    if (s->buckets == NULL || s->sweep == NULL) {
        FTI_ERROR("store: out of memory creating the store");
        if (s->sweep != NULL)
            event_free(s->sweep);
        free(s->buckets);
        free(s);
        return FT_ERR_NO_MEMORY;
    }
    s->base = base;
    s->max_keys = FTI_STORE_MAX_KEYS;
    TAILQ_INIT(&s->waiters);
    *s_p = s;
    return FT_SUCCESS;
}

void fti_store_server_destroy(fti_store_server_h s)
{
    if (s == NULL)
        return;
    while (!TAILQ_EMPTY(&s->waiters))
        waiter_fail(TAILQ_FIRST(&s->waiters), FT_ERR_PROC_FAILED, "store shut down");
    for (size_t b = 0; b < s->n_buckets; b++) {
        struct store_entry *e = s->buckets[b], *next;
        for (; e != NULL; e = next) {
            next = e->next;
            free(e->val);
            free(e->key);
            free(e);
        }
    }
    event_free(s->sweep);
    free(s->buckets);
    free(s);
}

void fti_store_server_limit_keys(fti_store_server_h s, size_t max_keys)
{
    s->max_keys = max_keys > 0 && max_keys < FTI_STORE_MAX_KEYS ? max_keys : FTI_STORE_MAX_KEYS;
}

void fti_store_server_stats(fti_store_server_h s, fti_store_stats_t *stats_p)
{
    fti_store_stats_t st;
    st.keys = atomic_load(&s->keys);
    st.bytes = atomic_load(&s->bytes);
    st.waiters = atomic_load(&s->n_waiters);
    st.requests = atomic_load(&s->requests);
    st.timeouts = atomic_load(&s->timeouts);
    st.dropped = atomic_load(&s->dropped);
    st.refused = atomic_load(&s->refused);
    *stats_p = st;
}

/* ---- client ------------------------------------------------------------ */

int fti_store_set(fti_rpc_client_h c, const char *key, const void *val, size_t len,
                  int timeout_ms)
{
    if (c == NULL || key == NULL || (val == NULL && len > 0))
        return FT_ERR_ARG;
    Ftmpi__StoreSetRequest req = FTMPI__STORE_SET_REQUEST__INIT;
    ProtobufCMessage *resp = NULL;
    req.key = (char *)key;
    req.value.data = (uint8_t *)val;
    req.value.len = len;
    int rc = fti_rpc_call_msg(c, FTMPI__METHOD__STORE_SET, &req.base,
                              &ftmpi__store_set_response__descriptor, timeout_ms, &resp);
    if (rc == FT_SUCCESS)
        protobuf_c_message_free_unpacked(resp, NULL);
    return rc;
}

int fti_store_get(fti_rpc_client_h c, const char *key, int wait_timeout_ms, void **val_p,
                  size_t *len_p)
{
    if (c == NULL || key == NULL || val_p == NULL || len_p == NULL)
        return FT_ERR_ARG;
    Ftmpi__StoreGetRequest req = FTMPI__STORE_GET_REQUEST__INIT;
    ProtobufCMessage *m = NULL;
    int wait = wait_timeout_ms > 0 ? wait_timeout_ms : 0;
    int rpc_ms = wait < INT_MAX - FTI_STORE_REPLY_SLACK_MS ? wait + FTI_STORE_REPLY_SLACK_MS
                                                            : INT_MAX;
    req.key = (char *)key;
    req.timeout_ms = wait;
    int rc = fti_rpc_call_msg(c, FTMPI__METHOD__STORE_GET, &req.base,
                              &ftmpi__store_get_response__descriptor, rpc_ms, &m);
    if (rc != FT_SUCCESS)
        return rc;
    Ftmpi__StoreGetResponse *resp = (Ftmpi__StoreGetResponse *)m;
    uint8_t *copy = malloc(resp->value.len + 1);
    if (copy == NULL) {
        protobuf_c_message_free_unpacked(m, NULL);
        return FT_ERR_NO_MEMORY;
    }
    if (resp->value.len > 0)
        memcpy(copy, resp->value.data, resp->value.len);
    copy[resp->value.len] = '\0';
    *len_p = resp->value.len;
    *val_p = copy;
    protobuf_c_message_free_unpacked(m, NULL);
    return FT_SUCCESS;
}

int fti_store_add(fti_rpc_client_h c, const char *key, int64_t delta, int timeout_ms,
                  int64_t *value_p)
{
    if (c == NULL || key == NULL)
        return FT_ERR_ARG;
    Ftmpi__StoreAddRequest req = FTMPI__STORE_ADD_REQUEST__INIT;
    ProtobufCMessage *m = NULL;
    req.key = (char *)key;
    req.delta = delta;
    int rc = fti_rpc_call_msg(c, FTMPI__METHOD__STORE_ADD, &req.base,
                              &ftmpi__store_add_response__descriptor, timeout_ms, &m);
    if (rc != FT_SUCCESS)
        return rc;
    if (value_p != NULL)
        *value_p = ((Ftmpi__StoreAddResponse *)m)->value;
    protobuf_c_message_free_unpacked(m, NULL);
    return FT_SUCCESS;
}

int fti_store_delete_prefix(fti_rpc_client_h c, const char *prefix, int timeout_ms,
                            int64_t *deleted_p)
{
    if (c == NULL || prefix == NULL)
        return FT_ERR_ARG;
    Ftmpi__StoreDeletePrefixRequest req = FTMPI__STORE_DELETE_PREFIX_REQUEST__INIT;
    ProtobufCMessage *m = NULL;
    req.prefix = (char *)prefix;
    int rc = fti_rpc_call_msg(c, FTMPI__METHOD__STORE_DELETE_PREFIX, &req.base,
                              &ftmpi__store_delete_prefix_response__descriptor, timeout_ms, &m);
    if (rc != FT_SUCCESS)
        return rc;
    if (deleted_p != NULL)
        *deleted_p = ((Ftmpi__StoreDeletePrefixResponse *)m)->deleted;
    protobuf_c_message_free_unpacked(m, NULL);
    return FT_SUCCESS;
}
