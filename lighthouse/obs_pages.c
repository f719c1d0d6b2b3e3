/* obs_pages.c - recoveries, failed steps, rank counters and goodput on the
 * HTTP pages (see obs_pages.h). */
#include "lighthouse/obs_pages.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lighthouse/dashboard.h"
#include "lighthouse/history.h"
#include "lighthouse/recoveries.h"
#include "base/util.h"

/* ---- goodput --------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Whether a reported recovery overlaps the wall interval [t0, t1]. */
static bool recovering(const fti_lh_recov_t *t, int64_t t0, int64_t t1)
{
    for (size_t i = 0; t != NULL && i < t->n_rec; i++) {
        const fti_recovery_rec_t *r = &fti_lh_recov_at(t, i)->r;
        if (r->start_ms <= t1 && r->end_ms >= t0)
            return true;
    }
    return false;
}

static bool healthy_rate(const fti_lh_snapshot_t *s, double *rate_p)
{
    const fti_lh_history_t *h = s->history;
    double *rates = malloc((h->n_samples ? h->n_samples : 1) * sizeof(*rates));
    size_t n = 0;
    for (size_t i = 1; rates != NULL && i < h->n_samples; i++) {
        const fti_lh_sample_t *p = fti_lh_history_sample_at(h, i - 1);
        const fti_lh_sample_t *c = fti_lh_history_sample_at(h, i);
        if (p->max_step < 0 || c->max_step <= p->max_step || c->wall_ms <= p->wall_ms ||
            c->participants != p->participants || recovering(s->recov, p->wall_ms, c->wall_ms))
            continue;
        rates[n++] = (double)(c->max_step - p->max_step) * 1000.0 /
                     (double)(c->wall_ms - p->wall_ms);
    }
    if (n > 0) {
        qsort(rates, n, sizeof(*rates), cmp_double);
        *rate_p = n % 2 ? rates[n / 2] : (rates[n / 2 - 1] + rates[n / 2]) / 2.0;
    }
    free(rates);
    return n > 0;
}

/* The last sample of the run: the newest, or once every group finalized the
 * last one at which the step still moved (goodput then stays what it was at
 * the end instead of falling while nothing runs). */
static size_t last_sample(const fti_lh_history_t *h)
{
    size_t i = h->n_samples - 1;
    if (!fti_lh_history_finished(h))
        return i;
    while (i > 0 && fti_lh_history_sample_at(h, i)->max_step <=
                        fti_lh_history_sample_at(h, i - 1)->max_step)
        i--;
    return i;
}

bool fti_lh_goodput(const fti_lh_snapshot_t *s, double *committed_p, double *healthy_p)
{
    const fti_lh_history_t *h = s->history;
    if (h == NULL || h->n_samples < 2)
        return false;
    const fti_lh_sample_t *last = fti_lh_history_sample_at(h, last_sample(h)), *first = NULL;
    for (size_t i = 0; i + 1 < h->n_samples && first == NULL; i++) {
        const fti_lh_sample_t *p = fti_lh_history_sample_at(h, i);
        if (p->max_step >= 0 && p->wall_ms >= last->wall_ms - FTI_LH_GOODPUT_WINDOW_MS)
            first = p;
    }
    double healthy;
    if (first == NULL || last->wall_ms <= first->wall_ms || !healthy_rate(s, &healthy))
        return false;
    *committed_p = (double)(last->max_step - first->max_step) * 1000.0 /
                   (double)(last->wall_ms - first->wall_ms);
    *healthy_p = healthy;
    return true;
}

/* ---- /metrics ---------------------------------------------------------------- */

