/*
 * test_results.c - M2-M8: the per-rank results of a quorum
 * (src/control/results.c), after torchft's compute_quorum_results tests; a
 * rank's commit vote; failure counting over successive quorums.  M1, the
 * group's decision as the AND of the votes, runs on real ranks in
 * tests/integration/test_group.c (fti_group_decide).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ftmpi_errors.h"
#include "control/results.h"

#define MAX_MEMBERS 8

/* A quorum built from the generated protobuf-c structs. */
typedef struct test_quorum {
    Ftmpi__Quorum q;
    Ftmpi__QuorumMember members[MAX_MEMBERS];
    Ftmpi__QuorumMember *ptrs[MAX_MEMBERS];
    char ids[MAX_MEMBERS][32];
    char addrs[MAX_MEMBERS][32];
    char stores[MAX_MEMBERS][32];
} test_quorum_t;

/* Members named replica_<idx[i]> with steps[i], in the given order (the
 * lighthouse sorts them, but results must not rely on it). */
static void quorum_build(test_quorum_t *t, int64_t quorum_id, size_t n, const int *idx,
                         const int64_t *steps)
{
    memset(t, 0, sizeof(*t));
    ftmpi__quorum__init(&t->q);
    t->q.quorum_id = quorum_id;
    for (size_t i = 0; i < n; i++) {
        Ftmpi__QuorumMember *m = &t->members[i];
        ftmpi__quorum_member__init(m);
        snprintf(t->ids[i], sizeof(t->ids[i]), "replica_%d", idx[i]);
        snprintf(t->addrs[i], sizeof(t->addrs[i]), "addr_%d", idx[i]);
        snprintf(t->stores[i], sizeof(t->stores[i]), "store_addr_%d", idx[i]);
        m->replica_id = t->ids[i];
        m->address = t->addrs[i];
        m->store_address = t->stores[i];
        m->step = steps[i];
        m->world_size = 1;
        t->ptrs[i] = m;
    }
    t->q.n_participants = n;
    t->q.participants = t->ptrs;
}

static fti_quorum_result_t compute(const test_quorum_t *t, const char *id, int group_rank,
                                   bool init_sync)
{
    fti_quorum_result_t r;
    memset(&r, 0x5a, sizeof(r));
    assert_int_equal(fti_results_compute(&t->q, id, group_rank, init_sync, &r), FT_SUCCESS);
    return r;
}

static void assert_no_heal(const fti_quorum_result_t *r)
{
    assert_false(r->heal);
    assert_int_equal(r->recover_src_replica_rank, -1);
    assert_string_equal(r->recover_src_manager_address, "");
    assert_string_equal(r->recover_src_replica_id, "");
}

static void assert_heal_from(const fti_quorum_result_t *r, int src)
{
    char addr[32], id[32];
    snprintf(addr, sizeof(addr), "addr_%d", src);
    snprintf(id, sizeof(id), "replica_%d", src);
    assert_true(r->heal);
    assert_int_equal(r->recover_src_replica_rank, src);
    assert_string_equal(r->recover_src_manager_address, addr);
    assert_string_equal(r->recover_src_replica_id, id);
    assert_int_equal(r->n_recover_dst, 0);
}

static void assert_dst(const fti_quorum_result_t *r, int n, const int *dst)
{
    assert_int_equal(r->n_recover_dst, n);
    for (int i = 0; i < n; i++)
        assert_int_equal(r->recover_dst_replica_ranks[i], dst[i]);
}

/* A rank votes yes when nothing is latched and enough groups took part. */
static void test_commit_vote(void **state)
{
    (void)state;
    assert_true(fti_commit_vote(FT_SUCCESS, 2, 2));
    assert_true(fti_commit_vote(FT_SUCCESS, 3, 1));
    assert_false(fti_commit_vote(FT_SUCCESS, 1, 2));
    assert_false(fti_commit_vote(FT_ERR_TIMEOUT, 3, 1));
    assert_false(fti_commit_vote(FT_ERR_ABORTED, 3, 1));
    assert_false(fti_commit_vote(FT_SUCCESS, 0, 0));
}

/* M2: first step with init sync: every group but the primary (the first
 * member at step 0) heals from it, whatever the group rank. */
