/*
 * step_quorum.c - the parts of FT_Quorum (DESIGN section 4, see step.h):
 * the group's quorum exchange around its manager's round, this rank's
 * results, failure counting, the slice through the backend table and
 * healing.
 */
#include "step/step.h"

#include <inttypes.h>
#include <stdlib.h>

#include "ftmpi.h"
#include "base/error.h"
#include "base/log.h"
#include "comm/affinity.h"
#include "comm/slice.h"
#include "base/util.h"

/* Compact replies (the group's own results, one per group rank, instead of
 * every member) keep a reply from growing with the number of groups; a
 * backend that builds its slice from the members' world ranks needs them
 * all, and so does mode B's results. */
static bool want_compact(const struct fti_step *s)
{
    return !s->mode->full_members && !(s->world.backend->needs & FTI_COMM_NEEDS_WORLD);
}

/* Group rank 0: gathers the group's asks and runs the manager's round.
 * Returns the status to broadcast; *buf_p and *len_p hold the packed
 * response on success. */
static int manager_round(struct fti_step *s, const fti_quorum_ask_t *mine, void **buf_p,
                         size_t *len_p)
{
    fti_quorum_ask_t *all = calloc((size_t)s->group_size, sizeof(*all));
    if (all == NULL)
        return FT_ERR_NO_MEMORY;
    int rc = fti_group_gather(s->group, mine, sizeof(*mine), all,
                              fti_now_ms() + s->cfg->timeout_ms);
    if (rc != FT_SUCCESS) {
        /* a rank that does not show up: the broadcast tells the others
         * what that means (mode B: the group is lost) */
        rc = s->mode->group_failure(rc);
    } else {
        fti_manager_round_t r = {
            .address = s->my_addr,
            .commit_failures = s->commit_failures,
            .data = s->world.member_data,
            .data_len = s->world.member_data_len,
            .compact = want_compact(s),
            .init_sync = s->world.init_sync,
            .timeout_ms = s->cfg->quorum_timeout_ms,
            .server = s->server,
            .sdc_names = s->sdc.names,
            .n_sdc_names = s->sdc.n_names,
        };
        rc = fti_manager_round(s->manager, all, s->group_size, &r, buf_p, len_p);
    }
    free(all);
    return rc;
}

int fti_step_exchange(struct fti_step *s, int flags, Ftmpi__LighthouseQuorumResponse **resp_p)
{
    fti_quorum_ask_t mine = {.step = s->step,
                             .shrink_only = (flags & FT_QUORUM_SHRINK_ONLY) != 0,
                             .metrics = s->obs.metrics};
    fti_strlcpy(mine.metrics.address, s->my_addr, sizeof(mine.metrics.address));
    fti_step_sdc_ask(&s->sdc, s->cfg, s->heal, s->step, &mine);
    void *got = NULL;
    size_t got_len = 0;
    int status, rc;

    if (s->group_rank == 0) {
        void *buf = NULL;
        size_t len = 0;
        status = manager_round(s, &mine, &buf, &len);
        rc = fti_group_bcast(s->group, status, buf, status == FT_SUCCESS ? len : 0, &status, &got,
                             &got_len, fti_now_ms() + s->cfg->timeout_ms);
        free(buf);
    } else {
        int grc = fti_group_gather(s->group, &mine, sizeof(mine), NULL, 0);
        /* the broadcast also after a failed send: the group's sequence of
         * operations must not depend on local outcomes */
        rc = fti_group_bcast(s->group, 0, NULL, 0, &status, &got, &got_len,
                             fti_now_ms() + s->cfg->quorum_timeout_ms + s->cfg->timeout_ms +
                                 s->mode->quorum_bcast_slack_ms);
        if (grc != FT_SUCCESS) {
            if (rc == FT_SUCCESS)
                free(got);
            rc = grc;
        }
    }
    int why = rc;
    if (rc != FT_SUCCESS) {
        rc = s->mode->group_failure(rc);
    } else if (status != FT_SUCCESS) {
        free(got);
        rc = why = status;
    }
    if (rc == FT_ERR_GROUP_LOST)
        return fti_step_group_lost(s, why);
    if (rc != FT_SUCCESS)
        return rc;
    rc = fti_quorum_unpack(got, got_len, resp_p);
    free(got);
    return rc;
}

