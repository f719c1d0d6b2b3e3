/*
 * test_lighthouse_compact.c - compact quorum replies (LighthouseQuorumRequest
 * .compact) against an in-process lighthouse: with 10 and then 200 groups
 * asking at once (one blocking client each, one thread each; half ask for
 * compact replies, half for the member list):
 *   - a compact reply carries no members and one result per group rank of
 *     the requester, equal to fti_results_compute on the full quorum that
 *     a full-list member of the same quorum received;
 *   - the size of group g000's compact reply (3 group ranks) does not
 *     depend on the number of groups (a few bytes of larger varints at
 *     most, once the source lists of striped healing, which grow up to
 *     FTI_RESULTS_MAX_SRC entries, are left out), while the full reply
 *     grows with it.
 * Every wait has a deadline (the clients' timeouts, a 20 s alarm).
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
#include "control/results.h"

#define MAX_GROUPS 200
#define G0_RANKS 3
#define CALL_TIMEOUT_MS 10000

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);  \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

struct group {
    pthread_t th;
    const char *lh;
    int i;
    bool compact;
    int rc;
    size_t reply_bytes; /* packed size of the response */
    Ftmpi__LighthouseQuorumResponse *resp;
};

static void *group_main(void *arg)
{
    struct group *g = arg;
    char id[16], addr[32];
    fti_lighthouse_client_h c = NULL;
    snprintf(id, sizeof(id), "g%03d", g->i);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", 30000 + g->i);
    Ftmpi__QuorumMember me = FTMPI__QUORUM_MEMBER__INIT;
    me.replica_id = id;
    me.address = addr;
    me.store_address = addr;
    me.step = g->i % 3; /* behind groups heal */
    me.world_size = g->i == 0 ? G0_RANKS : 1;
    g->rc = fti_lighthouse_client_create(g->lh, NULL, CALL_TIMEOUT_MS, &c);
    if (g->rc == FT_SUCCESS)
        g->rc = fti_lighthouse_quorum_resp(c, &me, g->compact, true, CALL_TIMEOUT_MS, &g->resp);
    if (g->rc == FT_SUCCESS)
        g->reply_bytes = ftmpi__lighthouse_quorum_response__get_packed_size(g->resp);
    fti_lighthouse_client_destroy(c);
    return NULL;
}

