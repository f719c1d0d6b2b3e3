/* lighthouse/leader.c - the lighthouse's election through etcd (see leader.h). */
#include "lighthouse/leader.h"

#include "ftmpi_config.h" /* FTMPI_HAVE_ETCD */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"

#ifndef FTMPI_HAVE_ETCD

static const char no_etcd[] = "this ftmpi-lighthouse was built without etcd support "
                              "(configure --with-etcd: libcurl and json-c)";

int fti_lh_leader_create(const fti_lh_leader_opts_t *o, fti_lh_leader_h *l_p, char *why,
                         size_t why_len)
{
    (void)o;
    (void)l_p;
    if (why)
        snprintf(why, why_len, "%s", no_etcd);
    return FT_ERR_UNSUPPORTED;
}

int fti_lh_leader_begin(fti_lh_leader_h l, const char *advertise)
{
    (void)l;
    (void)advertise;
    return FT_ERR_UNSUPPORTED;
}

void fti_lh_leader_stop(fti_lh_leader_h l)
{
    (void)l;
}

const fti_lh_gate_t *fti_lh_leader_gate(fti_lh_leader_h l)
{
    (void)l;
    return NULL;
}

bool fti_lh_leader_status(fti_lh_leader_h l, char *leader, size_t len)
{
    (void)l;
    if (len)
        leader[0] = '\0';
    return false;
}

#else /* FTMPI_HAVE_ETCD */

#include <inttypes.h>
#include <json-c/json.h>
#include <pthread.h>
#include <time.h>

#include "base/log.h"
#include "base/util.h"
#include "lighthouse/quorum.h"

#define KEY_SIZE (FTI_PATH_SIZE + 32)

struct fti_lh_leader {
    fti_lh_leader_opts_t o;
    fti_lh_gate_t gate;
    fti_etcd_h etcd;       /* the election thread's */
    fti_etcd_h fence;      /* the loop thread's writes */
    char key_leader[KEY_SIZE], key_id[KEY_SIZE], key_last[KEY_SIZE];
    char key_members[KEY_SIZE], key_me[KEY_SIZE + FTI_ADDRESS_SIZE];
    int64_t member_lease;  /* the election thread's: our PREFIX/lighthouses key */
    pthread_t thread;
    bool started;

    pthread_mutex_t mu;    /* guards what follows */
    pthread_cond_t cv;     /* stop wakes the thread */
    bool stop;
    bool leading;
    int64_t deadline_ms;   /* monotonic: the lease is surely alive until then */
    int64_t fence_rev;     /* create revision of our PREFIX/leader */
    int64_t id_floor;      /* PREFIX/quorum_id when we won */
    int64_t lease;         /* our lease while leading, 0 none */
    char leader[FTI_ADDRESS_SIZE];
    size_t n_members;      /* the job's lighthouses, as last read */
    char members[FTI_LH_MEMBERS_MAX][FTI_ADDRESS_SIZE];
};

/* ---- the gate (loop thread) --------------------------------------------- */

static bool gate_leading(void *arg, int64_t *term_p, int64_t *floor_p, char *leader, size_t len)
{
    struct fti_lh_leader *l = arg;
    pthread_mutex_lock(&l->mu);
    bool lead = l->leading && fti_now_ms() < l->deadline_ms;
    *term_p = l->fence_rev;
    *floor_p = l->id_floor;
    /* a leader past its lease deadline knows no leader (not itself) */
    snprintf(leader, len, "%s", l->leading ? "" : l->leader);
    pthread_mutex_unlock(&l->mu);
    return lead;
}

