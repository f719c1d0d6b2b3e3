/*
 * baby.h - the baby runner (DESIGN section 5, baby-<backend>): a rank's
 * cross-group collectives run in a child process, ftmpi-baby, so that a
 * hang in a collective library ends with SIGKILL instead of taking the
 * application with it.
 *
 * The child is started with posix_spawn (fork+exec; never a fork alone: MPI
 * and CUDA do not survive one), with its end of a socketpair as fd 3
 * (baby_chan.h) and every other fd closed.  Buffers cross through memfd
 * regions mapped by both: memory from fti_mem_alloc (ftmpi_mem_alloc) is
 * such a region, so the child reduces it in place; any other buffer is
 * copied through the runner's staging region.  The job's key (auth.h), if
 * any, goes to the child over the channel right after the spawn.
 *
 * On a deadline (the command's deadline plus grace_ms without a reply), an
 * error of the child or a garbled/closed channel, the runner SIGKILLs the
 * child, reaps it (waitpid with a deadline; one not reaped in time is
 * reaped later, never left a zombie) and returns the error; the next
 * command starts a new child.  No call blocks past its deadline plus
 * grace_ms plus the reap wait, whatever the child does.
 *
 * Threads: one thread at a time per runner; fti_mem_alloc/free from any.
 */
#ifndef FTI_BABY_H
#define FTI_BABY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "comm/comm.h"

/* ---- shared memory ------------------------------------------------------- */

/* bytes (> 0) of zeroed memory in a memfd region of its own, page aligned.
 * Release with fti_mem_free. */
int fti_mem_alloc(size_t bytes, void **p_p);
/* Frees memory from fti_mem_alloc (NULL: no-op; anything else: FT_ERR_ARG).
 * A child that mapped it unmaps it at its runner's next command. */
int fti_mem_free(void *p);
/* How many regions fti_mem_alloc has handed out and not freed (tests). */
size_t fti_mem_regions(void);

/* For the runner: a region is (id, memfd, base, bytes); ids are never
 * reused.  fti_mem_find: the region holding [p, p+len) -- its id, p's
 * offset in it and, if fd_p, a dup of its memfd (the caller closes it); FT_ERR_NOT_FOUND
 * if none.  fti_mem_live: is region id still allocated.  fti_mem_frees:
 * counts fti_mem_free calls (a runner prunes its child's mappings when it
 * changes).  fti_mem_region_new/_delete: a private region (staging), not
 * in the table. */
typedef struct fti_mem_region {
    uint64_t id;
    int fd;
    char *base;
    size_t bytes;
} fti_mem_region_t;
int fti_mem_find(const void *p, size_t len, uint64_t *id_p, size_t *off_p, int *fd_p);
/* Given-up regions (mode B zero-copy, mpi.c): MPI was handed [p, +len)
 * of a region as the receive buffer of a reduction that was abandoned, so
 * it may still write there.  fti_mem_usable: does [p, +len) lie inside one
 * region not given up.  fti_mem_give_up: marks the region holding p; from
 * then on fti_mem_find and fti_mem_usable skip it and fti_mem_free takes it
 * off the list but leaves it mapped (MPI's for the life of the process);
 * returns the region's bytes, 0 when p is in none.  fti_mem_given_up: is p
 * inside a given-up region that was not freed yet. */
bool fti_mem_usable(const void *p, size_t len);
size_t fti_mem_give_up(const void *p);
bool fti_mem_given_up(const void *p);
int fti_mem_live(uint64_t id);
uint64_t fti_mem_frees(void);
int fti_mem_region_new(size_t bytes, fti_mem_region_t *r_p);
void fti_mem_region_delete(fti_mem_region_t *r);

/* ---- the runner ---------------------------------------------------------- */

typedef struct fti_baby_opts {
    const char *path;        /* the child; NULL or "": FTI_BINDIR/ftmpi-baby */
    const char *const *env;  /* "NAME=value" set for the child, NULL-terminated, or NULL */
    const char *cpus;        /* cpu list to bind the child to ("0-3,8"), NULL: inherit */
    int grace_ms;            /* wait for a reply past a deadline; <= 0: 250 */
    int reap_ms;             /* waitpid after SIGKILL; <= 0: 2000 */
    const fti_auth_key_t *key; /* the job's key, handed to each child; NULL: none */
} fti_baby_opts_t;