static void test_m2_first_step_init_sync(void **state)
{
    (void)state;
    test_quorum_t t;
    int idx[3] = {2, 0, 1};
    int64_t steps[3] = {0, 0, 0};
    quorum_build(&t, 7, 3, idx, steps);

    for (int gr = 0; gr < 3; gr++) {
        fti_quorum_result_t r0 = compute(&t, "replica_0", gr, true);
        fti_quorum_result_t r1 = compute(&t, "replica_1", gr, true);
        fti_quorum_result_t r2 = compute(&t, "replica_2", gr, true);
        assert_int_equal(r0.quorum_id, 7);
        assert_int_equal(r0.max_step, 0);
        assert_int_equal(r0.max_world_size, 3);
        assert_int_equal(r0.replica_world_size, 3);
        assert_no_heal(&r0);
        int dst[2] = {1, 2};
        assert_dst(&r0, 2, dst);
        assert_heal_from(&r1, 0);
        assert_heal_from(&r2, 0);
        /* the store still spreads over the members at max step */
        char store[32];
        snprintf(store, sizeof(store), "store_addr_%d", gr % 3);
        assert_string_equal(r0.store_address, store);
        assert_string_equal(r1.store_address, store);
        assert_string_equal(r2.store_address, store);
    }

    /* torchft's two-group case: replica_1 heals from replica_0 */
    int idx2[2] = {0, 1};
    quorum_build(&t, 1, 2, idx2, steps);
    fti_quorum_result_t a = compute(&t, "replica_0", 0, true);
    fti_quorum_result_t b = compute(&t, "replica_1", 0, true);
    int dst1[1] = {1};
    assert_no_heal(&a);
    assert_dst(&a, 1, dst1);
    assert_heal_from(&b, 0);
    assert_int_equal(b.replica_rank, 1);
}

/* M3: first step without init sync: nobody heals. */
static void test_m3_first_step_no_init_sync(void **state)
{
    (void)state;
    test_quorum_t t;
    int idx[3] = {0, 1, 2};
    int64_t steps[3] = {0, 0, 0};
    quorum_build(&t, 1, 3, idx, steps);
    for (int gr = 0; gr < 2; gr++) {
        for (int g = 0; g < 3; g++) {
            char id[32];
            snprintf(id, sizeof(id), "replica_%d", g);
            fti_quorum_result_t r = compute(&t, id, gr, false);
            assert_no_heal(&r);
            assert_int_equal(r.n_recover_dst, 0);
            assert_int_equal(r.replica_rank, g);
            assert_int_equal(r.max_replica_rank, g);
            assert_int_equal(r.max_world_size, 3);
        }
    }

    /* once a step was committed somewhere, a group behind heals even
     * without init sync */
    steps[0] = 1;
    quorum_build(&t, 1, 3, idx, steps);
    fti_quorum_result_t r = compute(&t, "replica_1", 0, false);
    assert_heal_from(&r, 0);
}

/* M4: 5 groups at steps [0,1,0,1,0] (torchft's recovery test): the
 * healing groups 0, 2, 4 take sources round-robin from 1, 3, offset by the
 * group rank. */
static void test_m4_five_groups(void **state)
{
    (void)state;
    test_quorum_t t;
    int idx[5] = {0, 1, 2, 3, 4};
    int64_t steps[5] = {0, 1, 0, 1, 0};
    quorum_build(&t, 3, 5, idx, steps);

    /* group rank 0: 0 <- 1, 2 <- 3, 4 <- 1 */
    fti_quorum_result_t r[5];
    for (int g = 0; g < 5; g++) {
        char id[32];
        snprintf(id, sizeof(id), "replica_%d", g);
        r[g] = compute(&t, id, 0, true);
        assert_int_equal(r[g].quorum_id, 3);
        assert_int_equal(r[g].replica_rank, g);
        assert_int_equal(r[g].replica_world_size, 5);
        assert_int_equal(r[g].max_step, 1);
        assert_int_equal(r[g].max_world_size, 2);
        assert_string_equal(r[g].store_address, "store_addr_1");
        assert_int_equal(r[g].commit_failures, 0);
    }
    assert_heal_from(&r[0], 1);
    assert_heal_from(&r[2], 3);
    assert_heal_from(&r[4], 1);
    int dst1[2] = {0, 4}, dst3[1] = {2};
    assert_no_heal(&r[1]);
    assert_dst(&r[1], 2, dst1);
    assert_no_heal(&r[3]);
    assert_dst(&r[3], 1, dst3);
    assert_int_equal(r[0].max_replica_rank, -1);
    assert_int_equal(r[1].max_replica_rank, 0);
    assert_int_equal(r[2].max_replica_rank, -1);
    assert_int_equal(r[3].max_replica_rank, 1);
    assert_int_equal(r[4].max_replica_rank, -1);

    /* group rank 1: offset by one: 0 <- 3, 2 <- 1, 4 <- 3 */
    for (int g = 0; g < 5; g++) {
        char id[32];
        snprintf(id, sizeof(id), "replica_%d", g);
        r[g] = compute(&t, id, 1, true);
        assert_string_equal(r[g].store_address, "store_addr_3");
        assert_int_equal(r[g].max_step, 1);
    }
    assert_heal_from(&r[0], 3);
    assert_heal_from(&r[2], 1);
    assert_heal_from(&r[4], 3);
    int dst1b[1] = {2}, dst3b[2] = {0, 4};
    assert_no_heal(&r[1]);
    assert_dst(&r[1], 1, dst1b);
    assert_no_heal(&r[3]);
    assert_dst(&r[3], 2, dst3b);
}

