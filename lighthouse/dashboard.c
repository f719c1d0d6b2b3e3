/* dashboard.c - the history on the lighthouse's pages (see dashboard.h). */
#include "lighthouse/dashboard.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lighthouse/history.h"
#include "base/util.h"

#define SVG_W 1200        /* width of every drawing */
#define SVG_PAD_L 110     /* left margin (lane labels, axis values) */
#define SVG_PAD_R 10
#define LANE_H 18         /* one timeline lane per event kind */
#define PLOT_H 140
#define SPAN_MAX_MS (15 * 60 * 1000) /* the drawings show at most this */

static const char *const ev_colors[FTI_LH_EV_KINDS] = {
    "#3465a4", "#4e9a06", "#cc0000", "#f57900", "#75507b", "#06989a", "#8f5902", "#888888", "#5c3566",
    "#a40000"};

void fti_lh_html_escape(struct evbuffer *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': evbuffer_add(b, "&amp;", 5); break;
        case '<': evbuffer_add(b, "&lt;", 4); break;
        case '>': evbuffer_add(b, "&gt;", 4); break;
        case '"': evbuffer_add(b, "&quot;", 6); break;
        case '\'': evbuffer_add(b, "&#39;", 5); break;
        default: evbuffer_add(b, s, 1);
        }
    }
}

void fti_lh_json_string(struct evbuffer *b, const char *s)
{
    size_t n = fti_json_escape(NULL, 0, s);
    struct evbuffer_iovec v;
    if (evbuffer_reserve_space(b, (ev_ssize_t)n + 1, &v, 1) != 1)
        return; /* out of memory: the page is cut, as with evbuffer_add */
    v.iov_len = fti_json_escape(v.iov_base, n + 1, s);
    evbuffer_commit_space(b, &v, 1);
}

/* The time span drawn: [*t0, *t1] wall ms. */
static void span(const fti_lh_history_t *h, int64_t now, int64_t *t0, int64_t *t1)
{
    int64_t first = now;
    if (h->n_samples)
        first = FTI_MIN(first, fti_lh_history_sample_at(h, 0)->wall_ms);
    if (h->n_events)
        first = FTI_MIN(first, fti_lh_history_event_at(h, 0)->wall_ms);
    *t1 = now;
    *t0 = FTI_MAX(first, now - SPAN_MAX_MS);
    if (*t1 - *t0 < 10000)
        *t0 = *t1 - 10000; /* at least 10 s wide */
}

static double xpos(int64_t t, int64_t t0, int64_t t1)
{
    return SVG_PAD_L + (double)(t - t0) * (SVG_W - SVG_PAD_L - SVG_PAD_R) / (double)(t1 - t0);
}

static void timeline(struct evbuffer *b, const fti_lh_history_t *h, int64_t t0, int64_t t1)
{
    int height = LANE_H * FTI_LH_EV_KINDS + 20;
    evbuffer_add_printf(b,
                        "<h2>Timeline</h2>\n<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" "
                        "width=\"%d\" height=\"%d\" font-size=\"11\">\n",
                        SVG_W, height);
    for (int k = 0; k < FTI_LH_EV_KINDS; k++) {
        int y = k * LANE_H + LANE_H / 2;
        evbuffer_add_printf(b,
                            "<text x=\"4\" y=\"%d\">%s</text><line x1=\"%d\" y1=\"%d\" x2=\"%d\" "
                            "y2=\"%d\" stroke=\"#eee\"/>\n",
                            y + 4, fti_lh_event_name(k), SVG_PAD_L, y, SVG_W - SVG_PAD_R, y);
    }
    for (size_t i = 0; i < h->n_events; i++) {
        const fti_lh_event_t *e = fti_lh_history_event_at(h, i);
        if (e->wall_ms < t0 || e->kind < 0 || e->kind >= FTI_LH_EV_KINDS)
            continue;
        const char *name = fti_lh_event_name(e->kind);
        evbuffer_add_printf(b,
                            "<circle class=\"ev ev-%s\" data-kind=\"%s\" cx=\"%.1f\" cy=\"%d\" "
                            "r=\"5\" fill=\"%s\"><title>%s ",
                            name, name, xpos(e->wall_ms, t0, t1), e->kind * LANE_H + LANE_H / 2,
                            ev_colors[e->kind], name);
        fti_lh_html_escape(b, e->replica_id);
        evbuffer_add_printf(b, " (value %" PRId64 ", quorum %" PRId64 ", %.1f s ago)</title></circle>\n",
                            e->value, e->quorum_id, (double)(t1 - e->wall_ms) / 1000.0);
    }
    evbuffer_add_printf(b,
                        "<text x=\"%d\" y=\"%d\">-%.0f s</text><text x=\"%d\" y=\"%d\" "
                        "text-anchor=\"end\">now</text>\n</svg>\n",
                        SVG_PAD_L, height - 4, (double)(t1 - t0) / 1000.0, SVG_W - SVG_PAD_R,
                        height - 4);
}