static void head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One group's histogram h: bounds in seconds (ms sums) or bytes. */
static void hist_lines(struct evbuffer *b, const char *name, const char *job, const char *group,
                       const fti_lh_hist64_t *h, const double *bounds, size_t nb, bool ms)
{
    char nm[128];
    uint64_t cum = 0;
    snprintf(nm, sizeof(nm), "%s_bucket", name);
    for (size_t k = 0; k < nb; k++) {
        cum += h->n[k];
        fti_lh_metric_series(b, nm, job, group);
        if (k + 1 < nb)
            evbuffer_add_printf(b, ",le=\"%.15g\"} %" PRIu64 "\n", bounds[k], cum);
        else
            evbuffer_add_printf(b, ",le=\"+Inf\"} %" PRIu64 "\n", cum);
    }
    snprintf(nm, sizeof(nm), "%s_sum", name);
    fti_lh_metric_series(b, nm, job, group);
    if (ms) /* exact: the event log's milliseconds */
        evbuffer_add_printf(b, "} %" PRId64 ".%03d\n", h->sum / 1000, (int)(h->sum % 1000));
    else
        evbuffer_add_printf(b, "} %" PRId64 "\n", h->sum);
    snprintf(nm, sizeof(nm), "%s_count", name);
    fti_lh_metric_series(b, nm, job, group);
    evbuffer_add_printf(b, "} %" PRIu64 "\n", h->count);
}

static void recovery_metrics(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    static const char *const help[FTI_LH_PHASES] = {
        "Recoveries: a failing collective's start to its error, on the group that saw it.",
        "Restarts: the agent saw the last run fail to the new process's FT_Init done.",
        "Recoveries: time in quorum exchanges until the next committed step.",
        "Recoveries: time rebuilding the cross-group slice.",
        "Recoveries: time healing (fetch, verify, the group's decision, install).",
        "Recoveries: the failure (or a restarted process's start) to the next committed step."};
    const fti_lh_recov_t *t = s->recov;
    for (int p = 0; p < FTI_LH_PHASES; p++) {
        char name[96];
        snprintf(name, sizeof(name), "ftmpi_recovery_%s_seconds", fti_lh_phase_name(p));
        head(b, name, "histogram", help[p]);
        for (size_t i = 0; i < t->n_groups; i++)
            hist_lines(b, name, s->job, t->groups[i].replica_id, &t->groups[i].phase[p],
                       fti_lh_sec_bounds, FTI_LH_SEC_BUCKETS, true);
    }
    head(b, "ftmpi_recovery_heal_bytes", "histogram", "Recoveries: bytes healed (those that healed).");
    for (size_t i = 0; i < t->n_groups; i++)
        hist_lines(b, "ftmpi_recovery_heal_bytes", s->job, t->groups[i].replica_id,
                   &t->groups[i].heal_bytes, fti_lh_byte_bounds, FTI_LH_BYTE_BUCKETS, false);
    head(b, "ftmpi_recovery_heal_rate_bytes_per_second", "gauge",
         "Heal rate of the group's last recovery that healed.");
    for (size_t i = 0; i < t->n_groups; i++) {
        fti_lh_metric_series(b, "ftmpi_recovery_heal_rate_bytes_per_second", s->job, t->groups[i].replica_id);
        evbuffer_add_printf(b, "} %.6g\n", t->groups[i].last_heal_rate);
    }
    head(b, "ftmpi_recoveries_total", "counter", "Recoveries ended, by kind (survivor, restart).");
    for (size_t i = 0; i < t->n_groups; i++)
        for (int k = 0; k < 2; k++) {
            fti_lh_metric_series(b, "ftmpi_recoveries_total", s->job, t->groups[i].replica_id);
            evbuffer_add_printf(b, ",kind=\"%s\"} %" PRIu64 "\n", fti_recovery_kind_name(k),
                                t->groups[i].recoveries[k]);
        }
    head(b, "ftmpi_recovery_steps_lost_total", "counter",
         "Steps that did not commit during the group's recoveries.");
    for (size_t i = 0; i < t->n_groups; i++) {
        fti_lh_metric_series(b, "ftmpi_recovery_steps_lost_total", s->job, t->groups[i].replica_id);
        evbuffer_add_printf(b, "} %" PRId64 "\n", t->groups[i].steps_lost);
    }
}

