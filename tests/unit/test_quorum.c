/* test_quorum.c - the lighthouse quorum rules (DESIGN.md sections 6 and 9,
 * scenarios L1-L8, incarnations, ids above those the groups saw, the data
 * cap), on the pure functions of lighthouse/quorum.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "lighthouse/quorum.h"

/* ---- helpers ---------------------------------------------------------- */

#define assert_reason(d, s)                                                              \
    do {                                                                                 \
        if (!strstr((d)->reason, (s)))                                                   \
            fail_msg("reason \"%s\" does not contain \"%s\"", (d)->reason, (s));         \
    } while (0)

static fti_quorum_state_h make_state(int min_replicas, int64_t join_ms, int64_t hb_ms)
{
    fti_quorum_opts_t o;
    fti_quorum_opts_default(&o);
    o.min_replicas = min_replicas;
    o.join_timeout_ms = join_ms;
    o.heartbeat_timeout_ms = hb_ms;
    fti_quorum_state_h st = NULL;
    assert_int_equal(fti_quorum_state_create(&o, &st), FT_SUCCESS);
    assert_non_null(st);
    return st;
}

static fti_qmember_t member(const char *id, int64_t step)
{
    fti_qmember_t m;
    memset(&m, 0, sizeof(m));
    snprintf(m.replica_id, sizeof(m.replica_id), "%s", id);
    snprintf(m.address, sizeof(m.address), "host-%s:1000", id);
    snprintf(m.store_address, sizeof(m.store_address), "host-%s:2000", id);
    m.step = step;
    m.world_size = 2;
    return m;
}

static void request(fti_quorum_state_h st, const char *id, int64_t now)
{
    fti_qmember_t m = member(id, 1);
    assert_int_equal(fti_quorum_request(st, &m, now), FT_SUCCESS);
}

static void request_shrink(fti_quorum_state_h st, const char *id, int64_t now)
{
    fti_qmember_t m = member(id, 1);
    m.shrink_only = true;
    assert_int_equal(fti_quorum_request(st, &m, now), FT_SUCCESS);
}

static void heartbeat(fti_quorum_state_h st, const char *id, int64_t now)
{
    assert_int_equal(fti_quorum_heartbeat(st, id, now), FT_SUCCESS);
}

/* compute and expect a wait whose reason contains s */
static void expect_wait(fti_quorum_state_h st, int64_t now, const char *s)
{
    fti_qdecision_t d;
    assert_int_equal(fti_quorum_compute(st, now, &d), FT_SUCCESS);
    if (d.issue)
        fail_msg("expected a wait, got an issue: %s", d.reason);
    assert_reason(&d, s);
    assert_int_equal(d.n_members, 0);
    assert_null(d.members);
    fti_qdecision_clear(&d);
}

/* members of q as "a,b,c" */
static void ids_of(const fti_quorum_t *q, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < q->n_members && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "," : "",
                                 q->members[i].replica_id);
}

/* compute, expect an issue whose reason contains s, commit it and check
 * the members ("a,b") and the id; returns the quorum (free it) */
static fti_quorum_t *expect_issue(fti_quorum_state_h st, int64_t now, const char *s,
                                  const char *ids, int64_t id)
{
    fti_qdecision_t d;
    assert_int_equal(fti_quorum_compute(st, now, &d), FT_SUCCESS);
    if (!d.issue)
        fail_msg("expected an issue, got a wait: %s", d.reason);
    assert_reason(&d, s);
    fti_quorum_t *q = NULL;
    assert_int_equal(fti_quorum_commit(st, &d, now, &q), FT_SUCCESS);
    assert_false(d.issue);
    assert_null(d.members);
    fti_qdecision_clear(&d);
    assert_non_null(q);
    if (ids) { /* NULL: not checked */
        char buf[512];
        ids_of(q, buf, sizeof(buf));
        assert_string_equal(buf, ids);
    }
    assert_int_equal(q->quorum_id, id);
    assert_int_equal(q->created_ms, now);
    assert_int_equal(fti_quorum_last_id(st), id);
    const fti_quorum_t *prev = fti_quorum_prev(st);
    assert_non_null(prev);
    assert_int_equal(prev->quorum_id, id);
    assert_int_equal(prev->n_members, q->n_members);
    return q;
}

static void issue_and_free(fti_quorum_state_h st, int64_t now, const char *s, const char *ids,
                           int64_t id)
{
    fti_quorum_free(expect_issue(st, now, s, ids, id));
}

/* ---- scenarios -------------------------------------------------------- */

/* min_replicas: wait until enough candidates asked. */
static void test_min_replicas(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(2, 60000, 5000);
    expect_wait(st, 0, "waiting: 0 of min 2 replicas (none)");
    request(st, "g0", 0);
    expect_wait(st, 10, "waiting: 1 of min 2 replicas (g0)");
    assert_true(fti_quorum_is_waiting(st, "g0"));
    request(st, "g1", 20);
    issue_and_free(st, 30, "issue: 2 members, all 2 healthy groups asked", "g0,g1", 1);
    /* the members' requests are answered */
    assert_false(fti_quorum_is_waiting(st, "g0"));
    assert_int_equal(fti_quorum_n_waiting(st), 0);
    fti_quorum_state_destroy(st);
}

