/*
 * test_lighthouse_bounds.c - what requests make an in-process lighthouse
 * keep stays bounded (lighthouse.h, "Bounds"), and quorum ids follow the
 * clients' incarnations and the highest ids they saw:
 *   - member data: FTI_QUORUM_MAX_DATA bytes pass (and come back in the
 *     quorum), one more is refused with FT_ERR_ARG at once;
 *   - finalized ids: max_finalized kept, the oldest forgotten first;
 *   - pending calls of one replica id: max_waiters_per_group; one more
 *     ends the oldest with FT_ERR_TIMEOUT, the others get the quorum;
 *   - a client created again under the same replica id (a restarted
 *     group) gets a new quorum id, the same client keeps it;
 *   - a second lighthouse whose initial id is far below (a restart with a
 *     clock behind) issues ids above the ones this process received.
 * Every wait has a deadline (the clients' timeouts, a 30 s alarm).
 */
#include <event2/event.h>
#include <event2/thread.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "lighthouse/lighthouse.h"
#include "control/lighthouse_client.h"
#include "lighthouse/quorum.h"
#include "base/util.h"

#define CALL_TIMEOUT_MS 10000
#define MAX_FINALIZED 4
#define MAX_WAITERS 2

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);  \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

struct server {
    struct event_base *base;
    fti_lighthouse_h lh;
    pthread_t loop;
};