int fti_step_results(const struct fti_step *s, const Ftmpi__LighthouseQuorumResponse *resp,
                     fti_quorum_result_t *res_p)
{
    const Ftmpi__Quorum *q = resp->quorum;
    /* compact: the lighthouse computed the results of each group rank; a
     * lighthouse that does not know compact replies sent the members */
    bool compact = resp->n_results > 0;
    fti_quorum_result_t res;
    int rc;
    if (compact && (size_t)s->group_rank >= resp->n_results)
        rc = FT_ERR_BAD_MESSAGE;
    else if (compact)
        rc = fti_results_from_msg(resp->results[s->group_rank], &res);
    else
        rc = fti_results_compute(q, s->world.replica_id, s->group_rank, s->world.init_sync, &res);
    if (rc == FT_SUCCESS && compact && res.quorum_id != q->quorum_id)
        rc = FT_ERR_BAD_MESSAGE;
    if (rc != FT_SUCCESS) {
        FTI_WARN("FT_Quorum: quorum %" PRId64 " has no place for this group: %s", q->quorum_id,
                 FT_Error_string(rc));
        return FT_ERR_QUORUM;
    }
    fti_results_apply_spares(&res, s->cfg->world_mode == FTI_WORLD_FIXED_WITH_SPARES
                                       ? s->cfg->min_replicas
                                       : 0);
    *res_p = res;
    return FT_SUCCESS;
}

/* s->members: the quorum's replica ids in replica-rank order (a full
 * reply's participants and a compact one's member_ids are both sorted by
 * replica id, as replica ranks are); empty when the reply names none. */
static void note_members(struct fti_step *s, const Ftmpi__LighthouseQuorumResponse *resp)
{
    fti_members_t m = {NULL, 0};
    fti_members_free(&s->members);
    if (resp->n_results == 0) {
        if (fti_members_of(resp->quorum, &m) != FT_SUCCESS)
            return; /* unknown: the error lines name the replica rank only */
    } else if (resp->n_member_ids > 0) {
        if ((m.m = calloc(resp->n_member_ids, sizeof(*m.m))) == NULL)
            return;
        m.n = resp->n_member_ids;
        for (size_t i = 0; i < m.n; i++) /* cut to fit, as fti_members_of does */
            (void)fti_strlcpy(m.m[i].replica_id, resp->member_ids[i], sizeof(m.m[i].replica_id));
    }
    s->members = m;
}

bool fti_step_count_failure(struct fti_step *s, const Ftmpi__LighthouseQuorumResponse *resp,
                            const fti_quorum_result_t *res)
{
    note_members(s, resp);
    bool changed = !s->have_quorum || res->quorum_id != s->res.quorum_id;
    if (resp->n_results > 0) {
        /* compact: the lighthouse counted; no member list is kept */
        fti_members_free(&s->prev_members);
        return fti_members_dropped(resp->dropped, changed, s->have_quorum);
    }
    fti_members_t cur;
    if (fti_members_of(resp->quorum, &cur) != FT_SUCCESS)
        return false; /* keeps the old list */
    bool lost = fti_members_lost(&s->prev_members, &cur);
    fti_members_free(&s->prev_members);
    s->prev_members = cur;
    return lost;
}

