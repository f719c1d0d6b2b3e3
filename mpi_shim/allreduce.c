/*
 * allreduce.c - MPI_Allreduce under the drop-in (see shim.h): which calls
 * are protected, the failure-free path and the fault-tolerant one, the
 * survivors' agreement after a failure (who is alive, who is a call ahead)
 * and what FTMPI_SHIM_ON_FAILURE makes of it.  The design and its
 * reasons: DESIGN section 10.2.
 */
#include "mpi_shim/shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "ftmpi.h"
#include "base/log.h"

/* Re-forming after a failure is tried this many times (each a quorum and
 * one small allreduce) before the call gives up. */
#define SHIM_MAX_REFORMS 4
/* Distinct unprotected (datatype, op) pairs that are reported. */
#define SHIM_MAX_NOTES 32
/* Room for the list of lost ranks in a message. */
#define SHIM_LOST_TEXT 512
/* A re-form's agreement, after one entry per world rank (alive): the
 * lowest and highest count of calls completed or held (see reform), the
 * lowest call a member is in. */
enum { SYNC_DONE_MIN, SYNC_DONE_MAX, SYNC_POS_MIN, SYNC_N };

static struct {
    int rank, size;
    uint64_t done;          /* protected calls completed: the same on every member */
    unsigned char *alive;   /* per world rank, as the last re-form found */
    int survivors;
    bool failed;            /* a rank was lost */
    bool barrier;           /* the call is fti_shim_Barrier's allreduce of one int */
    bool broken;            /* could not re-form: every protected call fails */
    int err_code;           /* returned after a failure: a lost rank's (fti_shim_err_code) */
    int64_t *sync;          /* size + SYNC_N entries */
    void *last;             /* the last protected call's result (return, continue) */
    size_t last_len, last_cap;
    bool last_valid;        /* last holds the result of call number done */
    void *spare;            /* the fast path's output (return, continue), swapped with last */
    size_t spare_cap;
    uint64_t n_protected, n_passed, n_slow;
    uint64_t n_other;       /* protected MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allgather */
} sh;

/* The default mode's hot path (PERFORMANCE.md section 9): a protected
 * MPI_Allreduce or MPI_Barrier on MPI_COMM_WORLD under abort, failure-free,
 * is the blocking MPI call on the fast path and the counts, nothing looked
 * up again: on says so (the world's failure mode abort, the fast path open,
 * no failure), found by a call on the world that took the long way
 * (hot_find), for as long as no error handler was set since (gen) and no
 * call failed (sh.failed, sh.broken; a failed hot call clears it).  dt and
 * op: the last pair of a protected MPI_Allreduce on the world that the data
 * plane reduces, with what the long way found for it (the Fortran type's C
 * twin, the data plane's type and op; MPI's predefined handles, never
 * freed).  A look-up per call (the error handler's query and free, the
 * tables) cost about two thirds of the drop-in's time of a small call. */
static struct {
    bool on;
    unsigned gen;
    MPI_Datatype dt, cdt;
    MPI_Op op;
    enum fti_dtype fdt;
    enum fti_op fop;
} hot = {.dt = MPI_DATATYPE_NULL, .cdt = MPI_DATATYPE_NULL, .op = MPI_OP_NULL};

static bool hot_on(void)
{
    return hot.on && !sh.failed && !sh.broken &&
           hot.gen == atomic_load_explicit(&fti_shim_errh_gen, memory_order_relaxed);
}

/* After a call on comm in mode that took the long way, with gen the
 * error handlers' generation read before its failure mode was. */
static void hot_find(MPI_Comm comm, int mode, unsigned gen)
{
    if (comm != MPI_COMM_WORLD)
        return;
    hot.on = mode == FTI_SHIM_ABORT && !sh.failed && !sh.broken && fti_shim_fast_open();
    hot.gen = gen;
}