/* The SDC check: a minority at max step heals from the others and is no
 * source; with no member at max step outside the minority nobody heals. */
static void test_sdc_minority_heals(void **state)
{
    (void)state;
    test_quorum_t t;
    int idx[3] = {0, 1, 2};
    int64_t steps[3] = {20, 20, 20};
    quorum_build(&t, 7, 3, idx, steps);
    t.members[1].sdc_verdict = FTMPI__SDC_VERDICT__SDC_MINORITY;
    t.members[1].sdc_report = "step 20: group rank 0, buffer 'w' differs from replica_0's";
    fti_quorum_result_t r0 = compute(&t, "replica_1", 0, false);
    assert_heal_from(&r0, 0);
    assert_int_equal(r0.sdc_verdict, FTMPI__SDC_VERDICT__SDC_MINORITY);
    assert_string_equal(r0.sdc_report, t.members[1].sdc_report);
    assert_int_equal(r0.max_step, 20);
    fti_quorum_result_t r1 = compute(&t, "replica_1", 1, false);
    assert_heal_from(&r1, 2);
    for (int g = 0; g < 2; g++) {
        fti_quorum_result_t a = compute(&t, "replica_0", g, false);
        fti_quorum_result_t c = compute(&t, "replica_2", g, false);
        assert_no_heal(&a);
        assert_no_heal(&c);
        assert_int_equal(a.sdc_verdict, 0);
        assert_int_equal(a.n_recover_dst + c.n_recover_dst, 1);
    }
    /* a member behind still heals from a non-minority */
    t.members[0].step = 19;
    fti_quorum_result_t b = compute(&t, "replica_0", 0, false);
    assert_heal_from(&b, 2);
    /* every member at max step is a minority: nobody heals from nobody */
    t.members[2].sdc_verdict = FTMPI__SDC_VERDICT__SDC_MINORITY;
    fti_quorum_result_t n = compute(&t, "replica_1", 0, false);
    assert_no_heal(&n);
    /* through the wire form */
    int64_t dst[64];
    Ftmpi__ManagerQuorumResult msg;
    fti_quorum_result_t back;
    fti_results_to_msg(&r0, dst, &msg);
    assert_int_equal(fti_results_from_msg(&msg, &back), FT_SUCCESS);
    assert_int_equal(back.sdc_verdict, FTMPI__SDC_VERDICT__SDC_MINORITY);
    assert_string_equal(back.sdc_report, r0.sdc_report);
}

/* M5: group ranks spread one healer over every up-to-date source. */
static void test_m5_group_rank_spreads_sources(void **state)
{
    (void)state;
    test_quorum_t t;
    int idx[4] = {0, 1, 2, 3};
    int64_t steps[4] = {5, 5, 5, 2};
    quorum_build(&t, 1, 4, idx, steps);
    int used[3] = {0, 0, 0};
    for (int gr = 0; gr < 6; gr++) {
        fti_quorum_result_t r = compute(&t, "replica_3", gr, true);
        assert_heal_from(&r, gr % 3);
        used[gr % 3]++;
        /* the source's own view agrees */
        char id[32];
        snprintf(id, sizeof(id), "replica_%d", gr % 3);
        fti_quorum_result_t s = compute(&t, id, gr, true);
        int dst[1] = {3};
        assert_no_heal(&s);
        assert_dst(&s, 1, dst);
        /* the other up-to-date groups serve nobody at this group rank */
        snprintf(id, sizeof(id), "replica_%d", (gr + 1) % 3);
        s = compute(&t, id, gr, true);
        assert_int_equal(s.n_recover_dst, 0);
    }
    assert_int_equal(used[0], 2);
    assert_int_equal(used[1], 2);
    assert_int_equal(used[2], 2);
}