/* L1: a healthy group that has not asked holds the quorum until the join
 * timeout, counted from the first request; it issues after the timeout. */
static void test_L1_join_timeout(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(1, 1000, 5000);
    request(st, "g0", 0);
    request(st, "g1", 100);
    heartbeat(st, "g2", 0);

    fti_qdecision_t d;
    assert_int_equal(fti_quorum_compute(st, 488, &d), FT_SUCCESS);
    assert_false(d.issue);
    assert_reason(&d, "waiting for stragglers g2 (join timeout in 512 ms)");
    assert_int_equal(d.join_wait_ms, 512);
    assert_int_equal(d.n_healthy, 3);
    assert_int_equal(d.n_requesters, 2);
    fti_qdecision_clear(&d);

    /* a repeated request keeps the first request time */
    request(st, "g0", 900);
    heartbeat(st, "g2", 900);
    expect_wait(st, 999, "join timeout in 1 ms");
    issue_and_free(st, 1000, "issue: 2 members, join timeout passed without g2", "g0,g1", 1);

    /* and when the straggler asks in time, it is included at once */
    fti_quorum_state_h st2 = make_state(1, 1000, 5000);
    request(st2, "g0", 0);
    request(st2, "g1", 0);
    heartbeat(st2, "g2", 0);
    expect_wait(st2, 100, "waiting for stragglers g2");
    request(st2, "g2", 200);
    issue_and_free(st2, 200, "issue: 3 members, all 3 healthy groups asked", "g0,g1,g2", 1);

    fti_quorum_state_destroy(st2);
    fti_quorum_state_destroy(st);
}

/* L2: a group whose heartbeat is older than the timeout is no longer
 * healthy: it neither counts as a candidate nor as a straggler; expire
 * eventually forgets it. */
static void test_L2_heartbeat_expiry(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(2, 60000, 5000);
    request(st, "g0", 0);
    request(st, "g1", 0);
    heartbeat(st, "g2", 0);
    assert_int_equal(fti_quorum_n_healthy(st, 4999), 3);
    assert_true(fti_quorum_is_healthy(st, "g1", 4999));
    /* g2 is a straggler while healthy */
    expect_wait(st, 4999, "waiting for stragglers g2");

    /* at 5000 nobody heartbeated since 0: all expired */
    assert_int_equal(fti_quorum_n_healthy(st, 5000), 0);
    expect_wait(st, 5000, "waiting: 0 of min 2 replicas (none)");

    /* g0 heartbeats: g1 (asked, but silent) is not a candidate */
    heartbeat(st, "g0", 6000);
    assert_false(fti_quorum_is_healthy(st, "g1", 6000));
    assert_true(fti_quorum_is_waiting(st, "g1")); /* still pending, just unhealthy */
    expect_wait(st, 6000, "waiting: 1 of min 2 replicas (g0)");

    /* g1 heartbeats again: it is a candidate again; g2, expired, does not
     * hold the quorum back although the join timeout is far away */
    heartbeat(st, "g1", 6100);
    issue_and_free(st, 6100, "issue: 2 members, all 2 healthy groups asked", "g0,g1", 1);

    /* views */
    fti_qgroup_view_t v;
    assert_int_equal(fti_quorum_group_find(st, "g2", 6100, &v), FT_SUCCESS);
    assert_false(v.healthy);
    assert_int_equal(v.heartbeat_age_ms, 6100);
    assert_null(v.member);
    assert_false(v.in_quorum);
    assert_int_equal(fti_quorum_group_find(st, "g0", 6100, &v), FT_SUCCESS);
    assert_true(v.healthy);
    assert_true(v.in_quorum);
    assert_non_null(v.member);
    assert_string_equal(v.member->address, "host-g0:1000");

    /* expire drops groups silent for 10 timeouts, and only those */
    assert_int_equal(fti_quorum_expire(st, 50000), 0);
    assert_int_equal(fti_quorum_expire(st, 50001), 1); /* g2, last seen at 0 */
    assert_int_equal(fti_quorum_n_groups(st), 2);
    assert_int_equal(fti_quorum_group_find(st, "g2", 50001, &v), FT_ERR_NOT_FOUND);
    assert_int_equal(fti_quorum_expire(st, 56101), 2);
    assert_int_equal(fti_quorum_n_groups(st), 0);
    /* the previous quorum survives expiry */
    assert_non_null(fti_quorum_prev(st));
    assert_int_equal(fti_quorum_prev(st)->n_members, 2);
    fti_quorum_state_destroy(st);
}

/* L3: once every previous member asked, the quorum is issued at once,
 * without waiting for stragglers; new joiners that asked come along. */