int fti_shim_start(void)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, &sh.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &sh.size);
    sh.alive = malloc((size_t)sh.size);
    sh.sync = malloc(((size_t)sh.size + SYNC_N) * sizeof(*sh.sync));
    if (sh.alive == NULL || sh.sync == NULL)
        return FT_ERR_NO_MEMORY;
    memset(sh.alive, 1, (size_t)sh.size);
    sh.survivors = sh.size;
    sh.err_code = fti_shim_err_code();
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
    hot.on = false;
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
    /* the world's, kept until the program sets an error handler */
    static unsigned world_gen;
    static int world_mode;
    if (fti_shim_cfg.on_failure != FTI_SHIM_AUTO)
        return fti_shim_cfg.on_failure;
    unsigned gen = atomic_load_explicit(&fti_shim_errh_gen, memory_order_acquire);
    if (comm == MPI_COMM_WORLD && gen == world_gen)
        return world_mode;
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (PMPI_Comm_get_errhandler(comm, &eh) != MPI_SUCCESS)
        return FTI_SHIM_ABORT;
    bool fatal = eh == MPI_ERRORS_ARE_FATAL;
    PMPI_Errhandler_free(&eh);
    int mode = fatal ? FTI_SHIM_ABORT : FTI_SHIM_RETURN;
    if (comm == MPI_COMM_WORLD) {
        world_mode = mode;
        world_gen = gen;
    }
    return mode;
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
    sh.last_valid = false;
    sh.last_len = 0;
    if (mode == FTI_SHIM_ABORT) {
        /* no copy: the kept one is older than this call (the failure mode
         * follows the errhandler, which the program may change) */
        return MPI_SUCCESS;
    }
    if (sh.last_cap < bytes) {
        void *p = realloc(sh.last, bytes);
        if (p == NULL) /* a member behind would then get no result: re-form fails */
            return MPI_SUCCESS;
        sh.last = p;
        sh.last_cap = bytes;
    }
    if (bytes > 0)
        memcpy(sh.last, recvbuf, bytes);
    sh.last_len = bytes;
    sh.last_valid = true;
    return MPI_SUCCESS;
}

/* Appends world rank r to the text of lost ranks. */
static void add_lost(char *text, size_t len, int r)
{
    size_t used = strlen(text);
    if (used + 16 < len)
        snprintf(text + used, len - used, "%s%d", used ? ", " : "", r);
}

/* Where the members stand after a re-form: the lowest and highest number
 * of calls completed, a call whose result a member holds (the held
 * allreduce, fast.c) counted as completed, and the lowest call a member
 * is in (its done + 1). */
struct standing {
    uint64_t min, max, min_pos;
};

/* Closes the failed step, asks a new quorum and agrees over its slice on
 * who is alive and where each member stands (holds: this member holds the
 * result of the call it is in).  lost: the world ranks lost since the last
 * re-form. */
static int reform(bool holds, char *lost, size_t lost_len, struct standing *st)
{
    int committed = 0;
    (void)FT_Commit(&committed); /* fails: the step had an error */
    int rc = FT_Quorum(0);
    if (rc != FT_SUCCESS)
        return rc;
    int64_t *v = sh.sync;
    for (int i = 0; i < sh.size; i++)
        v[i] = i == sh.rank;
    int64_t done = (int64_t)sh.done + holds;
    v[sh.size + SYNC_DONE_MIN] = -done;
    v[sh.size + SYNC_DONE_MAX] = done;
    v[sh.size + SYNC_POS_MIN] = -((int64_t)sh.done + 1);
    rc = FT_Allreduce(MPI_IN_PLACE, v, sh.size + SYNC_N, MPI_INT64_T, MPI_MAX, FT_COMM_REPLICAS);
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
    st->min = (uint64_t)(-v[sh.size + SYNC_DONE_MIN]);
    st->max = (uint64_t)v[sh.size + SYNC_DONE_MAX];
    st->min_pos = (uint64_t)(-v[sh.size + SYNC_POS_MIN]);
    return FT_SUCCESS;
}

/* What a member does in a hand-over: receives the result (behind), gives
 * it from the caller's buffer (holds the result of the call it is in),
 * from its kept copy (ahead: it returned from that call), or only takes
 * part (in a call that is not redone, reform_only). */
enum hand_role { HAND_BEHIND, HAND_HOLDER, HAND_AHEAD, HAND_NONE };

/* The members ahead hand the result of the call the members behind failed
 * (bytes of it: the caller's call, for the behind and the holders) to
 * them: first the size as each knows it and whether a member ahead has no
 * copy (a MAX of three words), then a MAX over 64-bit words where the
 * members that do not give put the lowest word. */