/* PREFIX/last_quorum's JSON (malloc'ed), NULL on no memory. */
static char *quorum_json(const fti_quorum_t *q)
{
    json_object *j = json_object_new_object(), *ms = json_object_new_array();
    json_object_object_add(j, "quorum_id", json_object_new_int64(q->quorum_id));
    for (size_t i = 0; i < q->n_members; i++) {
        const fti_qmember_t *m = &q->members[i];
        json_object *o = json_object_new_object();
        char inc[24];
        snprintf(inc, sizeof(inc), "%" PRIu64, m->incarnation);
        json_object_object_add(o, "replica_id", json_object_new_string(m->replica_id));
        json_object_object_add(o, "step", json_object_new_int64(m->step));
        json_object_object_add(o, "incarnation", json_object_new_string(inc));
        json_object_object_add(o, "address", json_object_new_string(m->address));
        json_object_object_add(o, "store_address", json_object_new_string(m->store_address));
        json_object_object_add(o, "world_size", json_object_new_int64((int64_t)m->world_size));
        json_object_array_add(ms, o);
    }
    json_object_object_add(j, "members", ms);
    const char *s = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
    char *out = s ? strdup(s) : NULL;
    json_object_put(j);
    return out;
}

/* Steps down (under l->mu): the gate says no from now on. */
static void step_down(struct fti_lh_leader *l, const char *why)
{
    if (l->leading)
        FTI_WARN("etcd: no longer the leader: %s", why);
    l->leading = false;
    l->leader[0] = '\0';
}

/* The n puts in one txn guarded by our election key (fencing): refused
 * while we do not lead; a refused compare steps down.  what names the
 * write in the warning of a failed call. */
static int fenced_put(struct fti_lh_leader *l, const fti_etcd_put_t *put, size_t n,
                      const char *what)
{
    char err[FTI_REASON_SIZE];
    pthread_mutex_lock(&l->mu);
    bool lead = l->leading && fti_now_ms() < l->deadline_ms;
    int64_t rev = l->fence_rev;
    pthread_mutex_unlock(&l->mu);
    if (!lead)
        return FT_ERR_NOT_LEADER;
    fti_etcd_cmp_t cmp = {l->key_leader, FTI_ETCD_CREATE_REV, rev};
    bool ok = false;
    int rc = fti_etcd_txn(l->fence, &cmp, 1, put, n, &ok, NULL);
    if (rc != FT_SUCCESS) {
        fti_etcd_last_error(l->fence, err, sizeof(err));
        FTI_WARN("etcd: %s: %s", what, err);
        return rc;
    }
    if (!ok) {
        pthread_mutex_lock(&l->mu);
        step_down(l, "etcd refused its write: another lighthouse was elected (fenced)");
        pthread_mutex_unlock(&l->mu);
        return FT_ERR_NOT_LEADER;
    }
    return FT_SUCCESS;
}

static int gate_record(void *arg, const struct fti_quorum *q)
{
    struct fti_lh_leader *l = arg;
    char id[24], what[64];
    char *js = quorum_json(q);
    if (js == NULL)
        return FT_ERR_NO_MEMORY;
    snprintf(id, sizeof(id), "%" PRId64, q->quorum_id);
    snprintf(what, sizeof(what), "quorum %" PRId64 " not recorded", q->quorum_id);
    fti_etcd_put_t put[2] = {{l->key_id, id, strlen(id), 0}, {l->key_last, js, strlen(js), 0}};
    int rc = fenced_put(l, put, 2, what);
    free(js);
    return rc;
}

/* PREFIX/name written in a txn guarded by our election key. */
static int gate_save(void *arg, const char *name, const char *val)
{
    struct fti_lh_leader *l = arg;
    char key[KEY_SIZE + 64], what[KEY_SIZE + 80];
    snprintf(key, sizeof(key), "%s/%s", l->o.prefix, name);
    snprintf(what, sizeof(what), "%s not written", key);
    fti_etcd_put_t put = {key, val, strlen(val), 0};
    return fenced_put(l, &put, 1, what);
}

static int gate_load(void *arg, const char *name, char **val_p)
{
    struct fti_lh_leader *l = arg;
    char key[KEY_SIZE + 64];
    fti_etcd_kv_t kv = {0};
    snprintf(key, sizeof(key), "%s/%s", l->o.prefix, name);
    int rc = fti_etcd_get(l->fence, key, &kv);
    if (rc == FT_SUCCESS)
        *val_p = kv.value; /* handed over */
    return rc;
}