static void test_L3_fast_quorum(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(1, 60000, 5000);
    request(st, "g0", 0);
    request(st, "g1", 0);
    issue_and_free(st, 0, "all 2 healthy groups asked", "g0,g1", 1);

    /* without new joiners: g2 heartbeats but does not ask */
    heartbeat(st, "g2", 100);
    request(st, "g1", 100);
    expect_wait(st, 100, "split brain guard: 1 candidates of 3 healthy");
    request(st, "g0", 200);
    fti_qdecision_t d;
    assert_int_equal(fti_quorum_compute(st, 200, &d), FT_SUCCESS);
    assert_true(d.issue);
    assert_true(d.fast);
    assert_string_equal(d.reason, "issue: fast quorum, all 2 previous members asked");
    fti_qdecision_clear(&d);
    issue_and_free(st, 200, "fast quorum", "g0,g1", 1);

    /* with a new joiner: g2 asks first, then the previous members */
    request(st, "g2", 300);
    request(st, "g0", 300);
    expect_wait(st, 300, "waiting for stragglers g1");
    request(st, "g1", 310);
    issue_and_free(st, 310, "issue: fast quorum, all 2 previous members asked, 1 new (g2)",
                   "g0,g1,g2", 2);
    fti_quorum_state_destroy(st);
}

/* L4: shrink_only keeps only members of the previous quorum. */
static void test_L4_shrink_only(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(1, 60000, 5000);
    request(st, "g0", 0);
    request(st, "g1", 0);
    request(st, "g2", 0);
    issue_and_free(st, 0, "all 3 healthy groups asked", "g0,g1,g2", 1);

    /* g2 dies (no heartbeat after 0); g0 asks shrink_only; g3 is new */
    request_shrink(st, "g0", 6000);
    request(st, "g1", 6000);
    request(st, "g3", 6000);
    fti_qdecision_t d;
    assert_int_equal(fti_quorum_compute(st, 6000, &d), FT_SUCCESS);
    assert_true(d.issue);
    assert_true(d.shrink_only);
    assert_false(d.fast);
    assert_int_equal(d.n_requesters, 3);
    assert_int_equal(d.n_candidates, 2);
    assert_reason(&d, "issue: 2 members, all 3 healthy groups asked");
    assert_reason(&d, "shrink_only dropped g3");
    fti_qdecision_clear(&d);
    issue_and_free(st, 6000, "shrink_only dropped g3", "g0,g1", 2);

    /* shrink_only without a previous quorum has nothing to keep: ignored */
    fti_quorum_state_h st2 = make_state(1, 60000, 5000);
    request_shrink(st2, "a", 0);
    request(st2, "b", 0);
    assert_int_equal(fti_quorum_compute(st2, 0, &d), FT_SUCCESS);
    assert_true(d.issue);
    assert_false(d.shrink_only);
    fti_qdecision_clear(&d);
    issue_and_free(st2, 0, "all 2 healthy groups asked", "a,b", 1);

    /* shrink_only never issues below min_replicas */
    fti_quorum_state_h st3 = make_state(2, 0, 5000);
    request(st3, "a", 0);
    request(st3, "b", 0);
    issue_and_free(st3, 0, "issue", "a,b", 1);
    request_shrink(st3, "a", 6000);
    request(st3, "c", 6000);
    expect_wait(st3, 6000, "waiting: 1 of min 2 replicas (a); shrink_only dropped c");

    fti_quorum_state_destroy(st3);
    fti_quorum_state_destroy(st2);
    fti_quorum_state_destroy(st);
}

/* L5: the requesters must be more than half of the healthy groups. */
static void test_L5_split_brain(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(1, 60000, 5000);
    const char *ids[] = {"g0", "g1", "g2", "g3", "g4"};
    for (int i = 0; i < 5; i++)
        heartbeat(st, ids[i], 0);
    request(st, "g0", 10);
    request(st, "g1", 10);
    expect_wait(st, 10, "split brain guard: 2 candidates of 5 healthy");
    /* join timeout passed: still guarded */
    expect_wait(st, 4000, "split brain guard: 2 candidates of 5 healthy");
    request(st, "g2", 4000);
    expect_wait(st, 4000, "waiting for stragglers g3, g4");

    /* exactly half is not enough */
    fti_quorum_state_h st2 = make_state(1, 0, 5000);
    for (int i = 0; i < 4; i++)
        heartbeat(st2, ids[i], 0);
    request(st2, "g0", 0);
    request(st2, "g1", 0);
    expect_wait(st2, 0, "split brain guard: 2 candidates of 4 healthy");
    request(st2, "g2", 0);
    issue_and_free(st2, 0, "issue: 3 members, join timeout passed without g3", "g0,g1,g2", 1);

    fti_quorum_state_destroy(st2);
    fti_quorum_state_destroy(st);
}

