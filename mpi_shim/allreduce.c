/*
 * allreduce.c - MPI_Allreduce under libftmpi_pmpi (DESIGN section 10; see
 * shim.h).
 *
 * Protected: MPI_Allreduce on MPI_COMM_WORLD or a duplicate of it, of a
 * datatype and op the data plane reduces (MPI_FLOAT, MPI_DOUBLE, MPI_INT,
 * MPI_LONG, MPI_INT32_T, MPI_INT64_T, MPI_UINT64_T with MPI_SUM, MPI_PROD,
 * MPI_MAX, MPI_MIN).  Anything else goes straight to MPI; world rank 0
 * says once per (datatype, op) that it is not protected.
 *
 * Two paths.  Until the first failure a call takes the fast one (fast.c):
 * one MPI_Iallreduce on a duplicate of the world made in MPI_Init, polled
 * against FTMPI_TIMEOUT_MS, Open MPI's own non-blocking algorithm, so the
 * result has MPI_Iallreduce's bits, the same on every rank.  Under abort it
 * reduces straight between the caller's buffers (no copy: a failed call
 * aborts the job anyway); under return and continue the input must survive
 * a failed call and the result is kept (below), so it reduces from the
 * caller's input into a library buffer (spare), copies that to recvbuf on
 * success and keeps it as the last result (last and spare swap: a failed
 * call never touches the last good result).  A call that misses its
 * deadline gives its request up to MPI (which may still write the spare:
 * it is leaked, counted) and closes the fast path for good: from then on
 * every call runs as FT_Allreduce over the `mpi` backend's slice of the
 * survivors (point-to-point messages polled against FTMPI_TIMEOUT_MS).
 * MPI may also still read a failed fast call's input for a while: an
 * abandoned request goes on whenever its peers' messages come, which
 * after a death stops at the dead rank's round, but after a deadline
 * missed with every rank alive (a loaded machine) can run to its end
 * during later calls.  A caller (return, continue) that unmaps its input
 * right after such a call could then see MPI fault on it: not handled.
 *
 * One step stays open across calls: MPI_Init asks the first quorum, and a
 * failure-free call is one fast call, no quorum, no commit.  After a
 * failure the survivors close the step (FT_Commit: it fails when the
 * failed call was an FT_Allreduce; after a failed fast call the step has
 * seen no error and commits, on every survivor alike since every
 * survivor's failed call is a fast one, so their steps stay equal), ask a new
 * quorum (FT_Quorum: the lighthouse dropped the dead rank when its
 * connection closed) and agree on one small allreduce over the new slice:
 * who is alive (so the lost world ranks can be named) and how many
 * protected calls each member completed.  A member can have completed the
 * call the others failed (the dead rank's data reached it before the rank
 * died): such members are one call ahead, and they hand their saved copy
 * of that call's result to the members behind, whose call then succeeds
 * with it, so that every survivor makes the same calls with the same
 * results.  Then, per FTMPI_SHIM_ON_FAILURE: abort names the lost ranks
 * and aborts the job; return gives the error (a code of class
 * MPI_ERR_OTHER) and later calls run over the survivors; continue redoes
 * the call over the survivors.  The redo uses the caller's buffers: the
 * `mpi` backend reduces in its own staging memory and copies out only on
 * success, and the fast path into the spare, so a failed call leaves its
 * input where it was.  The copy of each result (its cost) is kept only
 * when the failure mode is not abort.  Members are counted alike on both
 * paths (done), so a member one fast call ahead hands its result over.
 */
#include "mpi_shim/shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "ftmpi.h"
#include "base/log.h"
#include "mode/dropin.h"

/* Re-forming after a failure is tried this many times (each a quorum and
 * one small allreduce) before the call gives up. */
#define SHIM_MAX_REFORMS 4
/* Distinct unprotected (datatype, op) pairs that are reported. */
#define SHIM_MAX_NOTES 32
/* Room for the list of lost ranks in a message. */
#define SHIM_LOST_TEXT 512

static struct {
    int rank, size;
    uint64_t done;          /* protected calls completed: the same on every member */
    unsigned char *alive;   /* per world rank, as the last re-form found */
    int survivors;
    bool failed;            /* a rank was lost */
    bool barrier;           /* the call is fti_shim_Barrier's allreduce of one int */
    bool broken;            /* could not re-form: every protected call fails */
    int err_code;           /* returned after a failure (class MPI_ERR_OTHER) */
    int64_t *sync;          /* size + 2 entries */
    void *last;             /* the last protected call's result (return, continue) */
    size_t last_len, last_cap;
    void *spare;            /* the fast path's output (return, continue), swapped with last */
    size_t spare_cap;
    uint64_t n_protected, n_passed, n_slow;
    uint64_t n_other;       /* protected MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allgather */
} sh;