static size_t gate_members(void *arg, char (*out)[FTI_ADDRESS_SIZE], size_t max, char *leader,
                           size_t len)
{
    struct fti_lh_leader *l = arg;
    pthread_mutex_lock(&l->mu);
    size_t n = FTI_MIN(max, l->n_members);
    memcpy(out, l->members, n * sizeof(*out));
    snprintf(leader, len, "%s", l->leader);
    pthread_mutex_unlock(&l->mu);
    return n;
}

/* ---- the election thread ------------------------------------------------ */

/* Our PREFIX/lighthouses/ADDRESS key on a lease of its own (made again
 * when the lease is gone), then the list of the job's lighthouses. */
static void membership(struct fti_lh_leader *l)
{
    int64_t ttl = 0;
    int rc = FT_ERR_NOT_FOUND;
    if (l->member_lease)
        rc = fti_etcd_lease_keepalive(l->etcd, l->member_lease, &ttl);
    if (rc == FT_ERR_NOT_FOUND) {
        l->member_lease = 0;
        if (fti_etcd_lease_grant(l->etcd, l->o.ttl_s, &l->member_lease, &ttl) == FT_SUCCESS) {
            fti_etcd_put_t put = {l->key_me, l->o.advertise, strlen(l->o.advertise),
                                  l->member_lease};
            bool ok = false;
            if (fti_etcd_txn(l->etcd, NULL, 0, &put, 1, &ok, NULL) != FT_SUCCESS || !ok) {
                (void)fti_etcd_lease_revoke(l->etcd, l->member_lease);
                l->member_lease = 0;
            }
        }
    }
    fti_etcd_kv_t kv[FTI_LH_MEMBERS_MAX];
    size_t n = 0;
    if (fti_etcd_list(l->etcd, l->key_members, kv, FTI_LH_MEMBERS_MAX, &n) != FT_SUCCESS)
        return;
    pthread_mutex_lock(&l->mu);
    l->n_members = 0;
    for (size_t i = 0; i < n; i++) {
        if (kv[i].len > 0 && kv[i].len < FTI_ADDRESS_SIZE)
            fti_strlcpy(l->members[l->n_members++], kv[i].value, FTI_ADDRESS_SIZE);
        fti_etcd_kv_clear(&kv[i]);
    }
    pthread_mutex_unlock(&l->mu);
}

/* Sleeps ms or until stop; true when stopping. */
static bool nap(struct fti_lh_leader *l, int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&l->mu);
    while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &ts) == 0)
        ;
    bool stop = l->stop;
    pthread_mutex_unlock(&l->mu);
    return stop;
}

/* One campaign: true when this lighthouse now leads. */
static bool campaign(struct fti_lh_leader *l)
{
    int64_t lease = 0, ttl = 0, rev = 0, t0 = fti_now_ms();
    char err[FTI_REASON_SIZE];
    int rc = fti_etcd_lease_grant(l->etcd, l->o.ttl_s, &lease, &ttl);
    if (rc != FT_SUCCESS) {
        fti_etcd_last_error(l->etcd, err, sizeof(err));
        FTI_DEBUG("etcd: lease grant failed: %s", err);
        return false;
    }
    fti_etcd_cmp_t cmp = {l->key_leader, FTI_ETCD_CREATE_REV, 0};
    fti_etcd_put_t put = {l->key_leader, l->o.advertise, strlen(l->o.advertise), lease};
    bool won = false;
    rc = fti_etcd_txn(l->etcd, &cmp, 1, &put, 1, &won, &rev);
    if (rc != FT_SUCCESS || !won) {
        (void)fti_etcd_lease_revoke(l->etcd, lease);
        return false;
    }
    /* what the former leaders issued: ours start above it */
    int64_t floor = 0;
    fti_etcd_kv_t kv = {0};
    rc = fti_etcd_get(l->etcd, l->key_id, &kv);
    if (rc == FT_SUCCESS) {
        floor = strtoll(kv.value, NULL, 10);
        fti_etcd_kv_clear(&kv);
    } else if (rc != FT_ERR_NOT_FOUND) {
        fti_etcd_last_error(l->etcd, err, sizeof(err));
        FTI_WARN("etcd: elected but cannot read %s (%s): giving the leadership back",
                 l->key_id, err);
        (void)fti_etcd_lease_revoke(l->etcd, lease);
        return false;
    }
    pthread_mutex_lock(&l->mu);
    l->leading = true;
    l->lease = lease;
    l->fence_rev = rev;
    l->id_floor = floor;
    l->deadline_ms = t0 + ttl * 1000;
    fti_strlcpy(l->leader, l->o.advertise, sizeof(l->leader));
    pthread_mutex_unlock(&l->mu);
    FTI_INFO("etcd: elected leader of %s (lease %" PRIx64 ", ttl %" PRId64
             " s, revision %" PRId64 "); quorum ids start above %" PRId64,
             l->o.prefix, (uint64_t)lease, ttl, rev, floor);
    return true;
}