/* L6: a new address, store address or step alone keeps the quorum id. */
static void test_L6_id_ignores_address_and_step(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(1, 60000, 5000);
    request(st, "g0", 0);
    request(st, "g1", 0);
    issue_and_free(st, 0, "issue", "g0,g1", 1);

    fti_qmember_t m = member("g0", 2);
    snprintf(m.address, sizeof(m.address), "elsewhere:1");
    snprintf(m.store_address, sizeof(m.store_address), "elsewhere:2");
    assert_int_equal(fti_quorum_request(st, &m, 100), FT_SUCCESS);
    m = member("g1", 1);
    assert_int_equal(fti_quorum_request(st, &m, 100), FT_SUCCESS);
    fti_quorum_t *q = expect_issue(st, 100, "fast quorum", "g0,g1", 1);
    /* the new details are in the quorum */
    assert_string_equal(q->members[0].address, "elsewhere:1");
    assert_string_equal(q->members[0].store_address, "elsewhere:2");
    assert_int_equal(q->members[0].step, 2);
    assert_int_equal(q->members[1].step, 1);
    fti_quorum_free(q);

    /* a change of members does change it */
    request(st, "g0", 200);
    request(st, "g1", 200);
    request(st, "g2", 200);
    issue_and_free(st, 200, "1 new (g2)", "g0,g1,g2", 2);
    fti_quorum_state_destroy(st);
}

/* L7: a group that asks while the others shrink is left out of the shrink
 * quorum but stays pending, and gets the next quorum. */
static void test_L7_joiner_during_shrink(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(1, 60000, 5000);
    request(st, "g0", 0);
    request(st, "g1", 0);
    issue_and_free(st, 0, "issue", "g0,g1", 1);

    request_shrink(st, "g0", 100);
    request(st, "g9", 100);
    request_shrink(st, "g1", 150);
    issue_and_free(st, 150, "fast quorum, all 2 previous members asked; shrink_only dropped g9",
                   "g0,g1", 1);
    /* g9 is still waiting, from the commit on */
    fti_qgroup_view_t v;
    assert_int_equal(fti_quorum_group_find(st, "g9", 150, &v), FT_SUCCESS);
    assert_true(v.waiting);
    assert_false(v.in_quorum);
    assert_int_equal(v.waiting_since_ms, 150);
    assert_int_equal(fti_quorum_n_waiting(st), 1);

    /* while the members keep asking shrink_only, g9 stays out */
    request_shrink(st, "g0", 200);
    request(st, "g1", 200);
    issue_and_free(st, 200, "shrink_only dropped g9", "g0,g1", 1);
    assert_true(fti_quorum_is_waiting(st, "g9"));

    /* the next normal round takes it in, without g9 asking again */
    heartbeat(st, "g9", 300);
    request(st, "g0", 300);
    request(st, "g1", 300);
    issue_and_free(st, 300, "fast quorum, all 2 previous members asked, 1 new (g9)",
                   "g0,g1,g9", 2);
    assert_false(fti_quorum_is_waiting(st, "g9"));
    fti_quorum_state_destroy(st);
}

/* L8: any member reporting commit failures bumps the id, even with the
 * same members. */
static void test_L8_commit_failures(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(1, 60000, 5000);
    request(st, "g0", 0);
    request(st, "g1", 0);
    issue_and_free(st, 0, "issue", "g0,g1", 1);

    fti_qmember_t m = member("g1", 1);
    m.commit_failures = 1;
    request(st, "g0", 100);
    assert_int_equal(fti_quorum_request(st, &m, 100), FT_SUCCESS);
    fti_quorum_t *q = expect_issue(st, 100, "fast quorum", "g0,g1", 2);
    assert_int_equal(q->members[1].commit_failures, 1);
    fti_quorum_free(q);

    /* no failures any more: the id stays */
    request(st, "g0", 200);
    request(st, "g1", 200);
    issue_and_free(st, 200, "fast quorum", "g0,g1", 2);
    fti_quorum_state_destroy(st);
}

/* A group restarted under the same replica id (a new manager process: a
 * new incarnation) gets a new quorum id, with or without other changes;
 * the same incarnation with a new address and step keeps it (L6). */
static void test_incarnation_changes_id(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(1, 60000, 5000);
    fti_qmember_t a = member("g0", 0), b = member("g1", 0);
    a.incarnation = 11;
    b.incarnation = 21;
    assert_int_equal(fti_quorum_request(st, &a, 0), FT_SUCCESS);
    assert_int_equal(fti_quorum_request(st, &b, 0), FT_SUCCESS);
    issue_and_free(st, 0, "issue", "g0,g1", 1);

    /* same incarnations, new address and step: the id stays (L6) */
    a.step = 1;
    snprintf(a.address, sizeof(a.address), "moved:1");
    assert_int_equal(fti_quorum_request(st, &a, 100), FT_SUCCESS);
    assert_int_equal(fti_quorum_request(st, &b, 100), FT_SUCCESS);
    issue_and_free(st, 100, "fast quorum", "g0,g1", 1);

    /* g1 restarted at once: same id, same address, step 0, new incarnation */
    b.incarnation = 22;
    assert_int_equal(fti_quorum_request(st, &a, 200), FT_SUCCESS);
    assert_int_equal(fti_quorum_request(st, &b, 200), FT_SUCCESS);
    fti_quorum_t *q = expect_issue(st, 200, "fast quorum", "g0,g1", 2);
    assert_int_equal(q->members[1].incarnation, 22);
    fti_quorum_free(q);

    /* and it stays while nothing changes */
    assert_int_equal(fti_quorum_request(st, &a, 300), FT_SUCCESS);
    assert_int_equal(fti_quorum_request(st, &b, 300), FT_SUCCESS);
    issue_and_free(st, 300, "fast quorum", "g0,g1", 2);

    /* 0 (an older client) is compared like any other value */
    a.incarnation = 0;
    assert_int_equal(fti_quorum_request(st, &a, 400), FT_SUCCESS);
    assert_int_equal(fti_quorum_request(st, &b, 400), FT_SUCCESS);
    issue_and_free(st, 400, "fast quorum", "g0,g1", 3);
    assert_int_equal(fti_quorum_request(st, &a, 500), FT_SUCCESS);
    assert_int_equal(fti_quorum_request(st, &b, 500), FT_SUCCESS);
    issue_and_free(st, 500, "fast quorum", "g0,g1", 3);
    fti_quorum_state_destroy(st);
}