static void *loop_main(void *arg)
{
    event_base_loop(arg, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

static void server_start(struct server *s, int min_replicas, int64_t initial_id)
{
    fti_lighthouse_opts_t o;
    fti_lighthouse_opts_default(&o);
    snprintf(o.bind, sizeof(o.bind), "127.0.0.1:0");
    o.min_replicas = min_replicas;
    o.join_timeout_ms = 60000;
    o.heartbeat_timeout_ms = 60000;
    o.quorum_tick_ms = 50;
    o.initial_quorum_id = initial_id;
    o.max_finalized = MAX_FINALIZED;
    o.max_waiters_per_group = MAX_WAITERS;
    s->base = event_base_new();
    CHECK(s->base != NULL);
    CHECK(fti_lighthouse_create(s->base, &o, &s->lh) == FT_SUCCESS);
    CHECK(pthread_create(&s->loop, NULL, loop_main, s->base) == 0);
}

static void server_stop(struct server *s)
{
    event_base_loopbreak(s->base);
    CHECK(pthread_join(s->loop, NULL) == 0);
    fti_lighthouse_destroy(s->lh);
    event_base_free(s->base);
}

/* One quorum call of replica id on its own client (or on *cp when given). */
struct call {
    pthread_t th;
    const char *lh, *id;
    size_t data_len;
    int rc;
    int64_t ms;         /* how long the call took */
    int64_t quorum_id;
    size_t got_data_len; /* data_len of id in the quorum */
};

static void *call_main(void *arg)
{
    struct call *k = arg;
    fti_lighthouse_client_h c = NULL;
    Ftmpi__QuorumMember me = FTMPI__QUORUM_MEMBER__INIT;
    Ftmpi__Quorum *q = NULL;
    uint8_t *data = calloc(k->data_len + 1, 1);
    CHECK(data != NULL);
    me.replica_id = (char *)k->id;
    me.address = "127.0.0.1:1";
    me.store_address = "127.0.0.1:2";
    me.world_size = 1;
    /* one incarnation per id: the calls of one id come from one process
     * (another incarnation's claim of a live id is refused, issue 23) */
    me.incarnation = 1000 + (uint64_t)(unsigned char)k->id[0];
    me.data.data = data;
    me.data.len = k->data_len;
    int64_t t0 = fti_now_ms();
    k->rc = fti_lighthouse_client_create(k->lh, NULL, CALL_TIMEOUT_MS, &c);
    if (k->rc == FT_SUCCESS)
        k->rc = fti_lighthouse_quorum(c, &me, CALL_TIMEOUT_MS, &q);
    k->ms = fti_now_ms() - t0;
    if (k->rc == FT_SUCCESS) {
        k->quorum_id = q->quorum_id;
        for (size_t i = 0; i < q->n_participants; i++)
            if (strcmp(q->participants[i]->replica_id, k->id) == 0)
                k->got_data_len = q->participants[i]->data.len;
        ftmpi__quorum__free_unpacked(q, NULL);
    }
    fti_lighthouse_client_destroy(c);
    free(data);
    return NULL;
}

static void call_start(struct call *k, const char *lh, const char *id, size_t data_len)
{
    memset(k, 0, sizeof(*k));
    k->lh = lh;
    k->id = id;
    k->data_len = data_len;
    CHECK(pthread_create(&k->th, NULL, call_main, k) == 0);
}

static void finalized_bounded(struct server *s)
{
    const char *addr = fti_lighthouse_address(s->lh);
    fti_lighthouse_client_h c = NULL;
    char id[16];
    CHECK(fti_lighthouse_client_create(addr, NULL, CALL_TIMEOUT_MS, &c) == FT_SUCCESS);
    for (int i = 0; i < 10; i++) {
        snprintf(id, sizeof(id), "f%d", i);
        CHECK(fti_lighthouse_finalize(c, id, CALL_TIMEOUT_MS) == FT_SUCCESS);
        CHECK(fti_lighthouse_n_finalized(s->lh) == (size_t)(i < MAX_FINALIZED ? i + 1 : MAX_FINALIZED));
    }
    fti_lighthouse_client_destroy(c);
    /* the oldest were forgotten, the newest kept */
    CHECK(fti_lighthouse_group_status(s->lh, "f0", NULL) == FTI_LH_GROUP_UNKNOWN);
    CHECK(fti_lighthouse_group_status(s->lh, "f5", NULL) == FTI_LH_GROUP_UNKNOWN);
    for (int i = 10 - MAX_FINALIZED; i < 10; i++) {
        snprintf(id, sizeof(id), "f%d", i);
        CHECK(fti_lighthouse_group_status(s->lh, id, NULL) == FTI_LH_GROUP_FINALIZED);
    }
    printf("finalized ids: %zu kept of 10 (cap %d), oldest forgotten\n",
           fti_lighthouse_n_finalized(s->lh), MAX_FINALIZED);
}

/* min_replicas 2: the calls of "w" wait until "x" asks. */
static void data_and_waiters_bounded(struct server *s)
{
    const char *addr = fti_lighthouse_address(s->lh);
    struct call big, w[MAX_WAITERS + 1], x;

    call_start(&big, addr, "big", FTI_QUORUM_MAX_DATA + 1);
    CHECK(pthread_join(big.th, NULL) == 0);
    CHECK(big.rc == FT_ERR_ARG);
    CHECK(big.ms < CALL_TIMEOUT_MS / 2);
    printf("data of %d bytes refused: %s\n", FTI_QUORUM_MAX_DATA + 1, FT_Error_string(big.rc));

    /* MAX_WAITERS + 1 calls of w, one after the other: the first ends */
    for (int i = 0; i <= MAX_WAITERS; i++) {
        call_start(&w[i], addr, "w", FTI_QUORUM_MAX_DATA);
        fti_sleep_ms(200); /* in this order at the lighthouse */
    }
    CHECK(pthread_join(w[0].th, NULL) == 0);
    CHECK(w[0].rc == FT_ERR_TIMEOUT);
    CHECK(w[0].ms < CALL_TIMEOUT_MS / 2);
    call_start(&x, addr, "x", 0);
    CHECK(pthread_join(x.th, NULL) == 0);
    CHECK(x.rc == FT_SUCCESS);
    for (int i = 1; i <= MAX_WAITERS; i++) {
        CHECK(pthread_join(w[i].th, NULL) == 0);
        CHECK(w[i].rc == FT_SUCCESS);
        CHECK(w[i].quorum_id == x.quorum_id);
        CHECK(w[i].got_data_len == FTI_QUORUM_MAX_DATA);
    }
    printf("%d calls of one group: the oldest superseded after %" PRId64 " ms, %d answered\n",
           MAX_WAITERS + 1, w[0].ms, MAX_WAITERS);
}

/* One quorum of "solo" on client c (NULL: a new client, a new incarnation). */
static int64_t solo(const char *addr, fti_lighthouse_client_h c)
{
    fti_lighthouse_client_h own = NULL;
    Ftmpi__QuorumMember me = FTMPI__QUORUM_MEMBER__INIT;
    Ftmpi__Quorum *q = NULL;
    me.replica_id = "solo";
    me.address = "127.0.0.1:1";
    me.store_address = "127.0.0.1:2";
    me.world_size = 1;
    if (c == NULL) {
        CHECK(fti_lighthouse_client_create(addr, NULL, CALL_TIMEOUT_MS, &own) == FT_SUCCESS);
        c = own;
    }
    int rc;
    /* a new incarnation right after the old one's close: until the
     * lighthouse's loop has seen the close, the old one holds "solo" and the
     * new one is refused (FT_ERR_EXISTS); it asks again, as a manager does
     * (bounded by alarm) */
    while ((rc = fti_lighthouse_quorum(c, &me, CALL_TIMEOUT_MS, &q)) == FT_ERR_EXISTS && own != NULL)
        fti_sleep_ms(10);
    CHECK(rc == FT_SUCCESS);
    int64_t id = q->quorum_id;
    ftmpi__quorum__free_unpacked(q, NULL);
    fti_lighthouse_client_destroy(own);
    return id;
}

static void ids_follow_incarnations_and_restarts(void)
{
    struct server a, b;
    fti_lighthouse_client_h c = NULL;
    server_start(&a, 1, 1000000);
    const char *addr = fti_lighthouse_address(a.lh);
    CHECK(fti_lighthouse_client_create(addr, NULL, CALL_TIMEOUT_MS, &c) == FT_SUCCESS);
    CHECK(fti_lighthouse_client_incarnation(c) != 0);
    int64_t q1 = solo(addr, c), q2 = solo(addr, c);
    CHECK(q1 == 1000001 && q2 == q1); /* the same incarnation keeps the id */
    /* the first "solo" dies (its connection closes) and is restarted: a new
     * incarnation, a new id (a live holder would refuse it, issue 23) */
    fti_lighthouse_client_destroy(c);
    int64_t q3 = solo(addr, NULL);
    CHECK(q3 == q2 + 1);
    CHECK(fti_lighthouse_max_quorum_id() == q3);
    server_stop(&a);

    /* a lighthouse whose clock is behind: its own first id would be 6 */
    server_start(&b, 1, 5);
    int64_t q4 = solo(fti_lighthouse_address(b.lh), NULL);
    CHECK(q4 > q3);
    server_stop(&b);
    printf("quorum ids %" PRId64 ", %" PRId64 ", %" PRId64 " (restarted group), %" PRId64
           " (lighthouse with a clock behind)\n",
           q1, q2, q3, q4);
}

int main(void)
{
    struct server s;
    alarm(30);
    CHECK(evthread_use_pthreads() == 0);
    server_start(&s, 2, 0);
    finalized_bounded(&s);
    data_and_waiters_bounded(&s);
    server_stop(&s);
    ids_follow_incarnations_and_restarts();
    return 0;
}