void fti_step_collective_failed(struct fti_step *s, int rc)
{
    int peer = -1, n = s->res.replica_world_size;
    char addr[FTI_ADDRESS_SIZE] = "";
    const char *id = NULL;
    if (fti_comm_failed_peer(s->slice, &peer, addr, sizeof(addr)) != FT_SUCCESS || peer < 0)
        peer = -1;
    if (peer >= 0 && s->members.n == (size_t)n && peer < n)
        id = s->members.m[peer].replica_id;
    if (peer >= 0)
        FTI_ERROR("FT_Allreduce: the connection to replica %s (replica rank %d of %d, %s) broke "
                  "in quorum %" PRId64 ": %s",
                  id ? id : "?", peer, n, addr[0] ? addr : "address unknown", s->res.quorum_id,
                  fti_error_name(rc));
    else
        FTI_ERROR("FT_Allreduce: the %s slice of quorum %" PRId64 " (replica rank %d of %d) "
                  "failed: %s (%s)",
                  /* auto's slice is the backend it chose */
                  s->slice != NULL ? s->slice->ops->name : s->world.backend->name,
                  s->res.quorum_id, s->res.replica_rank, n, fti_error_name(rc), FT_Error_string(rc));
    fti_event_collective_failed(s->elog, s->step, s->res.quorum_id, peer, id,
                                addr[0] ? addr : NULL, rc);
    fti_obs_collective_failed(&s->obs, rc, id, s->step);
}

/* Where a child-process backend (baby-*) starts its child: FTMPI_BABY_PATH,
 * and with FTMPI_AFFINITY the cores and NIC environment hwloc picks for
 * this rank's node-local index (OMPI_COMM_WORLD_LOCAL_RANK, else 0).
 * Without a GPU the child keeps the rank's binding. */
static void child_placement(const struct fti_step *s, fti_comm_rendezvous_t *r,
                            fti_affinity_t *aff, char env_buf[2][FTI_REASON_SIZE],
                            const char *env[3])
{
    r->child_path = s->cfg->baby_path;
    if (!s->cfg->affinity)
        return;
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int local_rank = lr != NULL ? atoi(lr) : 0;
    if (fti_affinity_pick(NULL, local_rank, getenv("CUDA_VISIBLE_DEVICES"), aff) != FT_SUCCESS)
        return;
    r->child_cpus = aff->cpus;
    int n = fti_affinity_env(aff, env_buf);
    for (int i = 0; i < n && i < 2; i++)
        env[i] = env_buf[i];
    r->child_env = env;
}

int fti_step_rebuild_slice(struct fti_step *s, const Ftmpi__Quorum *q)
{
    unsigned needs = s->world.backend->needs;
    fti_comm_destroy(s->slice);
    s->slice = NULL;
    s->slice_quorum_id = s->res.quorum_id;
    fti_comm_rendezvous_t r = {
        .quorum_id = s->res.quorum_id,
        .group_rank = s->group_rank,
        .replica_rank = s->res.replica_rank,
        .size = s->res.replica_world_size,
        .chunk_bytes = (size_t)s->cfg->chunk_bytes,
        .timeout_ms = s->cfg->timeout_ms,
        .offer_ucx = s->cfg->ucx != 0,
        .store_address = s->res.store_address,
        .bind_host = s->world.bind_host,
        .connect_timeout_ms = s->cfg->connect_timeout_ms,
        .key = fti_config_key(s->cfg),
        .world_ctx = s->world.mb.mpi,
    };
    fti_affinity_t aff;
    char env_buf[2][FTI_REASON_SIZE];
    const char *env[3] = {NULL, NULL, NULL};
    if (needs & FTI_COMM_NEEDS_CHILD)
        child_placement(s, &r, &aff, env_buf, env);
    int *ranks = NULL, rc = FT_SUCCESS;
    if (needs & FTI_COMM_NEEDS_WORLD) {
        ranks = malloc((size_t)r.size * sizeof(*ranks));
        rc = ranks == NULL ? FT_ERR_NO_MEMORY : fti_results_world_ranks(q, s->group_rank, ranks);
        r.world_ranks = ranks;
    }
    if (rc == FT_SUCCESS)
        rc = fti_comm_create(s->world.backend, &r, fti_now_ms() + s->cfg->timeout_ms, &s->slice);
    free(ranks);
    if (rc != FT_SUCCESS) {
        s->slice = NULL;
        FTI_DEBUG("quorum %" PRId64 ": %s slice of %d not built: %s", r.quorum_id,
                  s->world.backend->name, r.size, FT_Error_string(rc));
    }
    /* the manager drops the rendezvous keys of every older quorum from its
     * own store, whether their builds (or this one) failed or not */
    if ((needs & FTI_COMM_NEEDS_STORE) && s->group_rank == 0)
        (void)fti_slice_forget_older(s->my_addr, fti_config_key(s->cfg), s->res.quorum_id,
                                     s->cfg->connect_timeout_ms, s->cfg->timeout_ms);
    return rc;
}