/* A lighthouse restarted with a clock behind (initial id below what the
 * groups saw) issues ids above the highest id a group reported; ids
 * reported below the last issued one change nothing; absurd ones are
 * ignored. */
static void test_ids_above_seen(void **state)
{
    (void)state;
    fti_quorum_opts_t o;
    fti_quorum_opts_default(&o);
    o.initial_quorum_id = 5; /* the restarted lighthouse's clock is behind */
    fti_quorum_state_h st = NULL;
    assert_int_equal(fti_quorum_state_create(&o, &st), FT_SUCCESS);

    fti_quorum_note_seen(st, 1000); /* a survivor's heartbeat */
    request(st, "g0", 0);
    issue_and_free(st, 0, "issue", "g0", 1001);
    /* the same member again: the id stays */
    request(st, "g0", 100);
    issue_and_free(st, 100, "fast quorum", "g0", 1001);

    /* a survivor that saw a higher id (from another lighthouse) asks:
     * even with the same members, the id moves above it */
    fti_quorum_note_seen(st, 2000);
    request(st, "g0", 200);
    issue_and_free(st, 200, "fast quorum", "g0", 2001);

    /* lower or equal reports change nothing; neither do absurd ones */
    fti_quorum_note_seen(st, 2001);
    fti_quorum_note_seen(st, 7);
    fti_quorum_note_seen(st, -3);
    fti_quorum_note_seen(st, FTI_QUORUM_ID_MAX + 1);
    fti_quorum_note_seen(NULL, 9);
    request(st, "g0", 300);
    issue_and_free(st, 300, "fast quorum", "g0", 2001);

    /* a new member: last id + 1 as usual (strictly increasing) */
    request(st, "g0", 400);
    request(st, "g1", 400);
    issue_and_free(st, 400, "1 new (g1)", "g0,g1", 2002);
    fti_quorum_state_destroy(st);
}

/* Member data is capped at FTI_QUORUM_MAX_DATA bytes: a larger request is
 * refused and leaves the state unchanged. */
static void test_data_cap(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(1, 60000, 5000);
    uint8_t *blob = calloc(FTI_QUORUM_MAX_DATA + 1, 1);
    assert_non_null(blob);
    fti_qmember_t m = member("g0", 0);
    m.data = blob;
    m.data_len = FTI_QUORUM_MAX_DATA + 1;
    assert_int_equal(fti_quorum_request(st, &m, 0), FT_ERR_ARG);
    assert_int_equal(fti_quorum_n_groups(st), 0);
    m.data_len = FTI_QUORUM_MAX_DATA;
    assert_int_equal(fti_quorum_request(st, &m, 0), FT_SUCCESS);
    fti_quorum_t *q = expect_issue(st, 0, "issue", "g0", 1);
    assert_int_equal(q->members[0].data_len, FTI_QUORUM_MAX_DATA);
    fti_quorum_free(q);
    free(blob);
    fti_quorum_state_destroy(st);
}

/* Members and the table are sorted by replica_id in strcmp order. */
static void test_sort_order(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(1, 0, 5000);
    const char *in[] = {"g2", "g10", "a", "G", "g1"};
    for (int i = 0; i < 5; i++)
        request(st, in[i], 0);
    issue_and_free(st, 0, "all 5 healthy groups asked", "G,a,g1,g10,g2", 1);
    const char *want[] = {"G", "a", "g1", "g10", "g2"};
    assert_int_equal(fti_quorum_n_groups(st), 5);
    for (size_t i = 0; i < 5; i++) {
        fti_qgroup_view_t v;
        assert_int_equal(fti_quorum_group_at(st, i, 0, &v), FT_SUCCESS);
        assert_string_equal(v.replica_id, want[i]);
        assert_int_equal(fti_quorum_member_index(fti_quorum_prev(st), want[i]), (long)i);
    }
    fti_qgroup_view_t v;
    assert_int_equal(fti_quorum_group_at(st, 5, 0, &v), FT_ERR_ARG);
    assert_int_equal(fti_quorum_member_index(fti_quorum_prev(st), "zz"), -1);
    fti_quorum_state_destroy(st);
}