/* One counter of every rank of every group: value k of fti_rank_metrics_t. */
static void rank_metric(struct evbuffer *b, const fti_lh_snapshot_t *s, const char *name,
                        const char *help, size_t off, double scale)
{
    const fti_lh_recov_t *t = s->recov;
    head(b, name, "counter", help);
    for (size_t i = 0; i < t->n_groups; i++)
        for (size_t r = 0; r < t->groups[i].n_ranks; r++) {
            int64_t v = *(const int64_t *)((const char *)&t->groups[i].ranks[r] + off);
            fti_lh_metric_series(b, name, s->job, t->groups[i].replica_id);
            evbuffer_add_printf(b, ",rank=\"%zu\"} %.15g\n", r, (double)v * scale);
        }
}

static void rank_metrics(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    static const char *const kinds[FTI_FAIL_KINDS] = {"proc_failed", "timeout", "aborted",
                                                      "quorum", "other"};
    static const char *const calls[3] = {"quorum", "allreduce", "commit"};
    const size_t call_off[3] = {offsetof(fti_rank_metrics_t, quorum_us),
                                offsetof(fti_rank_metrics_t, allreduce_us),
                                offsetof(fti_rank_metrics_t, commit_us)};
    const fti_lh_recov_t *t = s->recov;
    rank_metric(b, s, "ftmpi_rank_steps_total", "FT_Quorum calls of the rank's process.",
                offsetof(fti_rank_metrics_t, steps), 1.0);
    rank_metric(b, s, "ftmpi_rank_commits_total", "Committed steps of the rank's process.",
                offsetof(fti_rank_metrics_t, commits), 1.0);
    rank_metric(b, s, "ftmpi_rank_reduced_bytes_total", "Bytes the rank reduced across groups.",
                offsetof(fti_rank_metrics_t, bytes_reduced), 1.0);
    rank_metric(b, s, "ftmpi_rank_heal_bytes_total", "Bytes the rank healed.",
                offsetof(fti_rank_metrics_t, heal_bytes), 1.0);
    head(b, "ftmpi_rank_failed_steps_total", "counter",
         "Steps the rank did not commit, by the step's first error.");
    for (size_t i = 0; i < t->n_groups; i++)
        for (size_t r = 0; r < t->groups[i].n_ranks; r++)
            for (int k = 0; k < FTI_FAIL_KINDS; k++) {
                fti_lh_metric_series(b, "ftmpi_rank_failed_steps_total", s->job, t->groups[i].replica_id);
                evbuffer_add_printf(b, ",rank=\"%zu\",kind=\"%s\"} %" PRId64 "\n", r, kinds[k],
                                    t->groups[i].ranks[r].fail[k]);
            }
    head(b, "ftmpi_rank_call_seconds_total", "counter", "Time the rank spent in each FT_ call.");
    for (size_t i = 0; i < t->n_groups; i++)
        for (size_t r = 0; r < t->groups[i].n_ranks; r++)
            for (int c = 0; c < 3; c++) {
                int64_t us = *(const int64_t *)((const char *)&t->groups[i].ranks[r] + call_off[c]);
                fti_lh_metric_series(b, "ftmpi_rank_call_seconds_total", s->job, t->groups[i].replica_id);
                evbuffer_add_printf(b, ",rank=\"%zu\",call=\"%s\"} %.6f\n", r, calls[c],
                                    (double)us / 1e6);
            }
}

void fti_lh_obs_metrics(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    double committed, healthy;
    bool known = fti_lh_goodput(s, &committed, &healthy);
    head(b, "ftmpi_job_committed_steps_per_second", "gauge",
         "Committed steps per second over the last minute (the quorum's max step).");
    head(b, "ftmpi_job_healthy_steps_per_second", "gauge",
         "Median step rate over the history's healthy intervals (see doc/USER_GUIDE.md).");
    head(b, "ftmpi_job_goodput_ratio", "gauge",
         "Committed steps per second over the healthy rate (frozen once the job finished).");
    if (known) {
        fti_lh_metric_series(b, "ftmpi_job_committed_steps_per_second", s->job, NULL);
        evbuffer_add_printf(b, "} %.6g\n", committed);
        fti_lh_metric_series(b, "ftmpi_job_healthy_steps_per_second", s->job, NULL);
        evbuffer_add_printf(b, "} %.6g\n", healthy);
        fti_lh_metric_series(b, "ftmpi_job_goodput_ratio", s->job, NULL);
        evbuffer_add_printf(b, "} %.6g\n", committed / healthy);
    }
    head(b, "ftmpi_job_finished", "gauge", "1 once every group known finalized: the job is over.");
    fti_lh_metric_series(b, "ftmpi_job_finished", s->job, NULL);
    evbuffer_add_printf(b, "} %d\n", s->history != NULL && fti_lh_history_finished(s->history));
    if (s->recov == NULL)
        return;
    recovery_metrics(b, s);
    rank_metrics(b, s);
}