/* A standby's look at PREFIX/leader: true when it is absent (campaign). */
static bool watch_leader(struct fti_lh_leader *l)
{
    fti_etcd_kv_t kv = {0};
    int rc = fti_etcd_get(l->etcd, l->key_leader, &kv);
    pthread_mutex_lock(&l->mu);
    if (rc == FT_SUCCESS && strcmp(kv.value, l->o.advertise) == 0) {
        l->leader[0] = '\0'; /* our own key of a lease we lost: gone within its TTL */
    } else if (rc == FT_SUCCESS) {
        if (strcmp(l->leader, kv.value) != 0)
            FTI_INFO("etcd: standby; the leader is %s", kv.value);
        fti_strlcpy(l->leader, kv.value, sizeof(l->leader));
    } else {
        l->leader[0] = '\0';
    }
    pthread_mutex_unlock(&l->mu);
    fti_etcd_kv_clear(&kv);
    return rc == FT_ERR_NOT_FOUND;
}

/* The leader's keepalive; false when it lost the lease. */
static bool keep_lease(struct fti_lh_leader *l)
{
    int64_t ttl = 0, t0 = fti_now_ms();
    char err[FTI_REASON_SIZE];
    pthread_mutex_lock(&l->mu);
    int64_t lease = l->lease;
    pthread_mutex_unlock(&l->mu);
    int rc = fti_etcd_lease_keepalive(l->etcd, lease, &ttl);
    pthread_mutex_lock(&l->mu);
    if (rc == FT_SUCCESS) {
        l->deadline_ms = t0 + ttl * 1000;
    } else if (rc == FT_ERR_NOT_FOUND || fti_now_ms() >= l->deadline_ms) {
        fti_etcd_last_error(l->etcd, err, sizeof(err));
        step_down(l, rc == FT_ERR_NOT_FOUND ? "its etcd lease expired" : err);
        l->lease = 0;
    }
    bool lead = l->leading;
    pthread_mutex_unlock(&l->mu);
    return lead;
}

static void *election(void *arg)
{
    struct fti_lh_leader *l = arg;
    int64_t ttl_ms = l->o.ttl_s * 1000;
    bool stop = false;
    while (!stop) {
        pthread_mutex_lock(&l->mu);
        bool lead = l->leading;
        pthread_mutex_unlock(&l->mu);
        if (lead && keep_lease(l)) {
            membership(l); /* after the keepalive, which it must not delay */
            stop = nap(l, ttl_ms / 3);
            continue;
        }
        if (watch_leader(l) && campaign(l))
            continue;
        membership(l);
        stop = nap(l, FTI_MAX(ttl_ms / 4, 50));
    }
    pthread_mutex_lock(&l->mu);
    int64_t lease = l->leading ? l->lease : 0;
    l->leading = false;
    pthread_mutex_unlock(&l->mu);
    if (lease) {
        (void)fti_etcd_lease_revoke(l->etcd, lease);
        FTI_INFO("etcd: leadership given back (lease revoked)");
    }
    if (l->member_lease)
        (void)fti_etcd_lease_revoke(l->etcd, l->member_lease);
    return NULL;
}