/* Heals the group from its sources, every rank or none: each rank fetches
 * and verifies its copy into staging memory (fti_heal_stage; its state is
 * untouched), the group decides whether every rank staged its copy (group
 * rank 0's decision, fti_group_decide: an AND of the ranks' votes) and
 * only then does every rank install its copy (a local copy that cannot
 * fail); otherwise every rank discards its copy and keeps its state, its
 * step and its serving, and the group, still behind, heals again at the
 * next quorum.  res.heal is the group's, so every rank of a healing group
 * comes here exactly once per FT_Quorum and the group's operations stay
 * matched.  Deadlines: rank 0 takes the votes until one window after its
 * own heal deadline, the others wait for the decision two windows after
 * theirs (the ranks may start up to a window apart).  A rank that gets no
 * decision cannot know whether rank 0 installed (both modes, as in
 * FT_Commit): it installs nothing and the group is lost; mode B: a vote
 * that missed rank 0's deadline means a dead rank, the group is lost.
 * heal/serve.c logged a failure of this rank's own transfer. */
/* Whether this heal writes the registered memory directly
 * (FTMPI_HEAL_INSTALL): auto = while the process has committed and healed
 * nothing in mode A, where a group that fails its heal is restarted and
 * makes that state again. */
static bool heal_direct(const struct fti_step *s)
{
    switch (s->cfg->heal_install) {
    case FTI_HEAL_INSTALL_DIRECT:
        return true;
    case FTI_HEAL_INSTALL_STAGED:
        return false;
    default:
        return s->fresh && s->mode->direct_heal_when_fresh;
    }
}

/* A direct heal the group did not install: some rank's registered memory
 * may hold neither the old step nor the new one (this one's did when
 * torn), and no rank can tell whether another's does, so every rank of the
 * group leaves.  Logged here. */
static int heal_torn(struct fti_step *s, bool torn, int why)
{
    FTI_ERROR("direct heal of step %" PRId64 " (FTMPI_HEAL_INSTALL) failed: %s; %s, so this "
              "group's state is lost: it leaves (ftmpi-run restarts it)",
              s->res.max_step, FT_Error_string(why),
              torn ? "this rank's buffers are partly overwritten"
                   : "the group's buffers may be partly overwritten");
    return fti_step_group_lost(s, why);
}