/* ---- dashboard ------------------------------------------------------------------ */

static void hhmmss(char *buf, size_t len, int64_t wall_ms)
{
    time_t secs = (time_t)(wall_ms / 1000);
    struct tm tm;
    if (gmtime_r(&secs, &tm) == NULL || strftime(buf, len, "%H:%M:%S", &tm) == 0)
        snprintf(buf, len, "?");
}

static void html_recoveries(struct evbuffer *b, const fti_lh_recov_t *t)
{
    evbuffer_add_printf(b, "<h2>Recoveries</h2>\n<table id=\"recoveries\">\n<tr><th>ended (UTC)"
                           "</th><th>group</th><th>kind</th><th>failed step</th><th>why</th>"
                           "<th>detect</th><th>restart</th><th>quorum</th><th>slice</th><th>heal</th>"
                           "<th>healed</th><th>steps lost</th><th>total</th></tr>\n");
    size_t first = t->n_rec > FTI_LH_DASH_RECOVERIES ? t->n_rec - FTI_LH_DASH_RECOVERIES : 0;
    for (size_t i = t->n_rec; i-- > first;) { /* newest first */
        const fti_lh_recov_entry_t *e = fti_lh_recov_at(t, i);
        const fti_recovery_rec_t *r = &e->r;
        char when[16];
        hhmmss(when, sizeof(when), r->end_ms);
        evbuffer_add_printf(b, "<tr><td>%s</td><td>", when);
        fti_lh_html_escape(b, e->replica_id);
        evbuffer_add_printf(b, "</td><td>%s</td><td>", fti_recovery_kind_name(r->kind));
        if (r->failed_step >= 0)
            evbuffer_add_printf(b, "%" PRId64, r->failed_step);
        evbuffer_add_printf(b, "</td><td>");
        fti_lh_html_escape(b, r->error[0] ? r->error : "-");
        if (r->peer[0]) {
            evbuffer_add_printf(b, " (peer ");
            fti_lh_html_escape(b, r->peer);
            evbuffer_add_printf(b, ")");
        }
        evbuffer_add_printf(b, "</td><td>");
        if (r->detect_ms >= 0)
            evbuffer_add_printf(b, "%" PRId64 " ms", r->detect_ms);
        evbuffer_add_printf(b, "</td><td>");
        if (r->restart_ms >= 0)
            evbuffer_add_printf(b, "%" PRId64 " ms", r->restart_ms);
        double rate = r->heal_ms > 0 ? (double)r->heal_bytes / 1048576.0 * 1000.0 / (double)r->heal_ms
                                     : 0.0;
        evbuffer_add_printf(b, "</td><td>%" PRId64 " ms</td><td>%" PRId64 " ms</td><td>%" PRId64
                               " ms</td><td>%" PRId64 " B (%.1f MiB/s)</td><td>%" PRId64
                               "</td><td>%" PRId64 " ms</td></tr>\n",
                            r->quorum_ms, r->slice_ms, r->heal_ms, r->heal_bytes, rate,
                            r->steps_lost, r->end_ms - r->start_ms);
    }
    evbuffer_add_printf(b, "</table>\n");
}

