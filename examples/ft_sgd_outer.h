/*
 * ft_sgd_outer.h - ft_sgd's --localsgd H and --diloco H: the training loop
 * on the FT_Outer_* calls (ftmpi.h).  ft_sgd.c gives it the inner step (a
 * callback: gradient of the group's batch, in-group sum, SGD update of the
 * parameters) and the printing and fault-injection settings.
 */
#ifndef FT_SGD_OUTER_H
#define FT_SGD_OUTER_H

#include <stdint.h>

#include "ftmpi.h"

struct sgd_outer_cfg {
    int diloco;         /* 0: LocalSGD */
    long sync_every;    /* H */
    double lr, mu;      /* DiLoCo's outer step */
    long inner_steps;   /* train until FT_Step() reaches 1 + ceil(inner_steps / H) */
    long max_attempts;  /* inner steps at most */
    long print_every;   /* a step line every K committed syncs */
    int rank;           /* group rank: rank 0 prints */
    int die_me;         /* --die-rank is this rank */
    long die_at_sync;   /* -1 none */
    const char *die_where; /* "compute" (after the sync's quorum), "commit"
                            * (before its vote) or "inner" (halfway to the
                            * next sync after sync die_at_sync committed) */
};

/* One inner step on the data at `index` (the quorum of the last sync had
 * `participants` groups, this one at `replica_rank`); *loss_p the batch's
 * loss.  0, or 1 when the group was lost. */
typedef int (*sgd_inner_fn)(void *ctx, int64_t index, int participants, int replica_rank,
                            float *loss_p);

/* Creates *outer_p (freed by the caller after FT_Finalize), registers the
 * n floats at w and trains.  *attempts_p: inner steps run.  0; 1 when the
 * group was lost; 2 when the lighthouse killed it (FT_ERR_KILLED). */
int sgd_outer_train(const struct sgd_outer_cfg *cfg, float *w, long n, sgd_inner_fn inner,
                    void *ctx, FT_Outer *outer_p, long *attempts_p);

#endif