static int hand_over(enum hand_role role, void *recvbuf, size_t bytes)
{
    const void *from = role == HAND_HOLDER ? recvbuf : role == HAND_AHEAD ? sh.last : NULL;
    size_t have = role == HAND_AHEAD ? sh.last_len : bytes;
    int64_t head[3] = {role == HAND_NONE ? INT64_MIN : (int64_t)have,
                       role == HAND_NONE ? INT64_MIN : -(int64_t)have,
                       role == HAND_AHEAD && !sh.last_valid};
    int rc = FT_Allreduce(MPI_IN_PLACE, head, 3, MPI_INT64_T, MPI_MAX, FT_COMM_REPLICAS);
    if (rc != FT_SUCCESS)
        return rc;
    if (head[2] || head[0] != -head[1] || head[0] < 0)
        return FT_ERR_INTERNAL; /* no copy, or copies of other sizes: nothing to hand */
    size_t words = ((size_t)head[0] + sizeof(int64_t) - 1) / sizeof(int64_t);
    if (words > (size_t)INT32_MAX)
        return FT_ERR_UNSUPPORTED;
    int64_t *w = malloc((words + 1) * sizeof(*w));
    if (w == NULL)
        return FT_ERR_NO_MEMORY;
    for (size_t i = 0; i < words; i++)
        w[i] = INT64_MIN;
    if (from != NULL && have > 0)
        memcpy(w, from, have);
    rc = FT_Allreduce(MPI_IN_PLACE, w, (int)words, MPI_INT64_T, MPI_MAX, FT_COMM_REPLICAS);
    if (rc == FT_SUCCESS && role == HAND_BEHIND && bytes > 0)
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
 * says (see the top of this file).  holds: the call was the held allreduce
 * and this member holds its result in recvbuf. */
static int failed_call(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, enum fti_dtype dt, enum fti_op fop, MPI_Comm comm, int why,
                       bool holds)
{
    int mode = failure_mode(comm);
    size_t bytes = (size_t)count * fti_dtype_size(dt);
    char lost[SHIM_LOST_TEXT];
    sh.failed = true;
    if (mode == FTI_SHIM_ABORT)
        abort_job("", why); /* no re-form: it could wait for a quorum */
    for (int attempt = 0; attempt < SHIM_MAX_REFORMS; attempt++) {
        struct standing st;
        int rc = reform(holds, lost, sizeof(lost), &st);
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
        if (st.max > st.min) {
            enum hand_role role = sh.done + holds == st.min ? HAND_BEHIND
                                  : holds                    ? HAND_HOLDER
                                                             : HAND_AHEAD;
            rc = hand_over(role, recvbuf, bytes);
            if (rc != FT_SUCCESS) {
                why = rc;
                continue;
            }
            if (role != HAND_AHEAD) /* this call's result, complete */
                return finish_ok(recvbuf, count, dt, fop, mode, true);
            /* ahead: this call is redone, its members behind make it next */
        } else if (holds) {
            return finish_ok(recvbuf, count, dt, fop, mode, true); /* every member holds it */
        } else if (mode == FTI_SHIM_RETURN && st.min_pos == sh.done + 1) {
            return sh.err_code; /* every survivor failed this call alike */
        }
        /* continue, or (return) a member still in the call before, whose
         * result it held: this call is its next one, redone alike */
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

/* The held allreduce (fast.c) under return and continue: no member
 * returns before every member holds the result, so no copy of it is kept
 * and the ring reduces from the caller's input straight into recvbuf (an
 * in-place input is copied to the spare first: a redo needs it).  A
 * failed call re-forms with holds set when this member held the result. */
static int held_call(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, enum fti_dtype dt, enum fti_op fop, MPI_Comm comm, size_t bytes)
{
    const void *src = sendbuf;
    if (sendbuf == MPI_IN_PLACE) {
        if (spare_reserve(bytes)) {
            memcpy(sh.spare, recvbuf, bytes);
            src = sh.spare;
        } else {
            FTI_WARN("libftmpi_pmpi: no memory for the copy of a %zu-byte in-place "
                     "MPI_Allreduce's input: a failure of this call may change it",
                     bytes);
            src = recvbuf;
        }
    }
    bool spare = src == sh.spare;
    struct fti_shim_args a = {.sendbuf = src,
                              .recvbuf = recvbuf,
                              .count = count,
                              .datatype = datatype,
                              .op = op,
                              .out_bytes = spare ? sh.spare_cap : 0,
                              .p2p_ok = true,
                              .dt = dt,
                              .fop = fop};
    bool held = false;
    int rc = fti_shim_fast_held(&a, &held);
    if (rc == FT_SUCCESS) {
        sh.done++;
        sh.n_protected++;
        sh.last_valid = false; /* nobody needs it: every member held this result */
        sh.last_len = 0;
        return MPI_SUCCESS;
    }
    if (spare && rc == FT_ERR_PROC_FAILED) { /* MPI may still read it: kept, never reused */
        sh.spare = NULL;
        sh.spare_cap = 0;
    }
    return failed_call(src == recvbuf ? MPI_IN_PLACE : src, recvbuf, count, datatype, op, dt, fop,
                       comm, rc, held);
}

/* A protected call on the fast path (see the top of this file). */
static int fast_call(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, enum fti_dtype dt, enum fti_op fop, MPI_Comm comm, int mode)
{
    size_t bytes = (size_t)count * fti_dtype_size(dt);
    bool keep = mode != FTI_SHIM_ABORT;
    if (keep && fti_shim_fast_held_fits(bytes)) /* (a barrier's 4 bytes never fit) */
        return held_call(sendbuf, recvbuf, count, datatype, op, dt, fop, comm, bytes);
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
                              .p2p_barrier = sh.barrier,
                              .dt = dt,
                              .fop = fop};
    int rc = fti_shim_fast_run(FTI_COLL_ALLREDUCE, &a, mode == FTI_SHIM_ABORT);
    if (rc != FT_SUCCESS) {
        if (keep && rc != FT_ERR_MPI) { /* MPI may still write it */
            sh.spare = NULL;
            sh.spare_cap = 0;
        }
        return failed_call(sendbuf, recvbuf, count, datatype, op, dt, fop, comm, rc, false);
    }
    sh.done++;
    sh.n_protected++;
    sh.last_valid = keep; /* without: the kept copy is older (see finish_ok) */
    if (!keep)
        sh.last_len = 0;
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
    struct standing st;
    sh.failed = true;
    int rc = reform(false, lost, sizeof(lost), &st);
    if (rc == FT_SUCCESS && st.max > st.min) /* a member behind in MPI_Allreduce waits for it */
        rc = hand_over(sh.done == st.max ? HAND_AHEAD : HAND_NONE, NULL, 0);
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
static int fast_only_failed(const char *what, int mode, int rc);

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
    return fast_only_failed(what, mode, rc);
}

/* fast_only's end when its call failed with rc (or could not run). */
static int fast_only_failed(const char *what, int mode, int rc)
{
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
    /* the hot path: the checks below, known to pass for this pair; what
     * fast_call does under abort */
    if (comm == MPI_COMM_WORLD && datatype == hot.dt && op == hot.op && count >= 0 &&
        (count == 0 || (recvbuf != NULL && sendbuf != NULL)) && hot_on()) {
        fti_shim_call_kind(FTI_CALL_LOSS_ENDS);
        int rc = fti_shim_fast_allreduce_blocking(sendbuf, recvbuf, count, hot.cdt, op);
        if (rc == FT_SUCCESS) {
            sh.done++;
            sh.n_protected++;
            sh.last_valid = false;
            sh.last_len = 0;
            return MPI_SUCCESS;
        }
        hot.on = false;
        return failed_call(sendbuf, recvbuf, count, hot.cdt, op, hot.fdt, hot.fop, comm, rc,
                           false);
    }
    MPI_Datatype given = datatype;
    unsigned gen = atomic_load_explicit(&fti_shim_errh_gen, memory_order_acquire);
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
    if (comm == MPI_COMM_WORLD) {
        hot.dt = given;
        hot.cdt = datatype;
        hot.op = op;
        hot.fdt = dt;
        hot.fop = fop;
    }
    if (sh.broken)
        return sh.err_code;
    int mode = failure_mode(comm);
    hot_find(comm, mode, gen);
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
    return failed_call(sendbuf, recvbuf, count, datatype, op, dt, fop, comm, rc, false);
}

/* MPI_Barrier on a communicator spanning the world: under abort MPI's
 * own barrier on the fast path; otherwise a protected MPI_Allreduce of
 * one int (MAX), so that continue redoes it over the survivors and return
 * gives the error like MPI_Allreduce. */
int fti_shim_Barrier(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD && hot_on()) { /* the hot path: fast_only's under abort */
        fti_shim_call_kind(FTI_CALL_LOSS_ENDS);
        int rc = fti_shim_fast_barrier_blocking();
        if (rc == FT_SUCCESS) {
            sh.n_other++;
            return MPI_SUCCESS;
        }
        hot.on = false;
        return fast_only_failed("MPI_Barrier", FTI_SHIM_ABORT, rc);
    }
    if (!fti_shim_world_like(comm)) {
        fti_shim_note_passed("MPI_Barrier", comm);
        return PMPI_Barrier(comm);
    }
    unsigned gen = atomic_load_explicit(&fti_shim_errh_gen, memory_order_acquire);
    int mode = failure_mode(comm);
    hot_find(comm, mode, gen);
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
