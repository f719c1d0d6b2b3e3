/*
 * comm.h - the data-plane interface (DESIGN section 5): the backend table.
 * A slice communicator connects the ranks with the same group rank across
 * the groups of one quorum; a backend builds one from what its rendezvous
 * needs, reduces over it and destroys it.
 *
 * The table: FTI_BACKENDS below lists the backends; backend `x` is the
 * entry fti_backend_x, defined in src/comm/x.c (tcp's in slice.c, beside
 * the store rendezvous it adds to the ring of tcp.c, so that ring-only
 * programs link no control plane).  Adding a backend is one X(x) line here
 * and that one file (and its line in src/comm/Makefile.inc);
 * the step (src/ft.c) picks an entry by name (FTMPI_BACKEND) and never
 * branches on a backend.  The table itself (fti_comm_backend_find,
 * backends.c) is built into libfti_comm_mpi.la, beside the mpi backend it
 * names, so that libfti_comm.la stays free of MPI: an MPI-free program (the
 * ftmpi-baby child) links libfti_comm.la and runs the ring of tcp.h
 * directly.
 *
 * Errors: any failure (peer closed, deadline passed) returns an FT_ERR_*
 * code; after one the communicator is dead and only failed_peer and
 * destroy may be called.  A failed create is logged by the backend where
 * it was seen; a failed allreduce only at debug level there: the step logs
 * its one error line, naming the peer that failed_peer reports.
 * Threads: one thread at a time per communicator.
 */
#ifndef FTI_COMM_H
#define FTI_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ftmpi_config.h" /* FTMPI_HAVE_NCCL, FTMPI_HAVE_UCX */
#include "ftmpi_errors.h"
#include "base/auth.h"
#include "comm/reduce.h"

typedef struct fti_comm *fti_comm_h;

/* What a backend's rendezvous needs (fti_comm_backend.needs). */
enum fti_comm_need {
    /* The quorum's store: every rank publishes a listener address there
     * (store_address, bind_host, connect_timeout_ms); the manager drops a
     * quorum's keys once a newer quorum's slice is built. */
    FTI_COMM_NEEDS_STORE = 1u << 0,
    /* The members' world ranks (world_ranks, world_ctx): one MPI job
     * (mode B), with every member's data in the quorum (no compact
     * lighthouse replies). */
    FTI_COMM_NEEDS_WORLD = 1u << 1,
    /* A child process runs the collective (baby-* backends): the program
     * to start and where to bind it (child_path, child_cpus, child_env). */
    FTI_COMM_NEEDS_CHILD = 1u << 2,
    /* A CUDA device: the backend reduces device buffers in place (nccl,
     * baby-nccl); built only with CUDA and NCCL (FTMPI_HAVE_NCCL). */
    FTI_COMM_NEEDS_DEVICE = 1u << 3,
};

/* Everything a rendezvous may use; the fields a backend's needs do not
 * name may be left zero. */
typedef struct fti_comm_rendezvous {
    int64_t quorum_id;
    int group_rank;
    int replica_rank;          /* this group's index among the participants */
    int size;                  /* participants */
    size_t chunk_bytes;        /* pipeline chunk; 0 = the backend's default */
    int timeout_ms;            /* FTMPI_TIMEOUT_MS: how soon a backend's own liveness
                                * check should find a dead peer (ucx: UCX's keepalive);
                                * 0 = the backend's default */
    bool offer_ucx;            /* auto: this rank offers ucx to its slice (FTMPI_UCX) */
    /* FTI_COMM_NEEDS_STORE */
    const char *store_address; /* host:port of the quorum's store (size > 1) */
    const char *bind_host;
    int connect_timeout_ms;
    const fti_auth_key_t *key; /* the job's key (store and ring handshakes); NULL: none */
    /* FTI_COMM_NEEDS_WORLD */
    const int *world_ranks;    /* size entries, replica-rank order */
    void *world_ctx;           /* the backend's job-wide context (mpi: fti_mpi_ctx_h) */
    /* FTI_COMM_NEEDS_CHILD */
    const char *child_path;        /* ftmpi-baby; NULL or "": the installed one */
    const char *child_cpus;        /* cpu list to bind the child to; NULL: inherit */
    const char *const *child_env;  /* "NAME=value" for the child, NULL-terminated, or NULL */
} fti_comm_rendezvous_t;