int fti_shim_start(void)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, &sh.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &sh.size);
    sh.alive = malloc((size_t)sh.size);
    sh.sync = malloc(((size_t)sh.size + 2) * sizeof(*sh.sync));
    if (sh.alive == NULL || sh.sync == NULL)
        return FT_ERR_NO_MEMORY;
    memset(sh.alive, 1, (size_t)sh.size);
    sh.survivors = sh.size;
    sh.err_code = MPI_ERR_OTHER;
    if (PMPI_Add_error_code(MPI_ERR_OTHER, &sh.err_code) == MPI_SUCCESS)
        PMPI_Add_error_string(sh.err_code, "a rank of MPI_COMM_WORLD died (libftmpi_pmpi)");
    else
        sh.err_code = MPI_ERR_OTHER;
    int rc = fti_shim_fast_start();
    if (rc != FT_SUCCESS)
        return rc;
    return FT_Quorum(0); /* the step stays open until a failure */
}

void fti_shim_stats(struct fti_shim_stats *stats_p)
{
    stats_p->protected_calls = sh.n_protected;
    stats_p->passed = sh.n_passed;
    stats_p->fortran = fti_shim_fortran_calls;
    stats_p->slow = sh.n_slow;
    stats_p->other = sh.n_other;
    fti_shim_fast_counts(&stats_p->fast, &stats_p->abandoned, &stats_p->abandoned_bytes);
}

void fti_shim_stop(void)
{
    fti_shim_fast_stop();
    free(sh.spare); /* NULL once leaked to an abandoned request */
    sh.spare = NULL;
    sh.spare_cap = 0;
}

bool fti_shim_saw_failure(void)
{
    return sh.failed;
}

static const char *op_name(MPI_Op op)
{
    static const struct {
        MPI_Op op;
        const char *name;
    } ops[] = {{MPI_SUM, "MPI_SUM"},   {MPI_PROD, "MPI_PROD"}, {MPI_MAX, "MPI_MAX"},
               {MPI_MIN, "MPI_MIN"},   {MPI_LAND, "MPI_LAND"}, {MPI_LOR, "MPI_LOR"},
               {MPI_LXOR, "MPI_LXOR"}, {MPI_BAND, "MPI_BAND"}, {MPI_BOR, "MPI_BOR"},
               {MPI_BXOR, "MPI_BXOR"}, {MPI_MAXLOC, "MPI_MAXLOC"},
               {MPI_MINLOC, "MPI_MINLOC"}, {MPI_REPLACE, "MPI_REPLACE"}};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (ops[i].op == op)
            return ops[i].name;
    return "a user-defined op";
}

/* World rank 0 says once per (datatype, op) that it goes unprotected. */
static void note_unprotected(MPI_Datatype dt, MPI_Op op)
{
    static struct {
        MPI_Datatype dt;
        MPI_Op op;
    } seen[SHIM_MAX_NOTES];
    static int n_seen;
    if (sh.rank != 0)
        return;
    for (int i = 0; i < n_seen; i++)
        if (seen[i].dt == dt && seen[i].op == op)
            return;
    if (n_seen == SHIM_MAX_NOTES)
        return;
    seen[n_seen].dt = dt;
    seen[n_seen].op = op;
    n_seen++;
    char name[MPI_MAX_OBJECT_NAME] = "a derived datatype";
    int len = 0;
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_get_name(dt, name, &len) != MPI_SUCCESS || len == 0)
        snprintf(name, sizeof(name), "a derived datatype");
    FTI_WARN("libftmpi_pmpi: MPI_Allreduce of %s with %s is not protected: it goes straight to "
             "MPI and hangs if a rank dies (protected: MPI_FLOAT, MPI_DOUBLE, MPI_INT, MPI_LONG, "
             "MPI_INT32_T, MPI_INT64_T, MPI_UINT64_T with MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN)",
             name, op_name(op));
}

/* The C datatype a Fortran one is (MPI_DOUBLE_PRECISION, MPI_REAL,
 * MPI_INTEGER and their sized forms), checked by size; dt otherwise. */