/* M6: commit_failures is the maximum over the participants. */
static void test_m6_commit_failures_max(void **state)
{
    (void)state;
    test_quorum_t t;
    int idx[3] = {0, 1, 2};
    int64_t steps[3] = {4, 4, 4};
    quorum_build(&t, 1, 3, idx, steps);
    t.members[0].commit_failures = 1;
    t.members[1].commit_failures = 3;
    t.members[2].commit_failures = 2;
    for (int g = 0; g < 3; g++) {
        char id[32];
        snprintf(id, sizeof(id), "replica_%d", g);
        fti_quorum_result_t r = compute(&t, id, 0, true);
        assert_int_equal(r.commit_failures, 3);
    }
    t.members[1].commit_failures = 0;
    fti_quorum_result_t r = compute(&t, "replica_0", 0, true);
    assert_int_equal(r.commit_failures, 2);
}

/* M7: a group outside the quorum gets FT_ERR_NOT_FOUND and its output is
 * untouched; bad arguments get FT_ERR_ARG. */
static void test_m7_not_in_quorum(void **state)
{
    (void)state;
    test_quorum_t t;
    int idx[2] = {0, 1};
    int64_t steps[2] = {1, 1};
    quorum_build(&t, 1, 2, idx, steps);

    fti_quorum_result_t r, before;
    memset(&r, 0xa5, sizeof(r));
    memcpy(&before, &r, sizeof(r));
    assert_int_equal(fti_results_compute(&t.q, "replica_9", 0, true, &r), FT_ERR_NOT_FOUND);
    assert_memory_equal(&r, &before, sizeof(r));
    assert_int_equal(fti_results_compute(&t.q, "replica_", 0, true, &r), FT_ERR_NOT_FOUND);
    assert_memory_equal(&r, &before, sizeof(r));

    assert_int_equal(fti_results_compute(&t.q, "replica_0", -1, true, &r), FT_ERR_ARG);
    assert_int_equal(fti_results_compute(NULL, "replica_0", 0, true, &r), FT_ERR_ARG);
    assert_int_equal(fti_results_compute(&t.q, NULL, 0, true, &r), FT_ERR_ARG);
    t.q.n_participants = 0;
    assert_int_equal(fti_results_compute(&t.q, "replica_0", 0, true, &r), FT_ERR_ARG);
    assert_memory_equal(&r, &before, sizeof(r));
}

/* M8: replica rank follows the sort by id; a group behind has
 * max_replica_rank -1 and max_world_size counts the members at max step. */
static void test_m8_ranks(void **state)
{
    (void)state;
    test_quorum_t t;
    int idx[4] = {3, 1, 0, 2}; /* given out of order */
    int64_t steps[4] = {9, 9, 7, 9};
    quorum_build(&t, 11, 4, idx, steps);

    fti_quorum_result_t r0 = compute(&t, "replica_0", 0, false);
    assert_int_equal(r0.replica_rank, 0);
    assert_int_equal(r0.replica_world_size, 4);
    assert_int_equal(r0.max_step, 9);
    assert_int_equal(r0.max_replica_rank, -1);
    assert_int_equal(r0.max_world_size, 3);
    assert_heal_from(&r0, 1);

    for (int g = 1; g < 4; g++) {
        char id[32];
        snprintf(id, sizeof(id), "replica_%d", g);
        fti_quorum_result_t r = compute(&t, id, 0, false);
        assert_int_equal(r.replica_rank, g);
        assert_int_equal(r.max_replica_rank, g - 1);
        assert_int_equal(r.max_world_size, 3);
        assert_no_heal(&r);
        /* members at max step are 1, 2, 3: group rank 0 -> store of 1 */
        assert_string_equal(r.store_address, "store_addr_1");
    }
    fti_quorum_result_t r = compute(&t, "replica_0", 2, false);
    assert_string_equal(r.store_address, "store_addr_3");
    assert_heal_from(&r, 3);
}

/* Spare groups (fixed_with_spares): the first `cap` members in replica-rank
 * order participate, the others are spares; a lost participant's place goes
 * to the first spare; no cap, or a cap above the size, means everyone. */