/* One line plot of the samples' steps_per_s (which = 0) or participants. */
static void plot(struct evbuffer *b, const fti_lh_history_t *h, int64_t t0, int64_t t1, int which)
{
    const char *id = which == 0 ? "plot-rate" : "plot-participants";
    const char *title = which == 0 ? "Step rate (steps/s, all groups)" : "Participants";
    double vmax = 1;
    for (size_t i = 0; i < h->n_samples; i++) {
        const fti_lh_sample_t *p = fti_lh_history_sample_at(h, i);
        vmax = FTI_MAX(vmax, which == 0 ? p->steps_per_s : (double)p->participants);
    }
    vmax *= 1.1;
    evbuffer_add_printf(b,
                        "<h2>%s</h2>\n<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" "
                        "width=\"%d\" height=\"%d\" font-size=\"11\">\n"
                        "<rect x=\"%d\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
                        "stroke=\"#ccc\"/>\n<text x=\"4\" y=\"12\">%.1f</text>"
                        "<text x=\"4\" y=\"%d\">0</text>\n<polyline class=\"series\" fill=\"none\" "
                        "stroke=\"%s\" stroke-width=\"2\" points=\"",
                        title, id, SVG_W, PLOT_H + 4, SVG_PAD_L, SVG_W - SVG_PAD_L - SVG_PAD_R,
                        PLOT_H, vmax, PLOT_H, which == 0 ? "#3465a4" : "#4e9a06");
    for (size_t i = 0; i < h->n_samples; i++) {
        const fti_lh_sample_t *p = fti_lh_history_sample_at(h, i);
        if (p->wall_ms < t0)
            continue;
        double v = which == 0 ? p->steps_per_s : (double)p->participants;
        evbuffer_add_printf(b, "%.1f,%.1f ", xpos(p->wall_ms, t0, t1),
                            (double)PLOT_H - v * PLOT_H / vmax);
    }
    evbuffer_add_printf(b, "\"/>\n");
    /* failures as red marks on the plots too */
    for (size_t i = 0; i < h->n_events; i++) {
        const fti_lh_event_t *e = fti_lh_history_event_at(h, i);
        if (e->wall_ms >= t0 &&
            (e->kind == FTI_LH_EV_DEAD_CLOSED || e->kind == FTI_LH_EV_DEAD_TIMEOUT))
            evbuffer_add_printf(b,
                                "<line class=\"fail-mark\" x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" "
                                "y2=\"%d\" stroke=\"#cc0000\" stroke-dasharray=\"3,3\"/>\n",
                                xpos(e->wall_ms, t0, t1), xpos(e->wall_ms, t0, t1), PLOT_H);
    }
    evbuffer_add_printf(b, "</svg>\n");
}