/* ---- create / stop --------------------------------------------------------- */

int fti_lh_leader_create(const fti_lh_leader_opts_t *o, fti_lh_leader_h *l_p, char *why,
                         size_t why_len)
{
    if (o == NULL || l_p == NULL)
        return FT_ERR_ARG;
    if (o->ttl_s < 1 || o->prefix[0] != '/') {
        snprintf(why, why_len, o->ttl_s < 1 ? "the lease TTL must be >= 1 s"
                                            : "the etcd prefix must start with '/'");
        return FT_ERR_ARG;
    }
    struct fti_lh_leader *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return FT_ERR_NO_MEMORY;
    l->o = *o;
    size_t pl = strlen(o->prefix);
    while (pl > 1 && l->o.prefix[pl - 1] == '/')
        l->o.prefix[--pl] = '\0';
    snprintf(l->key_leader, sizeof(l->key_leader), "%s/leader", l->o.prefix);
    snprintf(l->key_id, sizeof(l->key_id), "%s/quorum_id", l->o.prefix);
    snprintf(l->key_last, sizeof(l->key_last), "%s/last_quorum", l->o.prefix);
    snprintf(l->key_members, sizeof(l->key_members), "%s/lighthouses/", l->o.prefix);
    /* every call well within the lease, so a stalled etcd is seen in time */
    int timeout_ms = (int)FTI_MAX(200, o->ttl_s * 1000 / 2);
    int rc = fti_etcd_create(o->endpoints, &o->auth, timeout_ms, &l->etcd, why, why_len);
    if (rc == FT_SUCCESS)
        rc = fti_etcd_create(o->endpoints, &o->auth, timeout_ms, &l->fence, why, why_len);
    if (rc != FT_SUCCESS) {
        fti_etcd_destroy(l->etcd);
        free(l);
        return rc;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->gate.leading = gate_leading;
    l->gate.record = gate_record;
    l->gate.save = gate_save;
    l->gate.load = gate_load;
    l->gate.members = gate_members;
    l->gate.arg = l;
    *l_p = l;
    return FT_SUCCESS;
}

int fti_lh_leader_begin(fti_lh_leader_h l, const char *advertise)
{
    if (l == NULL || l->started)
        return FT_ERR_ARG;
    if (l->o.advertise[0] == '\0' &&
        fti_strlcpy(l->o.advertise, advertise ? advertise : "", sizeof(l->o.advertise)) != 0)
        return FT_ERR_ARG;
    snprintf(l->key_me, sizeof(l->key_me), "%s%s", l->key_members, l->o.advertise);
    if (pthread_create(&l->thread, NULL, election, l) != 0)
        return FT_ERR_SYSTEM;
    l->started = true;
    FTI_INFO("etcd: %s, keys under %s, lease %" PRId64 " s; advertising %s", l->o.endpoints,
             l->o.prefix, l->o.ttl_s, l->o.advertise);
    return FT_SUCCESS;
}

void fti_lh_leader_stop(fti_lh_leader_h l)
{
    if (l == NULL)
        return;
    if (l->started) {
        pthread_mutex_lock(&l->mu);
        l->stop = true;
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
    }
    fti_etcd_destroy(l->etcd);
    fti_etcd_destroy(l->fence);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

const fti_lh_gate_t *fti_lh_leader_gate(fti_lh_leader_h l)
{
    return l ? &l->gate : NULL;
}

bool fti_lh_leader_status(fti_lh_leader_h l, char *leader, size_t len)
{
    pthread_mutex_lock(&l->mu);
    bool lead = l->leading && fti_now_ms() < l->deadline_ms;
    snprintf(leader, len, "%s", l->leader);
    pthread_mutex_unlock(&l->mu);
    return lead;
}

#endif /* FTMPI_HAVE_ETCD */