/* Bad input is refused and leaves the state alone; data is deep-copied;
 * withdraw; commit of a wait; the table cap; initial_quorum_id. */
static void test_inputs_and_ownership(void **state)
{
    (void)state;
    fti_quorum_opts_t o;
    fti_quorum_opts_default(&o);
    fti_quorum_state_h st = NULL;
    o.min_replicas = 0;
    assert_int_equal(fti_quorum_state_create(&o, &st), FT_ERR_ARG);
    fti_quorum_opts_default(&o);
    o.heartbeat_timeout_ms = 0;
    assert_int_equal(fti_quorum_state_create(&o, &st), FT_ERR_ARG);
    assert_null(st);

    fti_quorum_opts_default(&o);
    o.join_timeout_ms = 0;
    o.max_groups = 3;
    o.initial_quorum_id = 41;
    assert_int_equal(fti_quorum_state_create(&o, &st), FT_SUCCESS);
    assert_int_equal(fti_quorum_last_id(st), 41);

    char longid[FTI_QID_MAX + 1];
    memset(longid, 'x', FTI_QID_MAX);
    longid[FTI_QID_MAX] = '\0';
    assert_int_equal(fti_quorum_heartbeat(st, "", 0), FT_ERR_ARG);
    assert_int_equal(fti_quorum_heartbeat(st, longid, 0), FT_ERR_ARG);
    longid[FTI_QID_MAX - 1] = '\0'; /* 63 characters: fits */
    assert_int_equal(fti_quorum_heartbeat(st, longid, 0), FT_SUCCESS);
    fti_qmember_t m = member("a", 1);
    memset(m.address, 'y', sizeof(m.address)); /* no NUL */
    assert_int_equal(fti_quorum_request(st, &m, 0), FT_ERR_ARG);
    assert_false(fti_quorum_is_waiting(st, "a"));
    assert_int_equal(fti_quorum_n_groups(st), 1);

    /* data travels into the quorum as a copy */
    uint8_t blob[3] = {1, 2, 3};
    m = member("a", 1);
    m.data = blob;
    m.data_len = sizeof(blob);
    assert_int_equal(fti_quorum_request(st, &m, 0), FT_SUCCESS);
    blob[0] = 9;
    request(st, "b", 0);
    /* the table is full */
    assert_int_equal(fti_quorum_heartbeat(st, "c", 0), FT_ERR_NO_MEMORY);
    assert_int_equal(fti_quorum_n_groups(st), 3);

    /* withdraw */
    assert_int_equal(fti_quorum_withdraw(st, "b"), FT_SUCCESS);
    assert_int_equal(fti_quorum_withdraw(st, "b"), FT_ERR_NOT_FOUND);
    assert_int_equal(fti_quorum_withdraw(st, "nope"), FT_ERR_NOT_FOUND);
    assert_false(fti_quorum_is_waiting(st, "b"));
    assert_true(fti_quorum_is_healthy(st, "b", 0));

    /* commit of a wait is refused */
    fti_qdecision_t d;
    assert_int_equal(fti_quorum_compute(st, 0, &d), FT_SUCCESS);
    assert_false(d.issue);
    assert_reason(&d, "split brain guard: 1 candidates of 3 healthy");
    fti_quorum_t *q = NULL;
    assert_int_equal(fti_quorum_commit(st, &d, 0, &q), FT_ERR_ARG);
    assert_null(q);
    fti_qdecision_clear(&d);
    fti_qdecision_clear(&d); /* idempotent */

    request(st, "b", 1);
    q = expect_issue(st, 1, "issue: 2 members, join timeout passed without xxx", "a,b", 42);
    assert_int_equal(q->members[0].data_len, 3);
    assert_int_equal(q->members[0].data[0], 1);
    assert_int_equal(q->members[0].data[2], 3);
    assert_null(q->members[1].data);
    fti_quorum_free(q);
    fti_quorum_free(NULL);
    fti_quorum_state_destroy(st);
    fti_quorum_state_destroy(NULL);
}

/* A finalized group is removed (mode B, FT_Finalize): the others get
 * their next quorum at once instead of waiting for it as a straggler
 * (rule 7) until its heartbeats expire; a request brings it back. */