static void html_fails(struct evbuffer *b, const fti_lh_recov_t *t)
{
    evbuffer_add_printf(b, "<h2>Failed steps</h2>\n<table id=\"failed-steps\">\n<tr><th>at (UTC)"
                           "</th><th>group</th><th>step</th><th>error</th><th>peer named"
                           "</th><th>seen by group rank</th></tr>\n");
    size_t first = t->n_fail > FTI_LH_DASH_FAILS ? t->n_fail - FTI_LH_DASH_FAILS : 0;
    for (size_t i = t->n_fail; i-- > first;) {
        const fti_lh_fail_entry_t *e = fti_lh_fail_at(t, i);
        char when[16];
        hhmmss(when, sizeof(when), e->f.wall_ms);
        evbuffer_add_printf(b, "<tr><td>%s</td><td>", when);
        fti_lh_html_escape(b, e->replica_id);
        evbuffer_add_printf(b, "</td><td>%" PRId64 "</td><td>", e->f.step);
        fti_lh_html_escape(b, e->f.error);
        evbuffer_add_printf(b, "</td><td>");
        fti_lh_html_escape(b, e->f.peer[0] ? e->f.peer : "unknown");
        evbuffer_add_printf(b, "</td><td>%d</td></tr>\n", e->f.group_rank);
    }
    evbuffer_add_printf(b, "</table>\n");
}

void fti_lh_obs_html(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    double committed, healthy;
    if (fti_lh_goodput(s, &committed, &healthy))
        evbuffer_add_printf(b, "<p>Goodput <b id=\"goodput\">%.2f</b>: %.2f committed steps/s "
                               "over the last minute, healthy rate %.2f steps/s.</p>\n",
                            committed / healthy, committed, healthy);
    if (s->recov == NULL)
        return;
    html_recoveries(b, s->recov);
    html_fails(b, s->recov);
}

void fti_lh_obs_json(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    const fti_lh_recov_t *t = s->recov;
    evbuffer_add_printf(b, ",\"recoveries\":[");
    for (size_t i = 0; t != NULL && i < t->n_rec; i++) {
        const fti_lh_recov_entry_t *e = fti_lh_recov_at(t, i);
        const fti_recovery_rec_t *r = &e->r;
        evbuffer_add_printf(b, "%s\n{\"replica_id\":", i ? "," : "");
        fti_lh_json_string(b, e->replica_id);
        evbuffer_add_printf(b, ",\"seq\":%" PRIu64 ",\"kind\":\"%s\",\"failed_step\":%" PRId64
                               ",\"start_ms\":%" PRId64 ",\"end_ms\":%" PRId64
                               ",\"detect_ms\":%" PRId64 ",\"quorum_ms\":%" PRId64
                               ",\"slice_ms\":%" PRId64 ",\"heal_ms\":%" PRId64
                               ",\"heal_bytes\":%" PRId64 ",\"steps_lost\":%" PRId64
                               ",\"resumed_step\":%" PRId64 ",\"restart_ms\":%" PRId64
                               ",\"error_name\":",
                            r->seq, fti_recovery_kind_name(r->kind), r->failed_step, r->start_ms,
                            r->end_ms, r->detect_ms, r->quorum_ms, r->slice_ms, r->heal_ms,
                            r->heal_bytes, r->steps_lost, r->resumed_step, r->restart_ms);
        fti_lh_json_string(b, r->error);
        evbuffer_add_printf(b, ",\"peer\":");
        fti_lh_json_string(b, r->peer);
        evbuffer_add_printf(b, "}");
    }
    evbuffer_add_printf(b, "],\"failed_steps\":[");
    for (size_t i = 0; t != NULL && i < t->n_fail; i++) {
        const fti_lh_fail_entry_t *e = fti_lh_fail_at(t, i);
        evbuffer_add_printf(b, "%s\n{\"replica_id\":", i ? "," : "");
        fti_lh_json_string(b, e->replica_id);
        evbuffer_add_printf(b, ",\"step\":%" PRId64 ",\"wall_ms\":%" PRId64
                               ",\"group_rank\":%d,\"error_name\":",
                            e->f.step, e->f.wall_ms, e->f.group_rank);
        fti_lh_json_string(b, e->f.error);
        evbuffer_add_printf(b, ",\"peer\":");
        fti_lh_json_string(b, e->f.peer);
        evbuffer_add_printf(b, "}");
    }
    evbuffer_add_printf(b, "]");
}