static MPI_Datatype c_type(MPI_Datatype dt)
{
    const struct {
        MPI_Datatype f, c;
        size_t size;
    } map[] = {
        {MPI_DOUBLE_PRECISION, MPI_DOUBLE, sizeof(double)},
        {MPI_REAL, MPI_FLOAT, sizeof(float)},
        {MPI_INTEGER, MPI_INT, sizeof(int)},
        {MPI_REAL8, MPI_DOUBLE, sizeof(double)},
        {MPI_REAL4, MPI_FLOAT, sizeof(float)},
        {MPI_INTEGER4, MPI_INT32_T, sizeof(int32_t)},
        {MPI_INTEGER8, MPI_INT64_T, sizeof(int64_t)},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        int sz = 0;
        if (dt == map[i].f)
            return PMPI_Type_size(dt, &sz) == MPI_SUCCESS && (size_t)sz == map[i].size ? map[i].c
                                                                                       : dt;
    }
    return dt;
}

/* FTMPI_SHIM_ON_FAILURE for a call on comm (auto: by its error handler). */
static int failure_mode(MPI_Comm comm)
{
    if (fti_shim_cfg.on_failure != FTI_SHIM_AUTO)
        return fti_shim_cfg.on_failure;
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (PMPI_Comm_get_errhandler(comm, &eh) != MPI_SUCCESS)
        return FTI_SHIM_ABORT;
    bool fatal = eh == MPI_ERRORS_ARE_FATAL;
    PMPI_Errhandler_free(&eh);
    return fatal ? FTI_SHIM_ABORT : FTI_SHIM_RETURN;
}

/* A call completed: counts it, scales sums after a loss
 * (FTMPI_SHIM_RESCALE) and keeps a copy of the result when a failure
 * would not abort. */
static int finish_ok(void *recvbuf, int count, enum fti_dtype dt, enum fti_op op, int mode,
                     bool handed)
{
    size_t bytes = (size_t)count * fti_dtype_size(dt);
    sh.done++;
    sh.n_protected++;
    sh.n_slow++;
    /* a handed-over result is final as the members ahead returned it (they
     * computed it over every rank, before the loss): never scaled again */
    if (!handed && fti_shim_cfg.rescale && sh.survivors < sh.size && op == FTI_OP_SUM) {
        double f = (double)sh.size / sh.survivors;
        for (int i = 0; dt == FTI_DT_DOUBLE && i < count; i++)
            ((double *)recvbuf)[i] *= f;
        for (int i = 0; dt == FTI_DT_FLOAT && i < count; i++)
            ((float *)recvbuf)[i] = (float)(((float *)recvbuf)[i] * f);
    }
    if (mode == FTI_SHIM_ABORT) {
        /* no copy: the kept one is older than this call (the failure mode
         * follows the errhandler, which the program may change) */
        sh.last_len = 0;
        return MPI_SUCCESS;
    }
    if (sh.last_cap < bytes) {
        void *p = realloc(sh.last, bytes);
        if (p == NULL) {
            sh.last_len = 0; /* a member behind would then get no result: re-form fails */
            return MPI_SUCCESS;
        }
        sh.last = p;
        sh.last_cap = bytes;
    }
    if (bytes > 0)
        memcpy(sh.last, recvbuf, bytes);
    sh.last_len = bytes;
    return MPI_SUCCESS;
}

/* Appends world rank r to the text of lost ranks. */
static void add_lost(char *text, size_t len, int r)
{
    size_t used = strlen(text);
    if (used + 16 < len)
        snprintf(text + used, len - used, "%s%d", used ? ", " : "", r);
}

/* Closes the failed step, asks a new quorum and agrees over its slice on
 * who is alive and how many calls each member completed (*min_p, *max_p).
 * lost: the world ranks lost since the last re-form. */
static int reform(char *lost, size_t lost_len, uint64_t *min_p, uint64_t *max_p)
{
    int committed = 0;
    (void)FT_Commit(&committed); /* fails: the step had an error */
    int rc = FT_Quorum(0);
    if (rc != FT_SUCCESS)
        return rc;
    int64_t *v = sh.sync;
    for (int i = 0; i < sh.size; i++)
        v[i] = i == sh.rank;
    v[sh.size] = -(int64_t)sh.done;
    v[sh.size + 1] = (int64_t)sh.done;
    rc = FT_Allreduce(MPI_IN_PLACE, v, sh.size + 2, MPI_INT64_T, MPI_MAX, FT_COMM_REPLICAS);
    if (rc != FT_SUCCESS)
        return rc;
    lost[0] = '\0';
    sh.survivors = 0;
    for (int i = 0; i < sh.size; i++) {
        if (sh.alive[i] && !v[i])
            add_lost(lost, lost_len, i);
        sh.alive[i] = v[i] != 0;
        sh.survivors += v[i] != 0;
    }
    *min_p = (uint64_t)(-v[sh.size]);
    *max_p = (uint64_t)v[sh.size + 1];
    return FT_SUCCESS;
}