static void test_remove(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(1, 60000, 5000);
    request(st, "a", 0);
    request(st, "b", 0);
    request(st, "c", 0);
    issue_and_free(st, 0, "issue", "a,b,c", 1);
    /* b is healthy but does not ask: a and c wait for it (rule 7) */
    request(st, "a", 100);
    request(st, "c", 100);
    expect_wait(st, 100, "b");
    assert_int_equal(fti_quorum_remove(st, "b"), FT_SUCCESS);
    assert_int_equal(fti_quorum_remove(st, "b"), FT_ERR_NOT_FOUND);
    assert_int_equal(fti_quorum_remove(st, ""), FT_ERR_NOT_FOUND);
    assert_int_equal(fti_quorum_remove(NULL, "a"), FT_ERR_NOT_FOUND);
    assert_int_equal(fti_quorum_n_groups(st), 2);
    assert_false(fti_quorum_is_healthy(st, "b", 100));
    issue_and_free(st, 100, "issue", "a,c", 2);
    /* a pending request goes with the group */
    request(st, "c", 200);
    assert_int_equal(fti_quorum_remove(st, "c"), FT_SUCCESS);
    assert_false(fti_quorum_is_waiting(st, "c"));
    assert_int_equal(fti_quorum_n_waiting(st), 0);
    /* a restarted c asks again: back in the table */
    request(st, "c", 300);
    request(st, "a", 300);
    issue_and_free(st, 300, "issue", "a,c", 2);
    fti_quorum_state_destroy(st);
}

/* 10,000 groups: compute issues all of them, sorted; the next round is a
 * fast quorum; expire empties the table. */
static void test_10000_groups(void **state)
{
    (void)state;
    enum { N = 10000 };
    fti_quorum_state_h st = make_state(1, 60000, 5000);
    /* insert in a scrambled order: i * 7919 mod N is a permutation */
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof(id), "group-%05d", (i * 7919) % N);
        request(st, id, 0);
        /* the server evaluates on every request; keep a few of those */
        if (i % 1000 == 0) {
            fti_qdecision_t d;
            assert_int_equal(fti_quorum_compute(st, 0, &d), FT_SUCCESS);
            assert_true(d.issue);
            fti_qdecision_clear(&d);
        }
    }
    assert_int_equal(fti_quorum_n_groups(st), N);
    assert_int_equal(fti_quorum_n_healthy(st, 1), N);
    assert_int_equal(fti_quorum_n_waiting(st), N);

    fti_qdecision_t d;
    assert_int_equal(fti_quorum_compute(st, 1, &d), FT_SUCCESS);
    assert_true(d.issue);
    assert_int_equal(d.n_members, N);
    assert_reason(&d, "issue: 10000 members, all 10000 healthy groups asked");
    for (size_t i = 1; i < N; i++)
        assert_true(strcmp(d.members[i - 1].replica_id, d.members[i].replica_id) < 0);
    fti_quorum_t *q = NULL;
    assert_int_equal(fti_quorum_commit(st, &d, 1, &q), FT_SUCCESS);
    fti_qdecision_clear(&d);
    assert_int_equal(q->n_members, N);
    assert_string_equal(q->members[0].replica_id, "group-00000");
    assert_string_equal(q->members[N - 1].replica_id, "group-09999");
    assert_int_equal(fti_quorum_member_index(q, "group-04242"), 4242);
    fti_quorum_free(q);

    /* all but the last ask again: not fast yet, waits for the straggler */
    for (int i = 0; i < N - 1; i++) {
        char id[32];
        snprintf(id, sizeof(id), "group-%05d", i);
        request(st, id, 100);
    }
    expect_wait(st, 100, "waiting for stragglers group-09999");
    request(st, "group-09999", 100);
    q = expect_issue(st, 100, "issue: fast quorum, all 10000 previous members asked", NULL, 1);
    fti_quorum_free(q);
    assert_int_equal(fti_quorum_expire(st, 100 + 50001), N);
    assert_int_equal(fti_quorum_n_groups(st), 0);
    fti_quorum_state_destroy(st);
}

/* Step plausibility: the fake group at step 1,000,000 that joins a running
 * job is recorded at step 0 (it heals from the real groups, never the
 * other way round); a member may claim one step past its last quorum's
 * max (a heal to the max and a commit), not more; before any quorum (a
 * restarted lighthouse) every claim is believed. */