static void test_spares(void **state)
{
    (void)state;
    test_quorum_t t;
    int idx[4] = {3, 1, 0, 2};
    int64_t steps[4] = {5, 5, 5, 5};
    quorum_build(&t, 9, 4, idx, steps);

    for (int k = 0; k < 4; k++) {
        char id[32];
        snprintf(id, sizeof(id), "replica_%d", k);
        fti_quorum_result_t r = compute(&t, id, 0, true);
        /* without a cap every member participates */
        assert_int_equal(r.participants, 4);
        assert_false(r.spare);
        fti_results_apply_spares(&r, 0);
        assert_int_equal(r.participants, 4);
        assert_false(r.spare);
        fti_results_apply_spares(&r, 4);
        assert_int_equal(r.participants, 4);
        assert_false(r.spare);
        fti_results_apply_spares(&r, 10);
        assert_int_equal(r.participants, 4);
        assert_false(r.spare);
        fti_results_apply_spares(&r, 2);
        assert_int_equal(r.participants, 2);
        assert_int_equal(r.replica_rank, k);
        assert_int_equal(r.spare, k >= 2);
        fti_results_apply_spares(&r, 1);
        assert_int_equal(r.participants, 1);
        assert_int_equal(r.spare, k >= 1);
    }

    /* replica_1, a participant, is lost: replica_2 takes its place */
    int idx3[3] = {3, 0, 2};
    quorum_build(&t, 10, 3, idx3, steps);
    fti_quorum_result_t r = compute(&t, "replica_2", 0, true);
    fti_results_apply_spares(&r, 2);
    assert_int_equal(r.participants, 2);
    assert_int_equal(r.replica_rank, 1);
    assert_false(r.spare);
    r = compute(&t, "replica_3", 1, true);
    fti_results_apply_spares(&r, 2);
    assert_true(r.spare);
    r = compute(&t, "replica_0", 0, true);
    fti_results_apply_spares(&r, 2);
    assert_false(r.spare);

    /* fewer members than the cap: all participate, and the step cannot
     * commit with min replicas = cap */
    int idx1[1] = {3};
    quorum_build(&t, 11, 1, idx1, steps);
    r = compute(&t, "replica_3", 0, true);
    fti_results_apply_spares(&r, 2);
    assert_int_equal(r.participants, 1);
    assert_false(r.spare);
    assert_false(fti_commit_vote(FT_SUCCESS, r.participants, 2));
}

/* Mode B: members' world ranks from QuorumMember.data, in replica-rank
 * order, plus the group rank; bad data is refused and writes nothing. */
static void test_world_ranks(void **state)
{
    (void)state;
    test_quorum_t t;
    int idx[3] = {2, 0, 1};
    int64_t steps[3] = {0, 0, 0};
    char data[3][16];
    int firsts[3] = {4, 0, 2}; /* replica_2 starts at world rank 4, ... */
    quorum_build(&t, 1, 3, idx, steps);
    for (int i = 0; i < 3; i++) {
        size_t len = fti_results_world_rank_data(firsts[i], data[i], sizeof(data[i]));
        assert_int_equal(len, 1);
        t.members[i].data.data = (uint8_t *)data[i];
        t.members[i].data.len = len;
    }
    int ranks[3] = {-1, -1, -1};
    assert_int_equal(fti_results_world_ranks(&t.q, 0, ranks), FT_SUCCESS);
    assert_int_equal(ranks[0], 0); /* replica_0 */
    assert_int_equal(ranks[1], 2); /* replica_1 */
    assert_int_equal(ranks[2], 4); /* replica_2 */
    assert_int_equal(fti_results_world_ranks(&t.q, 1, ranks), FT_SUCCESS);
    assert_int_equal(ranks[0], 1);
    assert_int_equal(ranks[1], 3);
    assert_int_equal(ranks[2], 5);

    char big[16];
    assert_int_equal(fti_results_world_rank_data(123456789, big, sizeof(big)), 9);
    assert_string_equal(big, "123456789");

    int keep[3] = {7, 7, 7};
    const char *bad[] = {"", "-1", "1x", "2147483648", "12345678901", " 3"};
    for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
        t.members[1].data.data = (uint8_t *)bad[b];
        t.members[1].data.len = strlen(bad[b]);
        assert_int_equal(fti_results_world_ranks(&t.q, 0, keep), FT_ERR_BAD_MESSAGE);
        assert_int_equal(keep[0], 7);
    }
    /* INT32_MAX itself is a rank, but not plus group rank 1 */
    t.members[1].data.data = (uint8_t *)"2147483647";
    t.members[1].data.len = 10;
    assert_int_equal(fti_results_world_ranks(&t.q, 0, keep), FT_SUCCESS);
    assert_int_equal(fti_results_world_ranks(&t.q, 1, keep), FT_ERR_BAD_MESSAGE);
    /* two groups claiming the same ranks */
    t.members[1].data.data = (uint8_t *)data[0];
    t.members[1].data.len = 1;
    assert_int_equal(fti_results_world_ranks(&t.q, 0, keep), FT_ERR_BAD_MESSAGE);
    /* no data at all */
    t.members[1].data.data = NULL;
    t.members[1].data.len = 0;
    assert_int_equal(fti_results_world_ranks(&t.q, 0, keep), FT_ERR_BAD_MESSAGE);
    assert_int_equal(fti_results_world_ranks(NULL, 0, keep), FT_ERR_ARG);
    assert_int_equal(fti_results_world_ranks(&t.q, -1, keep), FT_ERR_ARG);
}