/* The members ahead hand the result of the call the members behind failed
 * (bytes of it) to them: a MAX over 64-bit words where the members behind
 * give the lowest word.  behind: this rank is one of them (its result
 * lands in recvbuf). */
static int hand_over(bool behind, void *recvbuf, size_t bytes)
{
    size_t words = (bytes + sizeof(int64_t) - 1) / sizeof(int64_t);
    if (words > (size_t)INT32_MAX)
        return FT_ERR_UNSUPPORTED;
    int64_t *w = malloc((words + 1) * sizeof(*w));
    if (w == NULL)
        return FT_ERR_NO_MEMORY;
    for (size_t i = 0; i < words; i++)
        w[i] = INT64_MIN;
    if (!behind && sh.last_len != bytes) {
        free(w);
        return FT_ERR_INTERNAL;
    }
    if (!behind && bytes > 0 && bytes <= words * sizeof(*w))
        memcpy(w, sh.last, bytes);
    int rc = FT_Allreduce(MPI_IN_PLACE, w, (int)words, MPI_INT64_T, MPI_MAX, FT_COMM_REPLICAS);
    if (rc == FT_SUCCESS && behind && bytes > 0)
        memcpy(recvbuf, w, bytes);
    free(w);
    return rc;
}

static void abort_job(const char *lost, int why)
{
    (void)lost; /* the watchdog's list names them (watch.c) */
    char text[128];
    const char *call = atomic_load(&fti_shim_calls.name);
    snprintf(text, sizeof(text), "had %s (FTMPI_SHIM_ON_FAILURE=abort) in", FT_Error_string(why));
    fti_shim_end_job(call != NULL ? call : "MPI_Allreduce", text);
}

/* After a failed protected call (why): re-form, then what the failure mode
 * says (see the top of this file). */
static int failed_call(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, enum fti_dtype dt, enum fti_op fop, MPI_Comm comm, int why)
{
    int mode = failure_mode(comm);
    size_t bytes = (size_t)count * fti_dtype_size(dt);
    char lost[SHIM_LOST_TEXT];
    sh.failed = true;
    if (mode == FTI_SHIM_ABORT)
        abort_job("", why); /* no re-form: it could wait for a quorum */
    for (int attempt = 0; attempt < SHIM_MAX_REFORMS; attempt++) {
        uint64_t min = 0, max = 0;
        int rc = reform(lost, sizeof(lost), &min, &max);
        if (rc != FT_SUCCESS) {
            FTI_WARN("libftmpi_pmpi: re-forming after a failed MPI_Allreduce failed: %s",
                     FT_Error_string(rc));
            why = rc;
            continue;
        }
        if (lost[0] != '\0' && mode != FTI_SHIM_ABORT)
            FTI_WARN("libftmpi_pmpi: world rank(s) %s lost; MPI_Allreduce goes on over %d of %d "
                     "ranks",
                     lost, sh.survivors, sh.size);
        if (mode == FTI_SHIM_ABORT)
            abort_job(lost, why);
        if (max > min) {
            bool behind = sh.done == min;
            rc = hand_over(behind, recvbuf, bytes);
            if (rc != FT_SUCCESS) {
                why = rc;
                continue;
            }
            if (behind) /* this call's result, complete */
                return finish_ok(recvbuf, count, dt, fop, mode, true);
        } else if (mode == FTI_SHIM_RETURN) {
            return sh.err_code; /* every survivor failed this call alike */
        }
        rc = FT_Allreduce(sendbuf, recvbuf, count, datatype, op, FT_COMM_REPLICAS);
        if (rc == FT_SUCCESS)
            return finish_ok(recvbuf, count, dt, fop, mode, false);
        why = rc;
    }
    if (mode == FTI_SHIM_ABORT)
        abort_job("", why);
    FTI_ERROR("libftmpi_pmpi: MPI_Allreduce cannot go on after a failure (%s): every later "
              "protected call returns an error",
              FT_Error_string(why));
    sh.broken = true;
    return sh.err_code;
}