int fti_step_heal(struct fti_step *s)
{
    fti_heal_opts_t o = {
        .key = fti_config_key(s->cfg),
        .connect_timeout_ms = s->cfg->connect_timeout_ms,
        .max_reply = (size_t)s->cfg->max_frame_bytes,
        .direct = heal_direct(s), /* chunk_bytes 0: FTI_HEAL_CHUNK_BYTES */
        .rma = s->heal_rma,
    };
    fti_heal_stats_t hs;
    fti_heal_staged_h staged = NULL;
    int64_t t0 = fti_now_ms(), deadline = t0 + s->cfg->heal_timeout_ms, win = s->cfg->timeout_ms;
    /* striped over every source the results list (the primary alone from
     * a lighthouse that lists none) */
    const char *srcs[FTI_RESULTS_MAX_SRC];
    int n_src = s->res.n_recover_src > 0 ? s->res.n_recover_src : 1;
    srcs[0] = s->res.recover_src_manager_address;
    for (int j = 1; j < n_src; j++)
        srcs[j] = s->res.recover_src_manager_addresses[j];
    int rc = fti_heal_stage_multi(s->heal, srcs, n_src, s->group_rank, s->res.max_step, &o,
                                  deadline, &staged, &hs);
    int decision = FT_ERR_ABORTED;
    int drc = fti_group_decide(s->group, rc == FT_SUCCESS, deadline + win, deadline + 2 * win,
                               &decision);
    bool lost = drc != FT_SUCCESS ||
                (decision == FT_ERR_TIMEOUT &&
                 s->mode->group_failure(decision) == FT_ERR_GROUP_LOST);
    bool install = rc == FT_SUCCESS && !lost && decision == FT_SUCCESS;
    if (install)
        hs.install_ms = fti_heal_install(s->heal, staged);
    else
        fti_heal_discard(staged);
    /* written (FT_Heal_count), even if the quorum fails after this */
    if (install || (o.direct && (hs.torn || rc == FT_SUCCESS)))
        s->replaced++;
    /* direct: a heal the group did not install is no step of this group */
    if (o.direct && !install) {
        int why = rc != FT_SUCCESS ? rc : drc != FT_SUCCESS ? drc : decision;
        fti_event_heal(s->elog, s->step, s->res.max_step, hs.bytes, fti_now_ms() - t0,
                       hs.source, why);
        return heal_torn(s, hs.torn || rc == FT_SUCCESS, why);
    }
    if (hs.install_ms < 0) { /* a copy into device memory failed: the state is partly lost */
        fti_event_heal(s->elog, s->step, s->res.max_step, hs.bytes, hs.ms, hs.source,
                       (int)hs.install_ms);
        return fti_step_group_lost(s, (int)hs.install_ms);
    }
    hs.ms = fti_now_ms() - t0;
    if (rc == FT_SUCCESS && drc != FT_SUCCESS)
        rc = drc;
    else if (rc == FT_SUCCESS && decision != FT_SUCCESS)
        rc = decision; /* another rank failed, a vote came late, or rank 0's own error */
    fti_event_heal(s->elog, s->step, s->res.max_step, hs.bytes, hs.ms, hs.source, rc);
    if (lost)
        return fti_step_group_lost(s, drc != FT_SUCCESS ? drc : decision);
    if (rc != FT_SUCCESS) {
        /* staged only: the registered memory still holds s->step, served as before */
        FTI_DEBUG("heal from %s (%s) failed: %s (the group's decision: %s); the step stays "
                  "%" PRId64,
                  s->res.recover_src_replica_id, hs.source, FT_Error_string(rc),
                  FT_Error_string(decision), s->step);
        return rc;
    }
    /* a restarted group's first heal is said at the default level: the
     * user sees that the restart worked and what it cost */
    bool restarted = s->cfg->restart_count > 0 && s->heals == 0;
    char why[64] = "";
    if (restarted)
        snprintf(why, sizeof(why), "restart %d of this group: ", s->cfg->restart_count);
    FTI_LOG(restarted ? FTI_LOG_WARN : FTI_LOG_INFO,
            "%shealed step %" PRId64 " from %s (%s) and %d other source(s): %" PRIu64
            " bytes in %" PRId64 " ms (install %" PRId64 " ms)",
            why, s->res.max_step, s->res.recover_src_replica_id, hs.source,
            hs.sources > 0 ? hs.sources - 1 : 0, hs.bytes, hs.ms, hs.install_ms);
    s->step = s->res.max_step;
    s->fresh = false;
    s->heals++;
    s->heal_bytes += (int64_t)hs.bytes;
    fti_manager_report(s->manager, s->cfg->restart_count, s->heals, s->heal_bytes);
    fti_heal_set_step(s->heal, s->step, true);
    return FT_SUCCESS;
}