/* ---- the index variant equals fti_results_compute ------------------------ */

#define RAND_MAX_MEMBERS 150

static void assert_same_result(const fti_quorum_result_t *a, const fti_quorum_result_t *b)
{
    assert_int_equal(a->quorum_id, b->quorum_id);
    assert_int_equal(a->replica_rank, b->replica_rank);
    assert_int_equal(a->replica_world_size, b->replica_world_size);
    assert_int_equal(a->max_step, b->max_step);
    assert_int_equal(a->max_replica_rank, b->max_replica_rank);
    assert_int_equal(a->max_world_size, b->max_world_size);
    assert_string_equal(a->store_address, b->store_address);
    assert_int_equal(a->heal, b->heal);
    assert_int_equal(a->recover_src_replica_rank, b->recover_src_replica_rank);
    assert_string_equal(a->recover_src_manager_address, b->recover_src_manager_address);
    assert_string_equal(a->recover_src_replica_id, b->recover_src_replica_id);
    assert_int_equal(a->n_recover_dst, b->n_recover_dst);
    for (int i = 0; i < a->n_recover_dst; i++)
        assert_int_equal(a->recover_dst_replica_ranks[i], b->recover_dst_replica_ranks[i]);
    assert_int_equal(a->n_recover_src, b->n_recover_src);
    for (int i = 0; i < a->n_recover_src; i++) {
        assert_string_equal(a->recover_src_manager_addresses[i], b->recover_src_manager_addresses[i]);
        assert_string_equal(a->recover_src_replica_ids[i], b->recover_src_replica_ids[i]);
    }
    assert_int_equal(a->n_stripe_dst, b->n_stripe_dst);
    assert_int_equal(a->commit_failures, b->commit_failures);
    assert_int_equal(a->participants, b->participants);
    assert_int_equal(a->spare, b->spare);
    assert_int_equal(a->sdc_verdict, b->sdc_verdict);
    assert_string_equal(a->sdc_report, b->sdc_report);
}

/* Striped healing over the n members of q for group rank g: a healer's
 * sources are distinct up-to-date members, its primary first, min(up,
 * FTI_RESULTS_MAX_SRC) of them; an up-to-date member's n_stripe_dst is the
 * number of healers that list it, and at least its destinations. */
static void check_stripes(const Ftmpi__Quorum *q, char ids[][16], int n, int g, bool sync)
{
    static fti_quorum_result_t r[RAND_MAX_MEMBERS];
    int n_up = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(fti_results_compute(q, ids[i], g, sync, &r[i]), FT_SUCCESS);
        n_up += !r[i].heal;
    }
    for (int i = 0; i < n; i++) {
        if (r[i].heal) {
            assert_int_equal(r[i].n_recover_src, n_up < FTI_RESULTS_MAX_SRC ? n_up
                                                                            : FTI_RESULTS_MAX_SRC);
            assert_string_equal(r[i].recover_src_manager_addresses[0],
                                r[i].recover_src_manager_address);
            for (int j = 0; j < r[i].n_recover_src; j++)
                for (int l = 0; l < j; l++)
                    assert_string_not_equal(r[i].recover_src_manager_addresses[j],
                                            r[i].recover_src_manager_addresses[l]);
            continue;
        }
        assert_int_equal(r[i].n_recover_src, 0);
        const char *me = q->participants[i]->address;
        int count = 0;
        for (int h = 0; h < n; h++)
            for (int j = 0; r[h].heal && j < r[h].n_recover_src; j++)
                count += strcmp(r[h].recover_src_manager_addresses[j], me) == 0;
        assert_int_equal(r[i].n_stripe_dst, count);
        assert_true(r[i].n_stripe_dst >= r[i].n_recover_dst);
    }
}

