/*
 * heal/stripe.h - a striped fetch's state, internal to heal/fetch.c (the
 * fetching threads, the frontier, the rounds), heal/source.c (opening a
 * source, checking its metadata and checksums, dropping it), heal/stage.c
 * (the staging memory and its install) and heal/verify.c (checking every
 * piece against the source that sent it, fetching again what fails).
 * Threads: the fields say which mutex guards them.
 */
#ifndef FTI_HEAL_STRIPE_H
#define FTI_HEAL_STRIPE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

#include "base/rpc.h"
#include "control/proto/ftmpi.pb-c.h"
#include "heal/heal_int.h"

/* One buffer of a heal: the registered buffer it is for, the staging
 * memory its bytes stream into and what is known of its checksum pieces
 * (fti_heal_stage_alloc, released by fti_heal_stage_free; stage.c). */
struct heal_stage {
    struct heal_buf *b;
    unsigned char *data; /* b->len bytes; NULL when b->len == 0 */
    bool mapped;         /* data is an anonymous mapping, else malloc'ed */
    bool direct;         /* data is b->user itself (opts->direct): not ours */
    size_t n_pieces;     /* pieces of FTI_HEAL_SUM_BYTES (the last shorter) */
    uint64_t *chain;     /* the chained sum after each piece, computed here */
    bool *ok;            /* each piece verified */
    uint64_t sum;        /* of the whole buffer, computed here */
};

/* stage.c: staging buffers from this size on are mapped, and their pages populated
 * by a thread of their own ahead of the fetch (stage_populate): faulting
 * them in one by one inside the socket reads made a heal of 512 MiB twice
 * as slow as without staging, and populating them all before the first
 * fetch put the whole time of it on every heal's path. */
#define HEAL_STAGE_MAP_BYTES ((size_t)1 << 20)

/* stage.c: staging memory for every registered buffer, in registration
 * order: the whole state once more, for the time of one heal (direct: only
 * for the buffers with a mirror; serving closes here, before the first
 * byte can land in the registered memory, and *was_open_p tells whether it
 * was open).  FT_ERR_NO_MEMORY, logged.  Release with
 * fti_heal_stage_free(*stage_p, *n_p). */
int fti_heal_stage_alloc(struct fti_heal *h, bool direct, struct heal_stage **stage_p, size_t *n_p,
                         bool *was_open_p);
void fti_heal_stage_free(struct heal_stage *stage, size_t n);
/* stage.c: installs a complete, verified copy: closes serving (the old
 * state is about to change: requests for it are refused from now on and a
 * summing thread drops its work), then copies each staged buffer into the
 * registered memory (copy_in for a mirrored one).  Only a copy_in can
 * fail: its code, logged here. */
int fti_heal_stage_install(struct fti_heal *h, const struct heal_stage *stage, size_t n);

/* ---- striped fetching ----------------------------------------------------
 *
 * The state is cut into ranges of opts->chunk_bytes (per buffer, in
 * registration order).  One thread per source opens it (heal address,
 * connection, metadata: in parallel, while this thread maps the staging
 * memory) and then takes the first range nobody has, fetches it, and
 * takes the next: the sources share the ranges by their speed.  A source
 * that fails (closed connection, deadline, error reply) is dropped and its
 * range goes back for the others.  A frontier thread sums each buffer's
 * pieces in order as their ranges arrive (as the whole-buffer sums were
 * verified while streaming from one source).  Once every range is in, each
 * source's checksums (HealBuffer.piece_sums) are asked for; the sources
 * must agree (one that does not is dropped, logged once), and a piece
 * whose sum does not match is fetched again from another source, until
 * every piece verified or no source is left to try. */

enum { R_TODO, R_BUSY, R_DONE };

struct stripe_range {
    size_t buf;     /* index into the stage */
    size_t off, len;
    int state;      /* R_*, under the stripe's mutex */
    int src;        /* the source that delivered it (R_DONE) */
    uint32_t tried; /* sources it failed with, a bit each */
    int pin;        /* only this source may fetch it, -1: any */
    size_t landed;  /* R_BUSY: its bytes in place so far (fetch_landed) */
};

struct stripe;