/* The spare holds at least bytes (at least one); false when out of memory. */
static bool spare_reserve(size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    if (sh.spare_cap >= bytes)
        return true;
    free(sh.spare); /* its contents are never needed: last holds the last result */
    sh.spare = malloc(bytes);
    sh.spare_cap = sh.spare != NULL ? bytes : 0;
    return sh.spare != NULL;
}

/* A protected call on the fast path (see the top of this file). */
static int fast_call(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, enum fti_dtype dt, enum fti_op fop, MPI_Comm comm, int mode)
{
    size_t bytes = (size_t)count * fti_dtype_size(dt);
    bool keep = mode != FTI_SHIM_ABORT;
    if (keep && !spare_reserve(bytes)) {
        /* every rank must take the same path: this one reduces in place,
         * and a failure of this call may leave its input changed */
        FTI_WARN("libftmpi_pmpi: no memory for the copy of a %zu-byte MPI_Allreduce: it runs "
                 "without one (a failure of this call may change its input)",
                 bytes);
        keep = false;
        sh.last_len = 0; /* a member behind would then get no result: re-form fails */
    }
    struct fti_shim_args a = {.sendbuf = keep && sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf,
                              .recvbuf = keep ? sh.spare : recvbuf,
                              .count = count,
                              .datatype = datatype,
                              .op = op,
                              .out_bytes = keep ? sh.spare_cap : 0,
                              .p2p_ok = true,
                              .p2p_barrier = sh.barrier};
    int rc = fti_shim_fast_run(FTI_COLL_ALLREDUCE, &a, mode == FTI_SHIM_ABORT);
    if (rc != FT_SUCCESS) {
        if (keep && rc != FT_ERR_MPI) { /* MPI may still write it */
            sh.spare = NULL;
            sh.spare_cap = 0;
        }
        return failed_call(sendbuf, recvbuf, count, datatype, op, dt, fop, comm, rc);
    }
    sh.done++;
    sh.n_protected++;
    if (!keep)
        sh.last_len = 0; /* no copy of this call: the kept one is older (see finish_ok) */
    if (keep) {
        if (bytes > 0)
            memcpy(recvbuf, sh.spare, bytes);
        void *p = sh.last;
        size_t cap = sh.last_cap;
        sh.last = sh.spare;
        sh.last_cap = sh.spare_cap;
        sh.last_len = bytes;
        sh.spare = p;
        sh.spare_cap = cap;
    }
    return MPI_SUCCESS;
}

static bool predefined_op(MPI_Op op)
{
    return strcmp(op_name(op), "a user-defined op") != 0;
}

/* Re-forms once after a failed call that is not redone (return): the
 * later protected calls then run over the survivors. */
static int reform_only(int why)
{
    char lost[SHIM_LOST_TEXT];
    uint64_t min = 0, max = 0;
    sh.failed = true;
    int rc = reform(lost, sizeof(lost), &min, &max);
    if (rc != FT_SUCCESS) {
        FTI_ERROR("libftmpi_pmpi: re-forming after a failed call failed (%s; the call had %s): "
                  "every later protected call returns an error",
                  FT_Error_string(rc), FT_Error_string(why));
        sh.broken = true;
    } else if (lost[0] != '\0') {
        FTI_WARN("libftmpi_pmpi: world rank(s) %s lost; later protected calls run over %d of %d "
                 "ranks",
                 lost, sh.survivors, sh.size);
    }
    return sh.err_code;
}

/* A protected collective the data plane cannot redo (a datatype and op it
 * does not reduce, MPI_Bcast, MPI_Reduce, MPI_Allgather; MPI_Barrier under
 * abort): the fast path only (fast.c: blocking under abort, otherwise
 * non-blocking and polled against the detector).  Once a rank is lost:
 * abort ends the job, return gives the error (this call and every later
 * one of its kind), continue ends the job (nothing can redo it over the
 * survivors). */
static int fast_only(const char *what, int mode, enum fti_shim_coll c,
                     const struct fti_shim_args *a)
{
    if (mode == FTI_SHIM_RETURN)
        fti_shim_call_kind(FTI_CALL_REDOABLE);
    int rc = FT_ERR_PROC_FAILED;
    if (!sh.failed && !sh.broken && fti_shim_fast_open()) {
        if (mode == FTI_SHIM_ABORT)
            fti_shim_call_kind(FTI_CALL_LOSS_ENDS);
        rc = fti_shim_fast_run(c, a, mode == FTI_SHIM_ABORT);
        if (rc == FT_SUCCESS) {
            if (c == FTI_COLL_ALLREDUCE)
                sh.n_protected++;
            else
                sh.n_other++;
            return MPI_SUCCESS;
        }
    }
    if (mode == FTI_SHIM_RETURN)
        return sh.failed ? sh.err_code : reform_only(rc);
    char text[160];
    snprintf(text, sizeof(text), "could not complete (%s: %s) nor redo",
             mode == FTI_SHIM_ABORT ? "FTMPI_SHIM_ON_FAILURE=abort" : "continue redoes only "
                                                                      "MPI_Allreduce and MPI_Barrier",
             FT_Error_string(rc));
    fti_shim_end_job(what, text);
}

