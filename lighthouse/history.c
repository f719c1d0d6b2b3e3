/* history.c - the lighthouse's bounded history (see history.h). */
#include "lighthouse/history.h"

#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/util.h"

static const char *const event_names[FTI_LH_EV_KINDS] = {
    "quorum", "joined", "dead", "timeout", "restarted", "heal", "commit_failed", "finalized", "killed",
    "sdc"};

const char *fti_lh_event_name(int kind)
{
    return kind >= 0 && kind < FTI_LH_EV_KINDS ? event_names[kind] : "?";
}

const char *fti_lh_gstate_name(int state)
{
    static const char *const names[] = {"alive", "silent", "dead", "finalized"};
    return state >= 0 && state <= FTI_LH_G_FINALIZED ? names[state] : "?";
}

int fti_lh_history_init(fti_lh_history_t *h, size_t events, size_t samples, size_t groups)
{
    memset(h, 0, sizeof(*h));
    h->n_events_cap = events ? events : FTI_LH_HISTORY_EVENTS;
    h->n_samples_cap = samples ? samples : FTI_LH_HISTORY_SAMPLES;
    h->max_groups = groups ? groups : FTI_LH_HISTORY_GROUPS;
    h->quorum_id = -1;
    h->last_sample_ms = -1;
    h->events = calloc(h->n_events_cap, sizeof(*h->events));
    h->samples = calloc(h->n_samples_cap, sizeof(*h->samples));
    if (h->events == NULL || h->samples == NULL) {
        fti_lh_history_clear(h);
        return FT_ERR_NO_MEMORY;
    }
    return FT_SUCCESS;
}

void fti_lh_history_clear(fti_lh_history_t *h)
{
    free(h->events);
    free(h->samples);
    free(h->groups);
    memset(h, 0, sizeof(*h));
}

void fti_lh_history_event(fti_lh_history_t *h, int64_t wall, int kind, const char *replica_id,
                          int64_t value)
{
    if (h->events == NULL)
        return;
    fti_lh_event_t *e = &h->events[h->ev_next];
    h->ev_next = (h->ev_next + 1) % h->n_events_cap;
    if (h->n_events < h->n_events_cap)
        h->n_events++;
    h->events_total++;
    e->wall_ms = wall;
    e->kind = kind;
    e->quorum_id = h->quorum_id;
    e->value = value;
    fti_strlcpy(e->replica_id, replica_id ? replica_id : "", sizeof(e->replica_id));
}

const fti_lh_event_t *fti_lh_history_event_at(const fti_lh_history_t *h, size_t i)
{
    size_t first = (h->ev_next + h->n_events_cap - h->n_events) % h->n_events_cap;
    return &h->events[(first + i) % h->n_events_cap];
}

bool fti_lh_history_finished(const fti_lh_history_t *h)
{
    for (size_t i = 0; i < h->n_groups; i++)
        if (h->groups[i].state != FTI_LH_G_FINALIZED)
            return false;
    return h->n_groups > 0;
}

const fti_lh_sample_t *fti_lh_history_sample_at(const fti_lh_history_t *h, size_t i)
{
    size_t first = (h->s_next + h->n_samples_cap - h->n_samples) % h->n_samples_cap;
    return &h->samples[(first + i) % h->n_samples_cap];
}

static const char *group_key(const void *groups, size_t i)
{
    return ((const fti_lh_gstats_t *)groups)[i].replica_id;
}

fti_lh_gstats_t *fti_lh_history_group(fti_lh_history_t *h, const char *replica_id)
{
    bool found;
    size_t at = fti_bsearch_str(h->groups, h->n_groups, group_key, replica_id, &found);
    return found ? &h->groups[at] : NULL;
}

/* The group's entry, added (state ALIVE) if new; NULL when the table is
 * full or out of memory.  *added_p tells which. */