static void groups_table(struct evbuffer *b, const fti_lh_history_t *h, int64_t now)
{
    evbuffer_add_printf(b, "<h2>Groups</h2>\n<table id=\"groups\">\n<tr><th>replica</th>"
                           "<th>state</th><th>since</th><th>step</th><th>steps/s</th>"
                           "<th>failures</th><th>restarts</th><th>heals</th>"
                           "<th>heal bytes</th><th>failed commits</th><th>last failure</th></tr>\n");
    for (size_t i = 0; i < h->n_groups; i++) {
        const fti_lh_gstats_t *g = &h->groups[i];
        const char *st = fti_lh_gstate_name(g->state);
        evbuffer_add_printf(b, "<tr class=\"g-%s\"><td>", st);
        fti_lh_html_escape(b, g->replica_id);
        evbuffer_add_printf(b,
                            "</td><td class=\"state\">%s</td><td>%.1f s ago</td><td>%" PRId64
                            "</td><td>%.1f</td><td>%" PRIu64 "</td><td>%" PRIu64 " (agent %" PRId64
                            ")</td><td>%" PRId64 "</td><td>%" PRId64 "</td><td>%" PRId64
                            "</td><td class=\"why\">",
                            st, (double)(now - g->state_since_ms) / 1000.0, g->step,
                            g->steps_per_s, g->failures, g->restarts, g->reported_restarts,
                            g->heals, g->heal_bytes, g->commit_failures);
        fti_lh_html_escape(b, g->last_failure);
        evbuffer_add_printf(b, "</td></tr>\n");
    }
    evbuffer_add_printf(b, "</table>\n");
}

static void sdc_table(struct evbuffer *b, const fti_lh_snapshot_t *s);

void fti_lh_dash_html(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    const fti_lh_history_t *h = s->history;
    if (h == NULL) {
        evbuffer_add_printf(b, "<p>History unavailable (out of memory).</p>\n");
        return;
    }
    int64_t t0, t1;
    span(h, s->wall_ms, &t0, &t1);
    evbuffer_add_printf(b, "<style>tr.g-dead td.state{color:#c00;font-weight:bold}"
                           "tr.g-silent td.state{color:#f57900}svg{display:block}</style>\n");
    timeline(b, h, t0, t1);
    plot(b, h, t0, t1, 0);
    plot(b, h, t0, t1, 1);
    groups_table(b, h, s->wall_ms);
    sdc_table(b, s);
}

static void json_events(struct evbuffer *b, const fti_lh_history_t *h)
{
    evbuffer_add_printf(b, "\"events\":[");
    for (size_t i = 0; i < h->n_events; i++) {
        const fti_lh_event_t *e = fti_lh_history_event_at(h, i);
        evbuffer_add_printf(b, "%s\n{\"wall_ms\":%" PRId64 ",\"kind\":\"%s\",\"replica_id\":",
                            i ? "," : "", e->wall_ms, fti_lh_event_name(e->kind));
        fti_lh_json_string(b, e->replica_id);
        evbuffer_add_printf(b, ",\"quorum_id\":%" PRId64 ",\"value\":%" PRId64 "}", e->quorum_id,
                            e->value);
    }
    evbuffer_add_printf(b, "]");
}

static const char *verdict_name(int v)
{
    return v == FTI_SDC_MINORITY ? "minority" : v == FTI_SDC_TIE ? "tie" : "agree";
}

/* `,"sdc":[...]`: the SDC reports (lighthouse/sdc.h), oldest first. */
static void sdc_json(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    evbuffer_add_printf(b, ",\"sdc_checks\":%" PRIu64 ",\"sdc\":[", s->sdc_checks);
    for (size_t i = 0; i < s->n_sdc_reports; i++) {
        const fti_sdc_report_t *r = &s->sdc_reports[i];
        evbuffer_add_printf(b, "%s\n{\"wall_ms\":%" PRId64 ",\"group\":", i ? "," : "",
                            r->wall_ms);
        fti_lh_json_string(b, r->replica_id);
        evbuffer_add_printf(b, ",\"step\":%" PRId64 ",\"group_rank\":%d,\"buffer\":",
                            r->f.step, (int)r->f.group_rank);
        fti_lh_json_string(b, r->f.buffer);
        evbuffer_add_printf(b, ",\"verdict\":\"%s\",\"other\":", verdict_name(r->f.verdict));
        fti_lh_json_string(b, r->f.other);
        evbuffer_add_printf(b, ",\"agree\":%d,\"of\":%d}", r->f.agree, r->f.of);
    }
    evbuffer_add_printf(b, "]");
}

