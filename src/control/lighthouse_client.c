/* lighthouse_client.c - blocking lighthouse client (see lighthouse_client.h). */
#include "control/lighthouse_client.h"
#include "control/obs_report.h"
#include "control/message.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/sizes.h"
#include "control/results.h"
#include "base/rpc.h"
#include "base/util.h"

#define LH_MAX_REPLY (64u << 20) /* a quorum of 10,000+ groups fits */
#define LH_FAILOVER_PAUSE_MS 100 /* between rounds over every lighthouse */

struct fti_lighthouse_client {
    pthread_mutex_t mu;   /* serialises calls (the rpc client is replaced) */
    fti_rpc_client_h rpc; /* of addrs[cur] */
    char addrs[FTI_LH_MAX_ADDRS][FTI_ADDRESS_SIZE]; /* FTMPI_LIGHTHOUSE's list */
    size_t n_addrs, cur;
    bool has_key;
    fti_auth_key_t key;
    int connect_timeout_ms;
    uint64_t incarnation; /* nonzero, drawn at create */
    bool want_ids;        /* fti_lighthouse_client_want_ids */
};

/* The highest quorum id any client of this process received (0 = none). */
static _Atomic int64_t max_quorum_id;

static void note_quorum_id(int64_t id)
{
    int64_t cur = atomic_load(&max_quorum_id);
    while (id > cur && !atomic_compare_exchange_weak(&max_quorum_id, &cur, id))
        ;
}

int64_t fti_lighthouse_max_quorum_id(void)
{
    return atomic_load(&max_quorum_id);
}

/* A random nonzero 64-bit number; without getrandom (old kernel, no
 * entropy yet) the clock, the pid and the address of c mixed. */
static uint64_t draw_incarnation(const void *c)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
            ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)c;
        x ^= x >> 33; /* splitmix64's finaliser spreads the bits */
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
    }
    return x ? x : 1;
}

/* Splits "a,b,c" into c->addrs; FT_ERR_ARG for an empty or long item. */
static int split_addrs(struct fti_lighthouse_client *c, const char *list)
{
    const char *p = list;
    do {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= FTI_ADDRESS_SIZE || c->n_addrs >= FTI_LH_MAX_ADDRS)
            return FT_ERR_ARG;
        memcpy(c->addrs[c->n_addrs], p, n);
        c->addrs[c->n_addrs++][n] = '\0';
        p += n;
    } while (*p++ == ',');
    return FT_SUCCESS;
}

/* Talks to addrs[i] from now on (under c->mu). */
static int use_addr(struct fti_lighthouse_client *c, size_t i)
{
    fti_rpc_client_h rpc = NULL;
    int rc = fti_rpc_client_create(c->addrs[i], c->has_key ? &c->key : NULL,
                                   c->connect_timeout_ms, LH_MAX_REPLY, &rpc);
    if (rc != FT_SUCCESS)
        return rc;
    fti_rpc_client_destroy(c->rpc);
    c->rpc = rpc;
    c->cur = i;
    return FT_SUCCESS;
}