static fti_lh_gstats_t *group_get(fti_lh_history_t *h, int64_t wall, const char *replica_id,
                                  bool *added_p)
{
    bool found;
    size_t at = fti_bsearch_str(h->groups, h->n_groups, group_key, replica_id, &found);
    *added_p = false;
    if (found)
        return &h->groups[at];
    if (h->n_groups >= h->max_groups) {
        h->groups_dropped++;
        return NULL;
    }
    if (h->n_groups == h->cap_groups) {
        size_t cap = h->cap_groups ? 2 * h->cap_groups : 16;
        fti_lh_gstats_t *g = realloc(h->groups, cap * sizeof(*g));
        if (g == NULL)
            return NULL;
        h->groups = g;
        h->cap_groups = cap;
    }
    memmove(&h->groups[at + 1], &h->groups[at], (h->n_groups - at) * sizeof(*h->groups));
    h->n_groups++;
    fti_lh_gstats_t *g = &h->groups[at];
    memset(g, 0, sizeof(*g));
    fti_strlcpy(g->replica_id, replica_id, sizeof(g->replica_id));
    g->state = FTI_LH_G_ALIVE;
    g->state_since_ms = wall;
    g->step = -1;
    g->sample_ms = wall;
    *added_p = true;
    return g;
}

void fti_lh_history_quorum(fti_lh_history_t *h, int64_t wall, int64_t quorum_id, size_t members)
{
    if (quorum_id == h->quorum_id)
        return;
    h->quorum_id = quorum_id;
    fti_lh_history_event(h, wall, FTI_LH_EV_QUORUM, "", (int64_t)members);
}

static void set_state(fti_lh_gstats_t *g, int64_t wall, int state)
{
    g->state = state;
    g->state_since_ms = wall;
}

void fti_lh_history_request(fti_lh_history_t *h, int64_t wall, const char *replica_id,
                            uint64_t incarnation, int64_t step, int64_t commit_failures)
{
    bool added;
    fti_lh_gstats_t *g = group_get(h, wall, replica_id, &added);
    if (g == NULL)
        return;
    if (added) {
        fti_lh_history_event(h, wall, FTI_LH_EV_JOINED, replica_id, step);
    } else if (incarnation != g->incarnation && g->incarnation != 0 && incarnation != 0) {
        g->restarts++;
        fti_lh_history_event(h, wall, FTI_LH_EV_RESTARTED, replica_id, g->reported_restarts + 1);
    } else if (g->state != FTI_LH_G_ALIVE) {
        fti_lh_history_event(h, wall, FTI_LH_EV_JOINED, replica_id, step);
    }
    if (g->state != FTI_LH_G_ALIVE)
        set_state(g, wall, FTI_LH_G_ALIVE);
    if (g->step >= 0 && step > g->step && incarnation == g->incarnation)
        g->advances++;
    g->incarnation = incarnation;
    g->step = step;
    if (commit_failures > 0) {
        g->commit_failures += commit_failures;
        fti_lh_history_event(h, wall, FTI_LH_EV_COMMIT_FAILED, replica_id, commit_failures);
    }
}

void fti_lh_history_report(fti_lh_history_t *h, int64_t wall, const char *replica_id,
                           int64_t restarts, int64_t heals, int64_t heal_bytes,
                           const char *last_failure)
{
    fti_lh_gstats_t *g = fti_lh_history_group(h, replica_id);
    if (g == NULL)
        return;
    if (last_failure != NULL && last_failure[0] != '\0')
        fti_strlcpy(g->last_failure, last_failure, sizeof(g->last_failure));
    /* counters restart with the process: a lower count is a new process */
    if (heals > g->heals || (heals < g->heals && restarts != g->reported_restarts)) {
        int64_t bytes = heals > g->heals ? heal_bytes - g->heal_bytes : heal_bytes;
        if (heals > 0)
            fti_lh_history_event(h, wall, FTI_LH_EV_HEAL, replica_id, bytes);
    }
    g->reported_restarts = restarts;
    g->heals = heals;
    g->heal_bytes = heal_bytes;
}

void fti_lh_history_gone(fti_lh_history_t *h, int64_t wall, const char *replica_id, int kind)
{
    int state = kind == FTI_LH_EV_FINALIZED   ? FTI_LH_G_FINALIZED
                : kind == FTI_LH_EV_DEAD_CLOSED || kind == FTI_LH_EV_KILLED ? FTI_LH_G_DEAD
                                                : FTI_LH_G_SILENT;
    bool added;
    fti_lh_gstats_t *g = group_get(h, wall, replica_id, &added);
    if (g == NULL || (!added && g->state == state))
        return;
    if (g->state == FTI_LH_G_DEAD && state == FTI_LH_G_SILENT)
        return; /* dead already: its silence is no news */
    if (state != FTI_LH_G_FINALIZED)
        g->failures++;
    g->steps_per_s = 0;
    set_state(g, wall, state);
    fti_lh_history_event(h, wall, kind, replica_id, g->step);
}