static void test_index_equals_compute(void **state)
{
    (void)state;
    static Ftmpi__QuorumMember mem[RAND_MAX_MEMBERS];
    static Ftmpi__QuorumMember *ptr[RAND_MAX_MEMBERS];
    static char ids[RAND_MAX_MEMBERS][16], addrs[RAND_MAX_MEMBERS][16],
        stores[RAND_MAX_MEMBERS][16];
    unsigned seed = 12345;
    int checked = 0, with_dst_cap = 0, healing = 0;
    for (int round = 0; round < 300; round++) {
        srand(seed + (unsigned)round);
        int n = 1 + rand() % (round % 10 == 0 ? RAND_MAX_MEMBERS : 12);
        int64_t max = rand() % 3; /* often 0: the init_sync rule */
        Ftmpi__Quorum q = FTMPI__QUORUM__INIT;
        q.quorum_id = round;
        /* ids unique, given in random order */
        int perm[RAND_MAX_MEMBERS];
        for (int i = 0; i < n; i++)
            perm[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = rand() % (i + 1), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (int i = 0; i < n; i++) {
            Ftmpi__QuorumMember *m = &mem[i];
            ftmpi__quorum_member__init(m);
            snprintf(ids[i], sizeof(ids[i]), "g%d", perm[i]);
            snprintf(addrs[i], sizeof(addrs[i]), "a%d", perm[i]);
            snprintf(stores[i], sizeof(stores[i]), "s%d", perm[i]);
            m->replica_id = ids[i];
            m->address = addrs[i];
            m->store_address = stores[i];
            /* a few at the max step, or most (a big round heals many) */
            m->step = rand() % 4 == 0 ? max : rand() % (int)(max + 1);
            m->commit_failures = rand() % 5;
            m->world_size = 1;
            /* the SDC check: some members found in a minority */
            m->sdc_verdict = rand() % 4 == 0 ? FTMPI__SDC_VERDICT__SDC_MINORITY : 0;
            m->sdc_report = m->sdc_verdict ? "step 1: group rank 0, buffer 'w' differs" : "";
            ptr[i] = m;
        }
        q.n_participants = (size_t)n;
        q.participants = ptr;

        fti_results_index_h idx = NULL;
        assert_int_equal(fti_results_index_create(&q, &idx), FT_SUCCESS);
        for (int i = 0; i < n; i++) {
            int rank = fti_results_index_find(idx, ids[i]);
            assert_true(rank >= 0 && rank < n);
            for (int g = 0; g < 5; g++) {
                for (int sync = 0; sync < 2; sync++) {
                    fti_quorum_result_t a, b;
                    assert_int_equal(
                        fti_results_compute(&q, ids[i], g * 7 + round % 3, sync, &a),
                        FT_SUCCESS);
                    assert_int_equal(
                        fti_results_compute_at(idx, rank, g * 7 + round % 3, sync, &b),
                        FT_SUCCESS);
                    assert_same_result(&a, &b);
                    /* through the wire form and back */
                    int64_t dst[64];
                    Ftmpi__ManagerQuorumResult msg;
                    fti_quorum_result_t c;
                    char *srcs[2 * FTI_RESULTS_MAX_SRC];
                    fti_results_to_msg(&b, dst, &msg);
                    fti_results_to_msg_srcs(&b, srcs, &msg);
                    size_t len = ftmpi__manager_quorum_result__get_packed_size(&msg);
                    uint8_t buf[4096];
                    assert_true(len <= sizeof(buf));
                    ftmpi__manager_quorum_result__pack(&msg, buf);
                    Ftmpi__ManagerQuorumResult *u =
                        ftmpi__manager_quorum_result__unpack(NULL, len, buf);
                    assert_non_null(u);
                    assert_int_equal(fti_results_from_msg(u, &c), FT_SUCCESS);
                    ftmpi__manager_quorum_result__free_unpacked(u, NULL);
                    assert_same_result(&a, &c);
                    checked++;
                    with_dst_cap += a.n_recover_dst == 64;
                    healing += a.heal;
                }
            }
        }
        for (int g = 0; g < 5; g++)
            for (int sync = 0; sync < 2; sync++)
                check_stripes(&q, ids, n, g * 7 + round % 3, sync);
        assert_int_equal(fti_results_index_find(idx, "nobody"), FT_ERR_NOT_FOUND);
        assert_int_equal(fti_results_compute_at(idx, n, 0, false, &(fti_quorum_result_t){0}),
                         FT_ERR_ARG);
        fti_results_index_destroy(idx);
    }
    /* the random quorums did exercise healing and the 64-destination cap */
    assert_true(checked > 1000);
    assert_true(healing > 100);
    assert_true(with_dst_cap > 0);
}

static void test_from_msg_rejects(void **state)
{
    (void)state;
    Ftmpi__ManagerQuorumResult m = FTMPI__MANAGER_QUORUM_RESULT__INIT;
    fti_quorum_result_t r;
    m.replica_world_size = 2;
    m.replica_rank = 1;
    m.max_world_size = 1;
    m.max_replica_rank = -1;
    m.recover_src_replica_rank = -1;
    assert_int_equal(fti_results_from_msg(&m, &r), FT_SUCCESS);
    assert_int_equal(r.participants, 2);
    m.replica_rank = 2; /* out of range */
    assert_int_equal(fti_results_from_msg(&m, &r), FT_ERR_BAD_MESSAGE);
    m.replica_rank = 1;
    m.heal = true; /* heal without a source */
    assert_int_equal(fti_results_from_msg(&m, &r), FT_ERR_BAD_MESSAGE);
}

/* Failure counting, full replies: a quorum that lost a member of the
 * previous one counts, one with a member back under a new manager address
 * (restarted) counts, a grown or identical one does not. */
static void test_members_lost(void **state)
{
    (void)state;
    test_quorum_t t;
    fti_members_t none = {NULL, 0}, a, b, c, d;
    int idx[3] = {0, 1, 2};
    int64_t steps[3] = {4, 4, 4};
    quorum_build(&t, 1, 2, idx, steps);
    assert_int_equal(fti_members_of(&t.q, &a), FT_SUCCESS);
    assert_int_equal(a.n, 2);
    assert_string_equal(a.m[1].replica_id, "replica_1");
    assert_string_equal(a.m[1].address, "addr_1");
    assert_false(fti_members_lost(&none, &a)); /* the first quorum */
    assert_false(fti_members_lost(&a, &a));

    quorum_build(&t, 2, 3, idx, steps); /* a group joins */
    assert_int_equal(fti_members_of(&t.q, &b), FT_SUCCESS);
    assert_false(fti_members_lost(&a, &b));
    assert_true(fti_members_lost(&b, &a)); /* ... and leaves again */

    t.addrs[1][0] = 'X'; /* replica_1 restarted: same id, new address */
    assert_int_equal(fti_members_of(&t.q, &c), FT_SUCCESS);
    assert_true(fti_members_lost(&b, &c));
    assert_false(fti_members_lost(&c, &c));

    quorum_build(&t, 3, 0, idx, steps); /* an empty quorum keeps nothing */
    assert_int_equal(fti_members_of(&t.q, &d), FT_SUCCESS);
    assert_int_equal(d.n, 0);
    assert_true(fti_members_lost(&c, &d));
    assert_false(fti_members_lost(&d, &c));

    fti_members_free(&a);
    fti_members_free(&b);
    fti_members_free(&c);
    fti_members_free(&d);
    fti_members_free(&d); /* idempotent */
    assert_null(d.m);
}

/* A member with an id or address longer than the key holds is cut the same
 * way on both sides: unchanged, it does not count. */
static void test_members_long_values(void **state)
{
    (void)state;
    test_quorum_t t;
    static char id[FTI_REPLICA_ID_SIZE + 40], addr[FTI_ADDRESS_SIZE + 40];
    memset(id, 'i', sizeof(id) - 1);
    memset(addr, 'a', sizeof(addr) - 1);
    int idx[1] = {0};
    int64_t steps[1] = {0};
    quorum_build(&t, 1, 1, idx, steps);
    t.members[0].replica_id = id;
    t.members[0].address = addr;
    fti_members_t a, b;
    assert_int_equal(fti_members_of(&t.q, &a), FT_SUCCESS);
    assert_int_equal(fti_members_of(&t.q, &b), FT_SUCCESS);
    assert_int_equal(strlen(a.m[0].replica_id), FTI_REPLICA_ID_SIZE - 1);
    assert_false(fti_members_lost(&a, &b));
    fti_members_free(&a);
    fti_members_free(&b);
}

/* Failure counting, compact replies: the lighthouse's count of dropped
 * members counts once per new quorum, never for the first one. */
static void test_members_dropped(void **state)
{
    (void)state;
    assert_true(fti_members_dropped(1, true, true));
    assert_true(fti_members_dropped(3, true, true));
    assert_false(fti_members_dropped(1, true, false)); /* first quorum seen */
    assert_false(fti_members_dropped(1, false, true)); /* the same quorum again */
    assert_false(fti_members_dropped(0, true, true));
    assert_false(fti_members_dropped(-1, true, true));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_vote),
        cmocka_unit_test(test_m2_first_step_init_sync),
        cmocka_unit_test(test_m3_first_step_no_init_sync),
        cmocka_unit_test(test_m4_five_groups),
        cmocka_unit_test(test_m5_group_rank_spreads_sources),
        cmocka_unit_test(test_m6_commit_failures_max),
        cmocka_unit_test(test_m7_not_in_quorum),
        cmocka_unit_test(test_m8_ranks),
        cmocka_unit_test(test_spares),
        cmocka_unit_test(test_world_ranks),
        cmocka_unit_test(test_index_equals_compute),
        cmocka_unit_test(test_from_msg_rejects),
        cmocka_unit_test(test_members_lost),
        cmocka_unit_test(test_members_long_values),
        cmocka_unit_test(test_members_dropped),
        cmocka_unit_test(test_sdc_minority_heals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