struct stripe_src {
    struct stripe *sp;
    int idx;
    const char *manager;
    char addr[FTI_ADDRESS_SIZE];
    fti_rpc_client_h c;
    void *rma;                         /* opts->rma's connection, NULL: HEAL_FETCH */
    Ftmpi__HealMetadataResponse *m;    /* its metadata */
    Ftmpi__HealMetadataResponse *sums; /* its checksums (== m when not deferred) */
    bool dead;                         /* under the stripe's mutex */
    bool bad_sums;                     /* dropped for its checksums, ranges not put back yet */
    int rc;                            /* why it is dead */
    uint64_t bytes;
    pthread_t tid;
    bool joinable;
};

struct stripe {
    struct fti_heal *h;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* any range's state, ready, stop */
    struct heal_stage *stage;
    size_t n_stage;
    struct stripe_range *r;
    size_t n_r;
    int busy;   /* ranges in flight */
    bool ready; /* the staging memory is there */
    bool closed;   /* direct: stage_alloc closed serving (was_open: it had been open) */
    bool was_open;
    bool touched;  /* direct: a fetch into registered memory started */
    bool stop;  /* no fetching: staging failed, or the fetch did */
    bool sums_phase; /* first round: each source sends its checksums after */
    int group_rank;
    int64_t step, deadline_ms;
    const fti_heal_opts_t *opts;
    struct stripe_src *src;
    int n_src;
    int refetched; /* pieces that failed their checksum */
    /* progress lines of a long heal (fetch.c, progress_locked) */
    int64_t t0_ms, next_progress_ms;
    uint64_t done_bytes;
    size_t pop_upto; /* ranges below this index have their pages (SIZE_MAX: all) */
    /* the frontier: where the in-order sums of the first round are
     * (frontier_advance), under the mutex but for the summing itself */
    struct {
        size_t buf, pos, k, ri; /* stage, bytes summed, piece, the range holding pos */
        XXH3_state_t *xs;       /* piece k so far (ranges_make; freed by stripe_free) */
        bool busy;              /* a thread is summing */
        bool done;              /* every piece summed */
    } fr;
};

/* verify.c: checks every piece (chain_ok: the first round's in-order sums
 * hold); FT_SUCCESS, or *bad_p pieces were put back to be fetched again. */
int fti_heal_stripe_verify(struct stripe *sp, bool chain_ok, int *bad_p);
/* verify.c: the code the stripe ends with (a live source's, else the
 * first dead one's); whether every range is in. */
int fti_heal_stripe_code(const struct stripe *sp);
bool fti_heal_stripe_all_done(const struct stripe *sp);
/* source.c: a source's metadata against this rank's registrations; drops a
 * source (logged by the caller; _locked: the stripe's mutex held); a
 * source's failure as heal reports it. */
int fti_heal_check(struct fti_heal *h, const Ftmpi__HealMetadataResponse *m, const char *src);
/* source.c: a source's checksums of step (metadata or the checksum reply)
 * as they arrive: the step, the buffers as fti_heal_check wants them, the
 * piece sums' count and last one; logs what was wrong.  h's mutex held. */
int fti_heal_check_sums(struct fti_heal *h, const Ftmpi__HealMetadataResponse *m, int64_t step,
                        const char *src);
void fti_heal_src_dead(struct stripe_src *w, int rc);
void fti_heal_src_dead_locked(struct stripe_src *w, int rc);
int fti_heal_code(int rc);
/* source.c: opens source w (heal address, client, metadata of the step
 * checked; logs its failure); asks it for the checksums it deferred
 * (*resp_p freed with ftmpi__heal_metadata_response__free_unpacked). */
int fti_heal_src_open(struct stripe *sp, struct stripe_src *w);
int fti_heal_src_sums(fti_rpc_client_h c, int64_t step, int64_t deadline_ms,
                      Ftmpi__HealMetadataResponse **resp_p);

/* rma.c: the buffers' remote keys and the address (opts->rma's expose)
 * into hb[0..n) and *addr_p, for the metadata reply (loop thread). */
int fti_heal_rma_serve(struct fti_heal *h, Ftmpi__HealBuffer *hb, size_t n,
                       ProtobufCBinaryData *addr_p);
/* rma.c: after w's metadata was checked: a connection over opts->rma
 * when w serves it (w->rma), else nothing (HEAL_FETCH; logged). */
void fti_heal_rma_open(struct stripe *sp, struct stripe_src *w);
/* rma.c: range r from w over opts->rma into the staging memory, calling
 * landed(arg, bytes in place) as it goes.  Logs its failure. */
int fti_heal_rma_fetch(struct stripe *sp, struct stripe_src *w, struct stripe_range *r,
                       void (*landed)(void *, size_t), void *arg);

#endif