/* The SDC reports as a table (none: nothing). */
static void sdc_table(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    if (s->n_sdc_reports == 0)
        return;
    evbuffer_add_printf(b, "<h2>Silent data corruption</h2>\n<table id=\"sdc\">\n<tr>"
                           "<th>when</th><th>group</th><th>step</th><th>group rank</th>"
                           "<th>buffer</th><th>verdict</th><th>compared with</th></tr>\n");
    for (size_t i = s->n_sdc_reports; i-- > 0;) {
        const fti_sdc_report_t *r = &s->sdc_reports[i];
        evbuffer_add_printf(b, "<tr><td>%.1f s ago</td><td>",
                            (double)(s->wall_ms - r->wall_ms) / 1000.0);
        fti_lh_html_escape(b, r->replica_id);
        evbuffer_add_printf(b, "</td><td>%" PRId64 "</td><td>%d</td><td>", r->f.step,
                            (int)r->f.group_rank);
        fti_lh_html_escape(b, r->f.buffer);
        evbuffer_add_printf(b, "</td><td>%s</td><td>", verdict_name(r->f.verdict));
        fti_lh_html_escape(b, r->f.other);
        evbuffer_add_printf(b, "</td></tr>\n");
    }
    evbuffer_add_printf(b, "</table>\n");
}

void fti_lh_dash_json(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    const fti_lh_history_t *h = s->history;
    if (h == NULL)
        return;
    evbuffer_add_printf(b, ",\"history\":{\"events_total\":%" PRIu64 ",", h->events_total);
    json_events(b, h);
    sdc_json(b, s);
    evbuffer_add_printf(b, ",\"samples\":[");
    for (size_t i = 0; i < h->n_samples; i++) {
        const fti_lh_sample_t *p = fti_lh_history_sample_at(h, i);
        evbuffer_add_printf(b,
                            "%s{\"wall_ms\":%" PRId64 ",\"steps_per_s\":%.3f,\"participants\":%" PRId64
                            ",\"max_step\":%" PRId64 "}",
                            i ? "," : "", p->wall_ms, p->steps_per_s, p->participants, p->max_step);
    }
    evbuffer_add_printf(b, "],\"groups\":[");
    for (size_t i = 0; i < h->n_groups; i++) {
        const fti_lh_gstats_t *g = &h->groups[i];
        evbuffer_add_printf(b, "%s\n{\"replica_id\":", i ? "," : "");
        fti_lh_json_string(b, g->replica_id);
        evbuffer_add_printf(b,
                            ",\"state\":\"%s\",\"state_since_ms\":%" PRId64 ",\"step\":%" PRId64
                            ",\"steps_per_s\":%.3f,\"failures\":%" PRIu64 ",\"restarts\":%" PRIu64
                            ",\"reported_restarts\":%" PRId64 ",\"heals\":%" PRId64
                            ",\"heal_bytes\":%" PRId64 ",\"commit_failures\":%" PRId64
                            ",\"last_failure\":",
                            fti_lh_gstate_name(g->state), g->state_since_ms, g->step,
                            g->steps_per_s, g->failures, g->restarts, g->reported_restarts,
                            g->heals, g->heal_bytes, g->commit_failures);
        fti_lh_json_string(b, g->last_failure);
        evbuffer_add_printf(b, "}");
    }
    evbuffer_add_printf(b, "]}");
}

/* One per-group metric: name, type, help, and the value of group g. */
struct gmetric {
    const char *name, *type, *help;
};

