/*
 * dashboard.h - the history parts of the lighthouse's HTTP pages (http.c
 * serves them): an inline-SVG timeline of events and plots of the step
 * rate and the participants over time for GET /, the history in
 * /status.json, per-group counters in /metrics.  All drawn on the server
 * from one snapshot (no external script or library; the page works with
 * scripts off).
 */
#ifndef FTI_LH_DASHBOARD_H
#define FTI_LH_DASHBOARD_H

#include "lighthouse/lighthouse.h"

struct evbuffer;

/* HTML: the timeline, the two plots and the groups' table. */
void fti_lh_dash_html(struct evbuffer *b, const fti_lh_snapshot_t *s);

/* JSON: `,"history":{...}` (to go inside the status object). */
void fti_lh_dash_json(struct evbuffer *b, const fti_lh_snapshot_t *s);

/* Prometheus text: the per-group metrics (ftmpi_group_*). */
void fti_lh_dash_metrics(struct evbuffer *b, const fti_lh_snapshot_t *s);

/* Starts a sample of every group family of /metrics (ftmpi_group_*,
 * ftmpi_recovery_*, ftmpi_rank_*; ftmpi_job_* with group NULL): name{job="..",
 * group=".." with the values escaped; the caller adds labels of its own and
 * closes the braces.  One label set for a group: job and group (its
 * replica id). */
void fti_lh_metric_series(struct evbuffer *b, const char *name, const char *job,
                          const char *group);

/* s escaped for HTML text and attributes (& < > " ') into b. */
void fti_lh_html_escape(struct evbuffer *b, const char *s);
/* s as a JSON string literal, quotes included (fti_json_escape), into b. */
void fti_lh_json_string(struct evbuffer *b, const char *s);

#endif
