/*
 * lighthouse/server_gate.c - the server's side of leadership (lighthouse.h,
 * fti_lh_gate_t; the etcd election is lighthouse/leader.c): a standby
 * answers every group call with FT_ERR_NOT_LEADER naming the leader, ends
 * the calls that waited when it stops leading, and a quorum with a new id
 * is recorded (fenced) before it is sent.  Loop thread.
 */
#include "lighthouse/server_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"
#include "control/lighthouse_client.h"

/* The redirect message: FTI_LH_NOT_LEADER_MSG and the leader, or "unknown". */
static void redirect_msg(const char *leader, char *msg, size_t len)
{
    snprintf(msg, len, "%s%s", FTI_LH_NOT_LEADER_MSG, leader[0] ? leader : "unknown");
}

/* The killed records as text: "INCARNATION ID" lines (malloc'ed). */
static char *killed_text(const fti_lh_killed_t *k)
{
    size_t cap = k->n * (FTI_REPLICA_ID_SIZE + 24) + 1, used = 0;
    char *t = malloc(cap);
    if (t == NULL)
        return NULL;
    t[0] = '\0';
    for (size_t i = 0; i < k->n; i++)
        used += (size_t)snprintf(t + used, cap - used, "%" PRIu64 " %s\n", k->e[i].incarnation,
                                 k->e[i].id);
    return t;
}

/* The open SDC verdicts (sdc.h, fti_sdc_open) as text, one a line:
 * "STEP GROUP_RANK AGREE OF OTHERS ID OTHER BUFFER" separated by tabs; a
 * tab or newline in a name is written as a space (malloc'ed). */
static char *sdc_text(const fti_sdc_report_t *r, size_t n)
{
    size_t cap = n * (2 * FTI_REPLICA_ID_SIZE + FTI_SDC_NAME_SIZE + 96) + 1, used = 0;
    char *t = malloc(cap);
    if (t == NULL)
        return NULL;
    t[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const fti_sdc_finding_t *f = &r[i].f;
        size_t at = used;
        used += (size_t)snprintf(t + used, cap - used,
                                 "%" PRId64 "\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", f->step,
                                 (int)f->group_rank, f->agree, f->of, f->others, r[i].replica_id,
                                 f->other, f->buffer);
        for (size_t j = at, tabs = 0; j + 1 < used; j++)
            if (t[j] == '\n' || (t[j] == '\t' && ++tabs > 7))
                t[j] = ' ';
    }
    return t;
}

/* One line of sdc_text into lh->sdc (lh->mu held); false when malformed. */
static bool sdc_restore_line(struct fti_lighthouse *lh, char *line)
{
    char *field[8];
    size_t k = 0;
    for (char *p = line; k < 8; k++) {
        field[k] = p;
        char *tab = k < 7 ? strchr(p, '\t') : NULL;
        if (k < 7 && tab == NULL)
            return false;
        if (tab)
            *tab = '\0';
        p = tab ? tab + 1 : p;
    }
    fti_sdc_finding_t f = {.verdict = FTI_SDC_MINORITY};
    f.step = strtoll(field[0], NULL, 10);
    f.group_rank = (int32_t)strtol(field[1], NULL, 10);
    f.agree = atoi(field[2]);
    f.of = atoi(field[3]);
    f.others = atoi(field[4]);
    fti_strlcpy(f.other, field[6], sizeof(f.other));
    fti_strlcpy(f.buffer, field[7], sizeof(f.buffer));
    return fti_sdc_restore(lh->sdc, field[5], &f) == FT_SUCCESS;
}

/* The open SDC verdicts a former leader left (PREFIX/sdc) into lh->sdc:
 * a group judged corrupt stays so across a failover. */