static void *loop_main(void *arg)
{
    event_base_loop(arg, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* n groups ask at once; returns the sizes of g000's compact reply and of
 * g001's full reply after checking both. */
static void round_of(int n, size_t *compact_p, size_t *full_p)
{
    static struct group gs[MAX_GROUPS];
    struct event_base *base = event_base_new();
    fti_lighthouse_opts_t o;
    fti_lighthouse_h lh = NULL;
    pthread_t loop;
    CHECK(base != NULL);
    fti_lighthouse_opts_default(&o);
    snprintf(o.bind, sizeof(o.bind), "127.0.0.1:0");
    o.min_replicas = n;
    o.join_timeout_ms = 60000;
    o.heartbeat_timeout_ms = 60000;
    o.quorum_tick_ms = 50;
    CHECK(fti_lighthouse_create(base, &o, &lh) == FT_SUCCESS);
    CHECK(pthread_create(&loop, NULL, loop_main, base) == 0);

    memset(gs, 0, sizeof(gs));
    for (int i = 0; i < n; i++) {
        gs[i].lh = fti_lighthouse_address(lh);
        gs[i].i = i;
        gs[i].compact = i % 2 == 0; /* g000 compact, g001 full */
        CHECK(pthread_create(&gs[i].th, NULL, group_main, &gs[i]) == 0);
    }
    for (int i = 0; i < n; i++) {
        CHECK(pthread_join(gs[i].th, NULL) == 0);
        if (gs[i].rc != FT_SUCCESS)
            fprintf(stderr, "group %d: %s\n", i, FT_Error_string(gs[i].rc));
        CHECK(gs[i].rc == FT_SUCCESS);
    }

    /* the full list, from a member that asked for it */
    const Ftmpi__Quorum *full = gs[1].resp->quorum;
    CHECK((int)full->n_participants == n);
    CHECK(gs[1].resp->n_results == 0);
    for (int i = 0; i < n; i++) {
        const Ftmpi__LighthouseQuorumResponse *r = gs[i].resp;
        char id[16];
        snprintf(id, sizeof(id), "g%03d", i);
        CHECK(r->quorum->quorum_id == full->quorum_id);
        if (!gs[i].compact) {
            CHECK((int)r->quorum->n_participants == n);
            continue;
        }
        CHECK(r->quorum->n_participants == 0);
        CHECK(r->n_results == (i == 0 ? G0_RANKS : 1));
        CHECK(r->dropped == 0);
        for (size_t g = 0; g < r->n_results; g++) {
            fti_quorum_result_t want, got;
            CHECK(fti_results_compute(full, id, (int)g, true, &want) == FT_SUCCESS);
            CHECK(fti_results_from_msg(r->results[g], &got) == FT_SUCCESS);
            CHECK(got.quorum_id == want.quorum_id);
            CHECK(got.replica_rank == want.replica_rank);
            CHECK(got.replica_world_size == n);
            CHECK(got.max_step == want.max_step);
            CHECK(got.max_replica_rank == want.max_replica_rank);
            CHECK(got.max_world_size == want.max_world_size);
            CHECK(strcmp(got.store_address, want.store_address) == 0);
            CHECK(got.heal == want.heal);
            CHECK(got.recover_src_replica_rank == want.recover_src_replica_rank);
            CHECK(strcmp(got.recover_src_manager_address, want.recover_src_manager_address) == 0);
            CHECK(strcmp(got.recover_src_replica_id, want.recover_src_replica_id) == 0);
            CHECK(got.n_recover_dst == want.n_recover_dst);
            for (int k = 0; k < got.n_recover_dst; k++)
                CHECK(got.recover_dst_replica_ranks[k] == want.recover_dst_replica_ranks[k]);
            CHECK(got.commit_failures == want.commit_failures);
            CHECK(got.n_stripe_dst == want.n_stripe_dst);
            CHECK(got.n_recover_src == want.n_recover_src);
            for (int k = 0; k < got.n_recover_src; k++)
                CHECK(strcmp(got.recover_src_manager_addresses[k],
                             want.recover_src_manager_addresses[k]) == 0);
        }
    }
    CHECK(gs[0].resp->results[0]->heal); /* g000 (step 0) is behind */
    /* the source lists grow with the up-to-date groups up to their cap
     * (FTI_RESULTS_MAX_SRC): left out of the size compared */
    size_t lists = 0;
    for (size_t g = 0; g < gs[0].resp->n_results; g++) {
        const Ftmpi__ManagerQuorumResult *m = gs[0].resp->results[g];
        CHECK(m->n_recover_src_manager_addresses <= FTI_RESULTS_MAX_SRC);
        for (size_t k = 0; k < m->n_recover_src_manager_addresses; k++)
            lists += 4 + strlen(m->recover_src_manager_addresses[k]) +
                     strlen(m->recover_src_replica_ids[k]);
    }
    *compact_p = gs[0].reply_bytes - lists;
    *full_p = gs[1].reply_bytes;
    printf("%d groups: compact reply of g000 %zu bytes, full reply %zu bytes\n", n,
           gs[0].reply_bytes, gs[1].reply_bytes);

    for (int i = 0; i < n; i++)
        ftmpi__lighthouse_quorum_response__free_unpacked(gs[i].resp, NULL);
    event_base_loopbreak(base);
    CHECK(pthread_join(loop, NULL) == 0);
    fti_lighthouse_destroy(lh);
    event_base_free(base);
}

int main(void)
{
    size_t c10, f10, c200, f200;
    alarm(20);
    CHECK(evthread_use_pthreads() == 0);
    round_of(10, &c10, &f10);
    round_of(MAX_GROUPS, &c200, &f200);
    /* compact: the same up to a few varint bytes (3 results, 2-3 fields
     * each that hold a rank or the group count); full: ~20x */
    CHECK(c200 <= c10 + 16 && c10 <= c200 + 16);
    CHECK(f200 >= 10 * f10);
    printf("compact reply size independent of the number of groups: %zu -> %zu bytes\n", c10,
           c200);
    return 0;
}