static void test_step_plausibility(void **state)
{
    (void)state;
    fti_quorum_state_h st = make_state(1, 0, 5000);
    fti_qcheck_t chk;
    fti_qmember_t a = member("g0", 10), b = member("g1", 3);
    /* no quorum yet: believed, even far apart */
    assert_int_equal(fti_quorum_request_checked(st, &a, 0, &chk), FT_SUCCESS);
    assert_false(chk.capped);
    assert_int_equal(chk.bound, -1);
    assert_int_equal(fti_quorum_request_checked(st, &b, 0, &chk), FT_SUCCESS);
    assert_false(chk.capped);
    issue_and_free(st, 0, "issue", "g0,g1", 1); /* max step 10: g1 heals */

    /* g1 healed to 10 and committed: 11 is plausible for both */
    a.step = 11;
    b.step = 11;
    assert_int_equal(fti_quorum_request_checked(st, &a, 100, &chk), FT_SUCCESS);
    assert_false(chk.capped);
    assert_int_equal(chk.bound, 11);
    assert_false(chk.newcomer);
    assert_int_equal(fti_quorum_request_checked(st, &b, 100, &chk), FT_SUCCESS);
    assert_false(chk.capped);

    /* the attack: a new group claims step 1,000,000 */
    fti_qmember_t fake = member("evil", 1000000);
    assert_int_equal(fti_quorum_request_checked(st, &fake, 100, &chk), FT_SUCCESS);
    assert_true(chk.capped);
    assert_true(chk.newcomer);
    assert_int_equal(chk.claimed, 1000000);
    assert_int_equal(chk.bound, 11);
    fti_quorum_t *q = expect_issue(st, 100, "issue", "evil,g0,g1", 2);
    assert_int_equal(q->members[0].step, 0);  /* evil: behind, must heal */
    assert_int_equal(q->members[1].step, 11); /* the real max */
    assert_int_equal(q->members[2].step, 11);
    fti_quorum_free(q);

    /* a member may not jump either (an impersonator under a real id) */
    a.step = 500;
    assert_int_equal(fti_quorum_request_checked(st, &a, 200, &chk), FT_SUCCESS);
    assert_true(chk.capped);
    assert_false(chk.newcomer);
    assert_int_equal(chk.bound, 12);
    /* evil, recorded at 0, may claim what a healer can: 12, not more */
    fake.step = 13;
    assert_int_equal(fti_quorum_request_checked(st, &fake, 200, &chk), FT_SUCCESS);
    assert_true(chk.capped);
    fake.step = 12;
    assert_int_equal(fti_quorum_request_checked(st, &fake, 200, &chk), FT_SUCCESS);
    assert_false(chk.capped);
    /* a newcomer at or below the job's step is believed */
    fti_qmember_t c = member("g2", 12);
    assert_int_equal(fti_quorum_request_checked(st, &c, 200, &chk), FT_SUCCESS);
    assert_false(chk.capped);
    fti_quorum_state_destroy(st);

    /* after a quorum at step 0 its members load their newest durable
     * checkpoint: any step is believed (test_ckpt_e2e_sgd) */
    st = make_state(1, 0, 5000);
    a = member("h0", 0);
    b = member("h1", 0);
    assert_int_equal(fti_quorum_request(st, &a, 0), FT_SUCCESS);
    assert_int_equal(fti_quorum_request(st, &b, 0), FT_SUCCESS);
    issue_and_free(st, 0, "issue", "h0,h1", 1);
    a.step = 41;
    assert_int_equal(fti_quorum_request_checked(st, &a, 100, &chk), FT_SUCCESS);
    assert_false(chk.capped);
    assert_int_equal(chk.bound, -1);
    c = member("h2", 41);
    assert_int_equal(fti_quorum_request_checked(st, &c, 100, &chk), FT_SUCCESS);
    assert_false(chk.capped);
    b.step = 41;
    assert_int_equal(fti_quorum_request(st, &b, 100), FT_SUCCESS);
    issue_and_free(st, 100, "issue", "h0,h1,h2", 2);
    /* from step 41 on the bound holds again */
    a.step = 43;
    assert_int_equal(fti_quorum_request_checked(st, &a, 200, &chk), FT_SUCCESS);
    assert_true(chk.capped);
    assert_int_equal(chk.bound, 42);
    fti_quorum_state_destroy(st);

    /* every established member gone (removed): a whole job restarted
     * from a checkpoint is believed again */
    st = make_state(1, 0, 5000);
    a = member("g0", 5);
    assert_int_equal(fti_quorum_request(st, &a, 0), FT_SUCCESS);
    issue_and_free(st, 0, "issue", "g0", 1);
    assert_int_equal(fti_quorum_remove(st, "g0"), FT_SUCCESS);
    fake = member("g9", 3000);
    assert_int_equal(fti_quorum_request_checked(st, &fake, 100, &chk), FT_SUCCESS);
    assert_false(chk.capped);
    assert_int_equal(chk.bound, -1);
    /* an absurd claim cannot overflow the bound */
    issue_and_free(st, 100, "issue", "g9", 2);
    fake.step = INT64_MAX;
    assert_int_equal(fti_quorum_request_checked(st, &fake, 200, &chk), FT_SUCCESS);
    assert_true(chk.capped);
    fti_quorum_state_destroy(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_min_replicas),
        cmocka_unit_test(test_L1_join_timeout),
        cmocka_unit_test(test_L2_heartbeat_expiry),
        cmocka_unit_test(test_L3_fast_quorum),
        cmocka_unit_test(test_L4_shrink_only),
        cmocka_unit_test(test_L5_split_brain),
        cmocka_unit_test(test_L6_id_ignores_address_and_step),
        cmocka_unit_test(test_L7_joiner_during_shrink),
        cmocka_unit_test(test_L8_commit_failures),
        cmocka_unit_test(test_incarnation_changes_id),
        cmocka_unit_test(test_ids_above_seen),
        cmocka_unit_test(test_data_cap),
        cmocka_unit_test(test_sort_order),
        cmocka_unit_test(test_inputs_and_ownership),
        cmocka_unit_test(test_remove),
        cmocka_unit_test(test_10000_groups),
        cmocka_unit_test(test_step_plausibility),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