static void take_over_sdc(struct fti_lighthouse *lh, const fti_lh_gate_t *g)
{
    char *t = NULL, *save = NULL;
    size_t n = 0;
    int rc = g->load(g->arg, "sdc", &t);
    if (rc != FT_SUCCESS) {
        if (rc != FT_ERR_NOT_FOUND)
            FTI_WARN("the open SDC verdicts a former leader left could not be read: %s",
                     FT_Error_string(rc));
        return;
    }
    pthread_mutex_lock(&lh->mu);
    for (char *line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        n += sdc_restore_line(lh, line);
    pthread_mutex_unlock(&lh->mu);
    free(t);
    if (n)
        FTI_INFO("%zu open SDC verdicts taken over from a former leader (those groups heal "
                 "from the majority)",
                 n);
}

/* Writes the open SDC verdicts when they changed since the last write. */
static void save_sdc(struct fti_lighthouse *lh, const fti_lh_gate_t *g)
{
    fti_sdc_report_t r[FTI_LH_SDC_SAVED];
    pthread_mutex_lock(&lh->mu);
    size_t n = FTI_MIN(fti_sdc_open(lh->sdc, r, FTI_LH_SDC_SAVED), (size_t)FTI_LH_SDC_SAVED);
    pthread_mutex_unlock(&lh->mu);
    char *t = sdc_text(r, n);
    if (t == NULL || (lh->gate_sdc && strcmp(t, lh->gate_sdc) == 0) ||
        (lh->gate_sdc == NULL && n == 0) || g->save(g->arg, "sdc", t) != FT_SUCCESS) {
        free(t);
        return;
    }
    free(lh->gate_sdc);
    lh->gate_sdc = t;
}

/* The job's name and the settings the quorum rules use, as one line. */
static void settings_text(const struct fti_lighthouse *lh, char *buf, size_t len)
{
    const fti_lighthouse_opts_t *o = &lh->opts;
    snprintf(buf, len,
             "job=%s min_replicas=%d join_timeout_ms=%" PRId64 " heartbeat_timeout_ms=%" PRId64
             " quorum_tick_ms=%" PRId64,
             o->job, o->min_replicas, o->join_timeout_ms, o->heartbeat_timeout_ms,
             o->quorum_tick_ms);
}

/* The job's settings: a former leader's that differ are named (lighthouses
 * of one job should share them), then ours are written. */
static void check_settings(struct fti_lighthouse *lh, const fti_lh_gate_t *g)
{
    char mine[FTI_REASON_SIZE], *theirs = NULL;
    settings_text(lh, mine, sizeof(mine));
    if (g->load(g->arg, "settings", &theirs) == FT_SUCCESS && strcmp(theirs, mine) != 0)
        FTI_WARN("this lighthouse's settings differ from the former leader's: '%s' here, '%s' "
                 "there (give every lighthouse of a job the same flags)",
                 mine, theirs);
    free(theirs);
    (void)g->save(g->arg, "settings", mine);
}

/* A new leadership: what a former leader left (the killed groups, the
 * open SDC verdicts) into the
 * state.  Loop thread. */
static void take_over(struct fti_lighthouse *lh, const fti_lh_gate_t *g)
{
    char *t = NULL;
    check_settings(lh, g);
    take_over_sdc(lh, g);
    free(lh->gate_sdc);
    lh->gate_sdc = NULL;
    int rc = g->load(g->arg, "killed", &t);
    if (rc != FT_SUCCESS) {
        if (rc != FT_ERR_NOT_FOUND)
            FTI_WARN("the killed groups a former leader left could not be read: %s",
                     FT_Error_string(rc));
        return;
    }
    size_t n = 0;
    pthread_mutex_lock(&lh->mu);
    char *save = NULL;
    for (char *line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *sp = strchr(line, ' ');
        if (sp == NULL || sp[1] == '\0' || strlen(sp + 1) >= FTI_REPLICA_ID_SIZE)
            continue;
        fti_lh_killed_add(&lh->killed, sp + 1, strtoull(line, NULL, 10));
        n++;
    }
    lh->gate_killed = lh->killed;
    pthread_mutex_unlock(&lh->mu);
    free(t);
    if (n)
        FTI_INFO("%zu killed groups taken over from a former leader", n);
}

/* Writes the killed records when they changed since the last write. */
static void save_killed(struct fti_lighthouse *lh, const fti_lh_gate_t *g)
{
    pthread_mutex_lock(&lh->mu);
    bool changed = memcmp(&lh->killed, &lh->gate_killed, sizeof(lh->killed)) != 0;
    fti_lh_killed_t now = lh->killed;
    pthread_mutex_unlock(&lh->mu);
    if (!changed)
        return;
    char *t = killed_text(&now);
    if (t && g->save(g->arg, "killed", t) == FT_SUCCESS)
        lh->gate_killed = now;
    free(t);
}

/* Whether the gate says this lighthouse leads; a new leadership takes
 * over the floor and the killed groups; leader gets the leader otherwise. */
static bool gate_leading(struct fti_lighthouse *lh, char *leader, size_t len)
{
    const fti_lh_gate_t *g = lh->opts.gate;
    int64_t floor = 0, term = 0;
    leader[0] = '\0';
    if (g == NULL)
        return true;
    if (!g->leading(g->arg, &term, &floor, leader, len))
        return false;
    if (term != lh->gate_term) { /* a new leadership: ids above what was issued */
        pthread_mutex_lock(&lh->mu);
        fti_quorum_note_seen(lh->st, floor);
        pthread_mutex_unlock(&lh->mu);
        lh->gate_term = term;
        take_over(lh, g);
    }
    save_killed(lh, g);
    save_sdc(lh, g);
    return true;
}

void fti_lh_gate_snapshot(const struct fti_lighthouse *lh, fti_lh_snapshot_t *s)
{
    const fti_lh_gate_t *g = lh->opts.gate;
    int64_t floor, term;
    s->role = FTI_LH_ROLE_ALONE;
    if (g)
        s->role = g->leading(g->arg, &term, &floor, s->leader, sizeof(s->leader))
                      ? FTI_LH_ROLE_LEADER
                      : FTI_LH_ROLE_STANDBY;
    s->n_lighthouses = 0;
    if (g && g->members) {
        char addr[FTI_LH_MEMBERS_MAX][FTI_ADDRESS_SIZE], leader[FTI_ADDRESS_SIZE];
        size_t n = g->members(g->arg, addr, FTI_LH_MEMBERS_MAX, leader, sizeof(leader));
        for (size_t i = 0; i < n; i++) {
            fti_strlcpy(s->lighthouses[i].address, addr[i], sizeof(s->lighthouses[i].address));
            s->lighthouses[i].leader = leader[0] && strcmp(addr[i], leader) == 0;
        }
        s->n_lighthouses = n;
    }
}

bool fti_lh_gate_refuse(struct fti_lighthouse *lh, fti_rpc_call_h call)
{
    char leader[FTI_ADDRESS_SIZE], msg[FTI_ADDRESS_SIZE + 64];
    if (gate_leading(lh, leader, sizeof(leader)))
        return false;
    redirect_msg(leader, msg, sizeof(msg));
    fti_rpc_reply_error(call, FT_ERR_NOT_LEADER, msg);
    return true;
}

/* Ends every waiting call with rc and msg and withdraws its request. */
static void end_all(struct fti_lighthouse *lh, int rc, const char *msg)
{
    struct waiters *w = &lh->waiters;
    size_t ended = 0;
    for (size_t b = 0; b <= w->mask; b++) {
        struct waiter *x = w->buckets[b], *next;
        w->buckets[b] = NULL;
        for (; x; x = next) {
            next = x->next;
            pthread_mutex_lock(&lh->mu);
            (void)fti_quorum_withdraw(lh->st, x->replica_id);
            pthread_mutex_unlock(&lh->mu);
            fti_rpc_reply_error(x->call, rc, msg);
            free(x);
            ended++;
        }
    }
    w->n = w->n_ids = w->n_prev_ids = 0;
    if (ended)
        FTI_INFO("%zu waiting quorum calls ended: %s", ended, msg);
}

bool fti_lh_gate_leading(struct fti_lighthouse *lh)
{
    char leader[FTI_ADDRESS_SIZE], msg[FTI_ADDRESS_SIZE + 64];
    if (gate_leading(lh, leader, sizeof(leader)))
        return true;
    if (lh->waiters.n > 0) {
        redirect_msg(leader, msg, sizeof(msg));
        end_all(lh, FT_ERR_NOT_LEADER, msg);
    }
    return false;
}

int fti_lh_gate_record(struct fti_lighthouse *lh, const fti_quorum_t *q)
{
    const fti_lh_gate_t *g = lh->opts.gate;
    if (g == NULL || (q->quorum_id == lh->gate_rec_id && lh->gate_term == lh->gate_rec_term))
        return FT_SUCCESS;
    int rc = g->record(g->arg, q);
    if (rc == FT_SUCCESS) {
        lh->gate_rec_id = q->quorum_id;
        lh->gate_rec_term = lh->gate_term;
        return rc;
    }
    FTI_WARN("quorum %" PRId64 " not sent: %s", q->quorum_id,
             rc == FT_ERR_NOT_LEADER ? "this lighthouse no longer leads"
                                     : "it could not be recorded in etcd");
    if (rc == FT_ERR_NOT_LEADER)
        (void)fti_lh_gate_leading(lh); /* redirects the waiters */
    else
        end_all(lh, FT_ERR_CONNECT, "the quorum could not be recorded in etcd; ask again");
    return rc;
}