typedef struct fti_baby *fti_baby_h;

/* A runner with no child yet (the first command starts one).  opts is
 * copied.  Release with fti_baby_destroy. */
int fti_baby_create(const fti_baby_opts_t *opts, fti_baby_h *b_p);
/* Asks the child to exit (a short wait), else kills it; frees the runner. */
void fti_baby_destroy(fti_baby_h b);

/* Starts a child if there is none, before deadline_ms, and hands it the
 * runner's job key (opts.key, auth.h; none: nothing) over the channel,
 * never on its command line or in its environment: the child's tcp ring
 * then authenticates its neighbours as the in-process ring does. */
int fti_baby_start(fti_baby_h b, int64_t deadline_ms);
/* SIGKILLs and reaps the child, if any. */
void fti_baby_kill(fti_baby_h b);

/* The child opens the tcp ring's listener on bind_host; its address
 * ("host:port") is copied into addr (len bytes). */
int fti_baby_listen(fti_baby_h b, const char *bind_host, int64_t deadline_ms, char *addr,
                    size_t len);
/* The child builds the ring (fti_tcp_ring_create): rank of size, next_addr
 * the listener of rank+1.  small_max: SIZE_MAX for the ring's default. */
int fti_baby_connect(fti_baby_h b, int rank, int size, const char *next_addr,
                     size_t chunk_bytes, size_t small_max, int64_t deadline_ms);
/* Allreduce in place on buf through the child's ring. */
int fti_baby_allreduce(fti_baby_h b, void *buf, size_t count, enum fti_dtype dtype,
                       enum fti_op op, int64_t deadline_ms);

/* One command of baby_chan.h (type, payload pl of len bytes) and its reply
 * (at most rcap bytes into reply, their number in *rlen_p), starting a
 * child if there is none; a channel failure kills the child (as every
 * command), an error the child reports is returned with the child alive.
 * For backends that add commands (baby_nccl.c). */
int fti_baby_command(fti_baby_h b, int type, const void *pl, size_t len, int64_t deadline_ms,
                     void *reply, size_t rcap, size_t *rlen_p);

/* The child's pid (-1: none), and how many children were started. */
pid_t fti_baby_pid(fti_baby_h b);
int fti_baby_spawns(fti_baby_h b);

/* ---- the baby-tcp backend: shaped like the tcp one (comm.h) -------------- */

/* Starts a child that opens a listener (the rendezvous publishes its
 * address, fti_baby_tcp_listener_address).  Release with
 * fti_baby_tcp_listener_destroy, or hand it to fti_baby_tcp_ring_create. */
typedef struct fti_baby_tcp_listener *fti_baby_tcp_listener_h;
int fti_baby_tcp_listener_create(const fti_baby_opts_t *opts, const char *bind_host,
                                 int64_t deadline_ms, fti_baby_tcp_listener_h *l_p);
const char *fti_baby_tcp_listener_address(fti_baby_tcp_listener_h l);
void fti_baby_tcp_listener_destroy(fti_baby_tcp_listener_h l);

/* Builds the ring in the listener's child; the communicator takes the child
 * over (*l is consumed whatever the result: do not destroy it).  Its
 * allreduce runs in the child; any error kills the child and the comm is
 * dead (FT_ERR_ABORTED after); destroy kills the child (a quorum change),
 * so the next quorum's communicator runs in a new one.  Release with
 * fti_comm_destroy. */
int fti_baby_tcp_ring_create(fti_baby_tcp_listener_h l, int rank, int size,
                             const char *next_addr, size_t chunk_bytes, int64_t deadline_ms,
                             fti_comm_h *comm_p);
/* The child's runner under a baby-tcp comm (tests: kill, pid); NULL if the
 * comm is not baby-tcp. */
fti_baby_h fti_baby_tcp_runner(fti_comm_h comm);

#endif