int fti_lighthouse_client_create(const char *addr, const fti_auth_key_t *key,
                                 int connect_timeout_ms, fti_lighthouse_client_h *client_p)
{
    if (addr == NULL || client_p == NULL)
        return FT_ERR_ARG;
    struct fti_lighthouse_client *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return FT_ERR_NO_MEMORY;
    c->has_key = key != NULL;
    if (key)
        c->key = *key;
    c->connect_timeout_ms = connect_timeout_ms;
    int rc = split_addrs(c, addr);
    for (size_t i = 0; rc == FT_SUCCESS && i < c->n_addrs; i++) {
        fti_rpc_client_h probe = NULL; /* checks every address now */
        rc = fti_rpc_client_create(c->addrs[i], key, connect_timeout_ms, LH_MAX_REPLY, &probe);
        fti_rpc_client_destroy(probe);
    }
    if (rc == FT_SUCCESS)
        rc = use_addr(c, 0);
    if (rc != FT_SUCCESS) {
        free(c);
        return rc;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->incarnation = draw_incarnation(c);
    *client_p = c;
    return FT_SUCCESS;
}

/* After rc from the lighthouse at cur: where to ask next (under c->mu).
 * True when the call should be asked again there now; false to return
 * rc.  A standby's redirect goes to the leader it names (added to the
 * list when new); with several lighthouses a lost or silent one is left
 * for the next of the list.  round counts the lighthouses tried. */
static bool fail_over(struct fti_lighthouse_client *c, int rc, int round)
{
    char msg[FTI_ADDRESS_SIZE + 64];
    size_t next = (c->cur + 1) % c->n_addrs;
    if (rc == FT_ERR_NOT_LEADER) {
        fti_rpc_client_last_error(c->rpc, msg, sizeof(msg));
        size_t pl = strlen(FTI_LH_NOT_LEADER_MSG);
        const char *leader = strncmp(msg, FTI_LH_NOT_LEADER_MSG, pl) == 0 ? msg + pl : "unknown";
        if (strcmp(leader, "unknown") != 0 && strcmp(leader, c->addrs[c->cur]) != 0) {
            size_t k = 0;
            while (k < c->n_addrs && strcmp(c->addrs[k], leader) != 0)
                k++;
            if (k == c->n_addrs && k < FTI_LH_MAX_ADDRS &&
                fti_strlcpy(c->addrs[k], leader, sizeof(c->addrs[k])) == 0)
                c->n_addrs++;
            if (k < c->n_addrs)
                next = k;
        } else if (round >= (int)c->n_addrs) {
            fti_sleep_ms(LH_FAILOVER_PAUSE_MS); /* an election runs */
        }
    } else if (c->n_addrs < 2 ||
               (rc != FT_ERR_CONNECT && rc != FT_ERR_PROC_FAILED && rc != FT_ERR_TIMEOUT)) {
        return false;
    } else if (round >= (int)c->n_addrs) {
        fti_sleep_ms(LH_FAILOVER_PAUSE_MS);
    }
    if (next == c->cur)
        return rc == FT_ERR_NOT_LEADER;
    /* a standby that knows no leader yet is asked round after round: quiet */
    FTI_LOG(rc == FT_ERR_NOT_LEADER && round > 1 ? FTI_LOG_DEBUG : FTI_LOG_INFO,
            "lighthouse %s: %s; asking %s", c->addrs[c->cur], FT_Error_string(rc),
            c->addrs[next]);
    return use_addr(c, next) == FT_SUCCESS && rc != FT_ERR_TIMEOUT;
}

/* fti_rpc_call_msg at the leader: follows redirects and, with several
 * lighthouses, moves on from one that is gone, until timeout_ms. */
static int call_leader(struct fti_lighthouse_client *c, uint16_t method, const ProtobufCMessage *req,
                       const ProtobufCMessageDescriptor *rdesc, int timeout_ms,
                       ProtobufCMessage **resp_p)
{
    int64_t deadline = fti_now_ms() + timeout_ms;
    int rc;
    pthread_mutex_lock(&c->mu);
    for (int round = 1;; round++) {
        rc = fti_rpc_call_msg(c->rpc, method, req, rdesc, FTI_MAX(1, fti_ms_left(deadline)),
                              resp_p);
        if (rc == FT_SUCCESS || !fail_over(c, rc, round) || fti_ms_left(deadline) <= 0)
            break;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void fti_lighthouse_client_want_ids(fti_lighthouse_client_h c, bool want)
{
    c->want_ids = want;
}

uint64_t fti_lighthouse_client_incarnation(fti_lighthouse_client_h c)
{
    return c->incarnation;
}

void fti_lighthouse_client_last_error(fti_lighthouse_client_h c, char *buf, size_t len)
{
    pthread_mutex_lock(&c->mu);
    fti_rpc_client_last_error(c->rpc, buf, len);
    pthread_mutex_unlock(&c->mu);
}

void fti_lighthouse_client_address(fti_lighthouse_client_h c, char *buf, size_t len)
{
    pthread_mutex_lock(&c->mu);
    snprintf(buf, len, "%s", c->addrs[c->cur]);
    pthread_mutex_unlock(&c->mu);
}

void fti_lighthouse_client_destroy(fti_lighthouse_client_h c)
{
    if (c == NULL)
        return;
    fti_rpc_client_destroy(c->rpc);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int fti_lighthouse_quorum_resp(fti_lighthouse_client_h c, const Ftmpi__QuorumMember *me,
                               bool compact, bool init_sync, int timeout_ms,
                               Ftmpi__LighthouseQuorumResponse **resp_p)
{
    Ftmpi__LighthouseQuorumRequest req = FTMPI__LIGHTHOUSE_QUORUM_REQUEST__INIT;
    Ftmpi__LighthouseQuorumResponse *resp = NULL;
    Ftmpi__QuorumMember mine = *me; /* shallow: adds this process's fields */
    if (mine.incarnation == 0)
        mine.incarnation = c->incarnation;
    req.requester = &mine;
    req.compact = compact;
    req.init_sync = init_sync;
    req.max_quorum_id = fti_lighthouse_max_quorum_id();
    req.want_member_ids = c->want_ids;
    int rc = call_leader(c, FTMPI__METHOD__LIGHTHOUSE_QUORUM, &req.base,
                         &ftmpi__lighthouse_quorum_response__descriptor, timeout_ms,
                         (ProtobufCMessage **)&resp);
    if (rc != FT_SUCCESS)
        return rc;
    if (resp->quorum == NULL || fti_quorum_check(resp->quorum) != FT_SUCCESS) {
        char addr[FTI_ADDRESS_SIZE];
        fti_lighthouse_client_address(c, addr, sizeof(addr));
        FTI_WARN("lighthouse %s: quorum reply without a well-formed quorum", addr);
        ftmpi__lighthouse_quorum_response__free_unpacked(resp, NULL);
        return FT_ERR_BAD_MESSAGE;
    }
    note_quorum_id(resp->quorum->quorum_id);
    *resp_p = resp;
    return FT_SUCCESS;
}

int fti_lighthouse_quorum(fti_lighthouse_client_h c, const Ftmpi__QuorumMember *me,
                          int timeout_ms, Ftmpi__Quorum **quorum_p)
{
    Ftmpi__LighthouseQuorumResponse *resp = NULL;
    int rc = fti_lighthouse_quorum_resp(c, me, false, false, timeout_ms, &resp);
    if (rc != FT_SUCCESS)
        return rc;
    /* hand the quorum over without copying: detach it from the response */
    Ftmpi__Quorum *q = resp->quorum;
    resp->quorum = NULL;
    ftmpi__lighthouse_quorum_response__free_unpacked(resp, NULL);
    *quorum_p = q;
    return FT_SUCCESS;
}

/* Calls method with req and drops its (empty) reply, of type rdesc. */
static int call_no_reply(fti_lighthouse_client_h c, uint16_t method, const ProtobufCMessage *req,
                         const ProtobufCMessageDescriptor *rdesc, int timeout_ms)
{
    ProtobufCMessage *resp = NULL;
    int rc = call_leader(c, method, req, rdesc, timeout_ms, &resp);
    if (rc == FT_SUCCESS)
        protobuf_c_message_free_unpacked(resp, NULL);
    return rc;
}

int fti_lighthouse_heartbeat(fti_lighthouse_client_h c, const char *replica_id, int timeout_ms)
{
    return fti_lighthouse_heartbeat_report(c, replica_id, NULL, timeout_ms);
}

int fti_lighthouse_heartbeat_report(fti_lighthouse_client_h c, const char *replica_id,
                                    const fti_lighthouse_report_t *rep, int timeout_ms)
{
    Ftmpi__LighthouseHeartbeatRequest req = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
    req.replica_id = (char *)replica_id;
    req.max_quorum_id = fti_lighthouse_max_quorum_id();
    if (rep) {
        req.incarnation = rep->incarnation;
        req.restarts = rep->restarts;
        req.heals = rep->heals;
        req.heal_bytes = rep->heal_bytes;
        req.last_failure = (char *)rep->last_failure;
        if (rep->obs)
            fti_obs_batch_apply(rep->obs, &req);
    }
    return call_no_reply(c, FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT, &req.base,
                         &ftmpi__lighthouse_heartbeat_response__descriptor, timeout_ms);
}

int fti_lighthouse_finalize(fti_lighthouse_client_h c, const char *replica_id, int timeout_ms)
{
    Ftmpi__LighthouseFinalizeRequest req = FTMPI__LIGHTHOUSE_FINALIZE_REQUEST__INIT;
    req.replica_id = (char *)replica_id;
    return call_no_reply(c, FTMPI__METHOD__LIGHTHOUSE_FINALIZE, &req.base,
                         &ftmpi__lighthouse_finalize_response__descriptor, timeout_ms);
}