int fti_shim_fast_only(const char *what, MPI_Comm comm, enum fti_shim_coll c,
                       const struct fti_shim_args *a)
{
    return fast_only(what, failure_mode(comm), c, a);
}

int fti_shim_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm)
{
    enum fti_dtype dt;
    enum fti_op fop;
    int order = fti_shim_world_order(comm);
    bool world = order != FTI_WORLD_NOT;
    if (world)
        datatype = c_type(datatype);
    if (!world || count < 0 || (order == FTI_WORLD_REORDERED && !predefined_op(op)) ||
        (count > 0 && (recvbuf == NULL || sendbuf == NULL))) {
        if (world)
            note_unprotected(datatype, op);
        sh.n_passed++;
        fti_shim_note_passed("MPI_Allreduce", comm);
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    }
    if (fti_reduction_from_mpi(datatype, op, MPI_OP_NULL, &dt, &fop) != FT_SUCCESS) {
        /* any other pair MPI allows (MPI_CHAR, MPI_LAND, MPI_MAXLOC, a user
         * op ...): MPI's own reduction on the fast path, not redone */
        struct fti_shim_args a = {.sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
                                  .datatype = datatype, .op = op};
        return fti_shim_fast_only("MPI_Allreduce", comm, FTI_COLL_ALLREDUCE, &a);
    }
    if (sh.broken)
        return sh.err_code;
    int mode = failure_mode(comm);
    /* the watchdog leaves the redo to this file (return, continue), or ends
     * the job at a loss (abort: the blocking call on the fast path) */
    if (!sh.failed && fti_shim_fast_open()) {
        fti_shim_call_kind(mode != FTI_SHIM_ABORT ? FTI_CALL_REDOABLE : FTI_CALL_LOSS_ENDS);
        return fast_call(sendbuf, recvbuf, count, datatype, op, dt, fop, comm, mode);
    }
    if (mode != FTI_SHIM_ABORT)
        fti_shim_call_kind(FTI_CALL_REDOABLE);
    int rc = FT_Allreduce(sendbuf, recvbuf, count, datatype, op, FT_COMM_REPLICAS);
    if (rc == FT_SUCCESS)
        return finish_ok(recvbuf, count, dt, fop, mode, false);
    return failed_call(sendbuf, recvbuf, count, datatype, op, dt, fop, comm, rc);
}

/* MPI_Barrier on a communicator spanning the world: under abort MPI's
 * own barrier on the fast path; otherwise a protected MPI_Allreduce of
 * one int (MAX), so that continue redoes it over the survivors and return
 * gives the error like MPI_Allreduce. */
int fti_shim_Barrier(MPI_Comm comm)
{
    if (!fti_shim_world_like(comm)) {
        fti_shim_note_passed("MPI_Barrier", comm);
        return PMPI_Barrier(comm);
    }
    int mode = failure_mode(comm);
    if (mode == FTI_SHIM_ABORT) { /* native's own barrier: nothing to redo */
        struct fti_shim_args a = {.count = 0};
        return fast_only("MPI_Barrier", mode, FTI_COLL_BARRIER, &a);
    }
    int one = 1;
    uint64_t before = sh.n_protected;
    int rc;
    sh.barrier = true; /* the fast path's messages then carry no data (fast.c) */
    if (!sh.broken && !sh.failed && fti_shim_fast_open()) {
        /* what fti_shim_Allreduce would do, without its checks of the
         * arguments (a barrier's are known) */
        fti_shim_call_kind(FTI_CALL_REDOABLE);
        rc = fast_call(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_MAX, FTI_DT_INT, FTI_OP_MAX, comm, mode);
    } else {
        rc = fti_shim_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_MAX, comm);
    }
    sh.barrier = false;
    if (sh.n_protected > before) { /* counted as a barrier */
        sh.n_protected--;
        sh.n_other++;
    }
    return rc;
}