static double gvalue(const fti_lh_gstats_t *g, size_t k)
{
    switch (k) {
    case 0: return (double)g->step;
    case 1: return g->steps_per_s;
    case 2: return (double)g->failures;
    case 3: return (double)g->restarts;
    case 4: return (double)g->reported_restarts;
    case 5: return (double)g->heals;
    case 6: return (double)g->heal_bytes;
    case 7: return (double)g->commit_failures;
    case 9: return (double)g->sdc_mismatches;
    case 10: return g->state == FTI_LH_G_FINALIZED ? 1.0 : 0.0;
    default: return g->state == FTI_LH_G_ALIVE ? 1.0 : 0.0;
    }
}

/* A label value, escaped (backslash, quote, newline). */
static void label(struct evbuffer *b, const char *v)
{
    for (const char *c = v; *c; c++) {
        if (*c == '\\' || *c == '"')
            evbuffer_add_printf(b, "\\%c", *c);
        else if (*c == '\n')
            evbuffer_add_printf(b, "\\n");
        else
            evbuffer_add(b, c, 1);
    }
}

void fti_lh_metric_series(struct evbuffer *b, const char *name, const char *job,
                          const char *group)
{
    evbuffer_add_printf(b, "%s{job=\"", name);
    label(b, job);
    if (group) {
        evbuffer_add_printf(b, "\",group=\"");
        label(b, group);
    }
    evbuffer_add_printf(b, "\"");
}

void fti_lh_dash_metrics(struct evbuffer *b, const fti_lh_snapshot_t *s)
{
    static const struct gmetric m[] = {
        {"ftmpi_group_step", "gauge", "Last step the group asked a quorum with."},
        {"ftmpi_group_steps_per_second", "gauge", "Steps per second over the last sample."},
        {"ftmpi_group_failures_total", "counter", "Times the group died or went silent."},
        {"ftmpi_group_restarts_total", "counter", "New incarnations of the group seen."},
        {"ftmpi_group_agent_restarts", "gauge", "Restarts the group reports (FTMPI_RESTART_COUNT)."},
        {"ftmpi_group_heals", "gauge", "Heals the group's current process reported."},
        {"ftmpi_group_heal_bytes", "gauge", "Bytes the group's current process healed."},
        {"ftmpi_group_commit_failures_total", "counter", "Failed commits the group reported."},
        {"ftmpi_group_alive", "gauge", "1 while the group is alive (not dead, silent or gone)."},
        {"ftmpi_group_sdc_mismatches_total", "counter",
         "SDC checks whose fingerprints of the group disagreed with the majority or tied."},
        {"ftmpi_group_finished", "gauge",
         "1 once the group finalized (FT_Finalize): gone because it is done, not lost."},
    };
    const fti_lh_history_t *h = s->history;
    if (h == NULL)
        return;
    for (size_t k = 0; k < FTI_ARRAY_SIZE(m); k++) {
        evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", m[k].name, m[k].help, m[k].name,
                            m[k].type);
        for (size_t i = 0; i < h->n_groups; i++) {
            fti_lh_metric_series(b, m[k].name, s->job, h->groups[i].replica_id);
            evbuffer_add_printf(b, "} %.6g\n", gvalue(&h->groups[i], k));
        }
    }
    evbuffer_add_printf(b, "# HELP ftmpi_lighthouse_sdc_checks_total SDC comparisons of groups' "
                           "fingerprints at one step.\n# TYPE ftmpi_lighthouse_sdc_checks_total "
                           "counter\nftmpi_lighthouse_sdc_checks_total %" PRIu64 "\n",
                        s->sdc_checks);
    evbuffer_add_printf(b, "# HELP ftmpi_lighthouse_sdc_groups Groups whose SDC fingerprints "
                           "wait for a check or whose minority verdict is kept.\n# TYPE "
                           "ftmpi_lighthouse_sdc_groups gauge\nftmpi_lighthouse_sdc_groups %zu\n",
                        s->sdc_groups);
    evbuffer_add_printf(b, "# HELP ftmpi_lighthouse_events_total Events recorded in the history.\n"
                           "# TYPE ftmpi_lighthouse_events_total counter\n"
                           "ftmpi_lighthouse_events_total %" PRIu64 "\n",
                        h->events_total);
}