/* One entry of the table. */
struct fti_comm_backend {
    const char *name; /* FTMPI_BACKEND */
    unsigned needs;   /* enum fti_comm_need */
    /* Builds this rank's slice before deadline_ms.  Release with destroy. */
    int (*create)(const fti_comm_rendezvous_t *r, int64_t deadline_ms, fti_comm_h *comm_p);
    /* Allreduce in place on buf (count elements of dtype). */
    int (*allreduce)(fti_comm_h comm, void *buf, size_t count, enum fti_dtype dtype,
                     enum fti_op op, int64_t deadline_ms);
    void (*destroy)(fti_comm_h comm);
    /* Optional (NULL: the step copies src into buf and calls allreduce):
     * the allreduce of src (read only) into buf, src == buf in place, for
     * a backend that reads its input from one buffer and writes its result
     * to another anyway (mpi), so that a separate sendbuf costs no copy. */
    int (*allreduce_from)(fti_comm_h comm, const void *src, void *buf, size_t count,
                          enum fti_dtype dtype, enum fti_op op, int64_t deadline_ms);
    /* Optional (NULL: never known): after a failed allreduce, the peer
     * whose connection failed first as this rank saw it -- its replica
     * rank (mpi: its world rank) and, when known, its address into addr
     * (len bytes, "" when unknown).  FT_ERR_NOT_FOUND when no peer is
     * known (no failure, a deadline with no broken connection). */
    int (*failed_peer)(fti_comm_h comm, int *replica_rank_p, char *addr, size_t len);
};

/* What every backend's communicator starts with. */
struct fti_comm {
    const struct fti_comm_backend *ops;
    int rank; /* replica rank in the slice */
    int size; /* participants */
};

/* The table.  Test-only backends (compiled into tests, never into the
 * library) are listed under FTI_COMM_TEST_BACKENDS. */
#ifdef FTI_COMM_TEST_BACKENDS
#define FTI_TEST_BACKENDS(X) X(loop)
#else
#define FTI_TEST_BACKENDS(X)
#endif
#ifdef FTMPI_HAVE_NCCL
#define FTI_NCCL_BACKENDS(X) X(nccl) X(baby_nccl)
#else
#define FTI_NCCL_BACKENDS(X)
#endif
#ifdef FTMPI_HAVE_UCX
#define FTI_UCX_BACKENDS(X) X(ucx)
#else
#define FTI_UCX_BACKENDS(X)
#endif
#define FTI_BACKENDS(X)                                                                            \
    X(tcp) X(mpi) X(baby_tcp) FTI_NCCL_BACKENDS(X) FTI_UCX_BACKENDS(X) FTI_TEST_BACKENDS(X)

#define FTI_BACKEND_DECLARE(x) extern const struct fti_comm_backend fti_backend_##x;
FTI_BACKENDS(FTI_BACKEND_DECLARE)
#undef FTI_BACKEND_DECLARE

/* FTMPI_BACKEND=auto in mode A (comm/auto.c; not in the table, not a
 * name fti_comm_backend_find knows): per slice, ucx when the build has UCX
 * and every member offers it (FTMPI_UCX, UCX loads), else tcp; the
 * communicator it creates is the chosen backend's. */
extern const struct fti_comm_backend fti_backend_auto;

/* The entry named name (case-insensitive), NULL when there is none. */
const struct fti_comm_backend *fti_comm_backend_find(const char *name);

/* The i-th entry of the table (0-based), NULL past the end. */
const struct fti_comm_backend *fti_comm_backend_at(int i);

/* The table's names without its entries (comm/names.c, in the MPI-free
 * libfti_comm: for programs that check FTMPI_BACKEND without the mpi
 * backend, such as ftmpi-info).  name_at writes the i-th name ("baby-tcp"
 * for the entry fti_backend_baby_tcp) into buf, cut to len, and returns
 * false past the end; known says whether name (case-insensitive) is one. */
bool fti_comm_backend_name_at(int i, char *buf, size_t len);
bool fti_comm_backend_known(const char *name);

static inline int fti_comm_create(const struct fti_comm_backend *b, const fti_comm_rendezvous_t *r,
                                  int64_t deadline_ms, fti_comm_h *comm_p)
{
    return b->create(r, deadline_ms, comm_p);
}

static inline int fti_comm_allreduce(fti_comm_h c, void *buf, size_t count, enum fti_dtype dt,
                                     enum fti_op op, int64_t deadline_ms)
{
    return c->ops->allreduce(c, buf, count, dt, op, deadline_ms);
}

/* The allreduce of src into buf (src == buf: in place): allreduce_from,
 * or a copy and allreduce. */
static inline int fti_comm_allreduce_from(fti_comm_h c, const void *src, void *buf, size_t count,
                                          enum fti_dtype dt, enum fti_op op, int64_t deadline_ms)
{
    if (c->ops->allreduce_from != NULL)
        return c->ops->allreduce_from(c, src, buf, count, dt, op, deadline_ms);
    if (src != buf)
        memmove(buf, src, count * fti_dtype_size(dt));
    return c->ops->allreduce(c, buf, count, dt, op, deadline_ms);
}

/* The failed peer of c's last failed allreduce (the failed_peer op);
 * FT_ERR_NOT_FOUND when the backend does not know it. */
static inline int fti_comm_failed_peer(fti_comm_h c, int *replica_rank_p, char *addr, size_t len)
{
    if (c == NULL || c->ops->failed_peer == NULL)
        return FT_ERR_NOT_FOUND;
    return c->ops->failed_peer(c, replica_rank_p, addr, len);
}

static inline void fti_comm_destroy(fti_comm_h c)
{
    if (c)
        c->ops->destroy(c);
}

#endif
