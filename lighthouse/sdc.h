/*
 * sdc.h - the lighthouse's silent data corruption check (DESIGN section
 * 11): it compares the fingerprints of the groups' registered state that
 * ride on their quorum requests (QuorumMember.sdc_prints, every
 * FTMPI_SDC_EVERY committed steps) among the members of an issued quorum
 * at the same step.
 *
 * Pure: no sockets, no clock (the caller passes the wall time it records),
 * no logging.  The rules, for the n >= 2 members of one quorum whose
 * fingerprints are of the step they ask with, bucketed by that step:
 *
 *   1. two groups agree when they sent the same (group rank, buffer index,
 *      name, sum) entries; groups that agree form a class.
 *   2. a class with more than n / 2 groups is the majority: every group
 *      outside it is a minority (verdict FTI_SDC_MINORITY), named with the
 *      first (group rank, buffer) where it differs from the majority.  A
 *      minority group heals from the majority in the same quorum and is no
 *      heal source (control/results.c); it stays a minority (sticky) while
 *      it asks at that step again (its heal failed, the step did not
 *      commit), and is cleared once it asks at another step.
 *   3. no majority and more than one class (2 groups that differ, a 2-2
 *      split, 3 different): every group of the bucket is reported
 *      (FTI_SDC_TIE), named with the first difference from a group of
 *      another class.  Nobody heals; the ranks' FTMPI_SDC_ON_TIE decides.
 *   4. fingerprints are consumed by the quorum that compared them (or that
 *      had the group alone at that step).
 *
 * Bounds: at most FTI_SDC_MAX_PRINTS fingerprints a group (more are
 * refused: FT_ERR_ARG), names cut to FTI_SDC_NAME_SIZE - 1 bytes, at most
 * FTI_SDC_MAX_GROUPS groups with fingerprints waiting, the last
 * FTI_SDC_REPORTS reports kept; a group that dies before its step is
 * judged is forgotten by the server with the rest of it (fti_sdc_forget,
 * fti_sdc_expire).
 *
 * Threads: not thread-safe; the server calls it under its mutex.
 */
#ifndef FTI_LH_SDC_H
#define FTI_LH_SDC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sizes.h"

#define FTI_SDC_NAME_SIZE 64
#define FTI_SDC_MAX_PRINTS 4096
#define FTI_SDC_MAX_GROUPS 100000
#define FTI_SDC_REPORTS 64
#define FTI_SDC_REPORT_SIZE 256

/* verdicts (the SdcVerdict values of ftmpi.proto) */
enum { FTI_SDC_AGREE = 0, FTI_SDC_MINORITY = 1, FTI_SDC_TIE = 2 };

typedef struct fti_sdc_print {
    int32_t group_rank;
    uint32_t index; /* the buffer's registration order */
    char buffer[FTI_SDC_NAME_SIZE];
    uint64_t sum;
} fti_sdc_print_t;

/* ---- the pure comparison ------------------------------------------------ */

/* One group's fingerprints of a step, sorted by (group_rank, index). */
typedef struct fti_sdc_group {
    const char *replica_id;
    const fti_sdc_print_t *prints;
    size_t n;
} fti_sdc_group_t;

/* What the comparison says of one group. */
typedef struct fti_sdc_finding {
    int verdict;           /* FTI_SDC_* */
    bool fresh;            /* false: a sticky minority (rule 2), reported before */
    int64_t step;
    int agree, of;         /* groups of its class (itself included), groups compared */
    int others;            /* groups of the class of `other` (the majority's size) */
    int32_t group_rank;    /* the first difference; -1 when none */
    char buffer[FTI_SDC_NAME_SIZE];
    char other[FTI_REPLICA_ID_SIZE]; /* the group it was compared with */
} fti_sdc_finding_t;

/* Rules 1-3 over n groups of one step: out[i] for g[i] (verdict, agree,
 * of, the difference; step and fresh are left to the caller). */
void fti_sdc_compare(const fti_sdc_group_t *g, size_t n, fti_sdc_finding_t *out);

/* "step S: group rank R, buffer 'B' differs from ID's (the majority's:
 * M of N groups)" (or "(no majority among N groups)") into buf. */
void fti_sdc_describe(const fti_sdc_finding_t *f, char *buf, size_t len);

/* ---- the table of waiting fingerprints ------------------------------- */

typedef struct fti_sdc_state *fti_sdc_h;

/* A report kept for the dashboard. */
typedef struct fti_sdc_report {
    int64_t wall_ms;
    char replica_id[FTI_REPLICA_ID_SIZE];
    fti_sdc_finding_t f;
} fti_sdc_report_t;

int fti_sdc_create(fti_sdc_h *h_p);
void fti_sdc_destroy(fti_sdc_h h); /* NULL-safe */

/* Replica_id's fingerprints of step (its quorum request): replaces the
 * ones it sent before.  p need not be sorted.  FT_ERR_ARG: n over
 * FTI_SDC_MAX_PRINTS or a bad id; FT_ERR_NO_MEMORY (also: too many groups
 * wait); the state is then unchanged. */
int fti_sdc_note(fti_sdc_h h, const char *replica_id, int64_t step, const fti_sdc_print_t *p,
                 size_t n);

/* Forgets replica_id (it finalized, or is gone for longer than the
 * history window). */
void fti_sdc_forget(fti_sdc_h h, const char *replica_id);

/* Forgets every group for which known(replica_id, arg) is false; returns
 * how many went.  Groups with fingerprints waiting or a minority verdict
 * kept (rule 2): fti_sdc_groups. */
size_t fti_sdc_expire(fti_sdc_h h, bool (*known)(const char *replica_id, void *arg), void *arg);
size_t fti_sdc_groups(fti_sdc_h h);

/* Judges the members of an issued quorum (ids and the steps they asked
 * with, n entries): rules 1-4.  out[i] (n entries) is member i's finding
 * (FTI_SDC_AGREE, group_rank -1, when it was not compared).  Each fresh
 * non-agreeing finding is kept as a report at wall_ms.  Returns the
 * number of buckets compared (checks); FT_ERR_NO_MEMORY (< 0) leaves out
 * all FTI_SDC_AGREE. */
int fti_sdc_judge(fti_sdc_h h, const char *const *ids, const int64_t *steps, size_t n,
                  int64_t wall_ms, fti_sdc_finding_t *out);

/* Checks made so far (buckets compared), and the reports (oldest first):
 * copies up to max of them into out and returns how many. */
/* The open verdicts: groups judged a minority (rule 2) that must still
 * heal from the majority at the step they were judged at.  Copies up to
 * max into out (replica_id; f with step, wall_ms 0) and returns how many
 * there are.  A new leader takes them over (server_gate.c, etcd). */
size_t fti_sdc_open(fti_sdc_h h, fti_sdc_report_t *out, size_t max);
/* A former leader's open verdict: replica_id stays a minority while it
 * asks at f->step (rule 2).  Kept through fti_sdc_expire until the group
 * asks again (this lighthouse knows nothing else of it yet).  FT_ERR_ARG
 * (bad id, f not FTI_SDC_MINORITY), FT_ERR_NO_MEMORY. */
int fti_sdc_restore(fti_sdc_h h, const char *replica_id, const fti_sdc_finding_t *f);

uint64_t fti_sdc_checks(fti_sdc_h h);
size_t fti_sdc_reports(fti_sdc_h h, fti_sdc_report_t *out, size_t max);

#endif
