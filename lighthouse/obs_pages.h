/*
 * obs_pages.h - the recoveries, failed steps, rank counters and goodput on
 * the lighthouse's HTTP pages (issue 26; http.c serves them, recoveries.h
 * keeps them).  Drawn from one snapshot.
 *
 * Goodput: committed steps per second over the healthy rate.  The
 * committed rate is the quorum's max step advance over the last
 * FTI_LH_GOODPUT_WINDOW_MS of the history's samples (history.h, one a
 * second); the healthy rate is the median of the per-sample rates over the
 * whole history (15 min) taken only where nothing was wrong: the step
 * advanced, the participants did not change, and no reported recovery
 * overlaps the interval.  Unknown (no sample line) until both exist.
 */
#ifndef FTI_LH_OBS_PAGES_H
#define FTI_LH_OBS_PAGES_H

#include <stdbool.h>

#include "lighthouse/lighthouse.h"

#define FTI_LH_GOODPUT_WINDOW_MS 60000
#define FTI_LH_DASH_RECOVERIES 10 /* recoveries the dashboard lists */
#define FTI_LH_DASH_FAILS 20      /* failed steps the dashboard lists */

struct evbuffer;

/* The committed and healthy rates (steps/s); false while unknown. */
bool fti_lh_goodput(const fti_lh_snapshot_t *s, double *committed_p, double *healthy_p);

/* Prometheus text: ftmpi_recovery_*, ftmpi_rank_*, ftmpi_job_*. */
void fti_lh_obs_metrics(struct evbuffer *b, const fti_lh_snapshot_t *s);
/* HTML: the last recoveries' breakdown and the failed steps' reasons. */
void fti_lh_obs_html(struct evbuffer *b, const fti_lh_snapshot_t *s);
/* JSON: `,"recoveries":[...],"failed_steps":[...],"goodput":...`. */
void fti_lh_obs_json(struct evbuffer *b, const fti_lh_snapshot_t *s);

#endif