void fti_lh_history_alive(fti_lh_history_t *h, int64_t wall, const char *replica_id)
{
    fti_lh_gstats_t *g = fti_lh_history_group(h, replica_id);
    if (g && g->state == FTI_LH_G_SILENT) {
        set_state(g, wall, FTI_LH_G_ALIVE);
        fti_lh_history_event(h, wall, FTI_LH_EV_JOINED, replica_id, g->step);
    }
}

bool fti_lh_history_sample_due(const fti_lh_history_t *h, int64_t wall)
{
    return h->last_sample_ms < 0 || wall - h->last_sample_ms >= FTI_LH_SAMPLE_MS;
}

void fti_lh_history_sample(fti_lh_history_t *h, int64_t wall, int64_t participants,
                           int64_t max_step)
{
    double total = 0;
    for (size_t i = 0; i < h->n_groups; i++) {
        fti_lh_gstats_t *g = &h->groups[i];
        if (g->state != FTI_LH_G_ALIVE || wall <= g->sample_ms)
            g->steps_per_s = 0;
        else
            g->steps_per_s = (double)(g->advances - g->adv_at_sample) * 1000.0 /
                             (double)(wall - g->sample_ms);
        g->adv_at_sample = g->advances;
        g->sample_ms = wall;
        total += g->steps_per_s;
    }
    if (h->samples) {
        fti_lh_sample_t *s = &h->samples[h->s_next];
        h->s_next = (h->s_next + 1) % h->n_samples_cap;
        if (h->n_samples < h->n_samples_cap)
            h->n_samples++;
        s->wall_ms = wall;
        s->steps_per_s = total;
        s->participants = participants;
        s->max_step = max_step;
    }
    h->last_sample_ms = wall;
}

int fti_lh_history_copy(const fti_lh_history_t *h, fti_lh_history_t *dst)
{
    int rc = fti_lh_history_init(dst, h->n_events ? h->n_events : 1,
                                 h->n_samples ? h->n_samples : 1, h->max_groups);
    if (rc != FT_SUCCESS)
        return rc;
    dst->groups = malloc((h->n_groups ? h->n_groups : 1) * sizeof(*h->groups));
    if (dst->groups == NULL) {
        fti_lh_history_clear(dst);
        return FT_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < h->n_events; i++)
        dst->events[i] = *fti_lh_history_event_at(h, i);
    for (size_t i = 0; i < h->n_samples; i++)
        dst->samples[i] = *fti_lh_history_sample_at(h, i);
    if (h->n_groups > 0) /* h->groups is NULL before the first group */
        memcpy(dst->groups, h->groups, h->n_groups * sizeof(*h->groups));
    dst->n_events = h->n_events;
    dst->ev_next = h->n_events % dst->n_events_cap;
    dst->events_total = h->events_total;
    dst->n_samples = h->n_samples;
    dst->s_next = h->n_samples % dst->n_samples_cap;
    dst->n_groups = dst->cap_groups = h->n_groups;
    dst->groups_dropped = h->groups_dropped;
    dst->groups_forgotten = h->groups_forgotten;
    dst->failures_forgotten = h->failures_forgotten;
    dst->quorum_id = h->quorum_id;
    dst->last_sample_ms = h->last_sample_ms;
    return FT_SUCCESS;
}

size_t fti_lh_history_expire(fti_lh_history_t *h, int64_t wall, int64_t after_ms,
                             void (*gone)(const char *replica_id, void *arg), void *arg)
{
    size_t kept = 0, n = h->n_groups;
    for (size_t i = 0; i < n; i++) {
        fti_lh_gstats_t *g = &h->groups[i];
        if (g->state != FTI_LH_G_ALIVE && wall - g->state_since_ms > after_ms) {
            if (gone)
                gone(g->replica_id, arg);
            h->failures_forgotten += g->failures;
            h->groups_forgotten++;
            continue;
        }
        if (kept != i)
            h->groups[kept] = *g; /* the order (sorted) stays */
        kept++;
    }
    h->n_groups = kept;
    return n - kept;
}

uint64_t fti_lh_history_failures(const fti_lh_history_t *h)
{
    uint64_t n = h->failures_forgotten;
    for (size_t i = 0; i < h->n_groups; i++)
        n += h->groups[i].failures;
    return n;
}
