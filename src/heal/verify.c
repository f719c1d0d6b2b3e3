/* heal/verify.c - verifying a striped fetch (see heal/stripe.h): every
 * source's checksums must agree, each piece is checked against the source
 * that sent it, and a piece that fails is fetched again from another. */
#include "heal/stripe.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

/* Source w's checksum entry of buffer `name`, NULL when missing. */
static const Ftmpi__HealBuffer *sums_of(const struct stripe_src *w, const char *name)
{
    for (size_t j = 0; j < w->sums->n_buffers; j++) {
        const Ftmpi__HealBuffer *b = w->sums->buffers[j];
        if (b != NULL && b->name != NULL && strcmp(b->name, name) == 0)
            return b;
    }
    return NULL;
}

/* Whether sources a and b sent the same checksums for every buffer. */
static bool sums_agree(const struct stripe *sp, const struct stripe_src *a,
                       const struct stripe_src *b)
{
    for (size_t i = 0; i < sp->n_stage; i++) {
        const Ftmpi__HealBuffer *x = sums_of(a, sp->stage[i].b->name);
        const Ftmpi__HealBuffer *y = sums_of(b, sp->stage[i].b->name);
        if (x == NULL || y == NULL) /* not after fti_heal_check_sums: never agree */
            return false;
        if (x->checksum != y->checksum || x->n_piece_sums != y->n_piece_sums ||
            (x->n_piece_sums > 0 &&
             memcmp(x->piece_sums, y->piece_sums, x->n_piece_sums * sizeof(uint64_t)) != 0))
            return false;
    }
    return true;
}

/* Puts every range of buffer i overlapping [lo, hi) back to do, and its
 * pieces as not verified: pinned to source pin, or (pin < 0) marked as
 * failed with the source that delivered it.  Only while no source thread
 * runs. */
static void ranges_redo(struct stripe *sp, size_t i, size_t lo, size_t hi, int pin)
{
    struct heal_stage *s = &sp->stage[i];
    for (size_t j = 0; j < sp->n_r; j++) {
        struct stripe_range *r = &sp->r[j];
        if (r->buf != i || r->off >= hi || r->off + r->len <= lo || r->state != R_DONE)
            continue;
        r->state = R_TODO;
        r->landed = 0;
        if (pin < 0)
            r->tried |= 1u << r->src;
        r->pin = pin;
        for (size_t k = r->off / FTI_HEAL_SUM_BYTES; k * FTI_HEAL_SUM_BYTES < r->off + r->len; k++)
            s->ok[k] = false;
    }
}

/* Whether every range of buffer i overlapping [lo, hi) is in. */
static bool ranges_in(const struct stripe *sp, size_t i, size_t lo, size_t hi)
{
    for (size_t j = 0; j < sp->n_r; j++) {
        const struct stripe_range *r = &sp->r[j];
        if (r->buf == i && r->off < hi && r->off + r->len > lo && r->state != R_DONE)
            return false;
    }
    return true;
}

/* Drops source a for its checksums (rc) and puts the ranges it delivered
 * back to do, for the others (no source thread runs). */
static void src_drop_ranges(struct stripe *sp, int a, int rc)
{
    fti_heal_src_dead(&sp->src[a], rc);
    for (size_t j = 0; j < sp->n_r; j++)
        if (sp->r[j].state == R_DONE && sp->r[j].src == a)
            ranges_redo(sp, sp->r[j].buf, sp->r[j].off, sp->r[j].off + sp->r[j].len, -1);
}

/* The reference checksums: of the live sources that sent theirs (each
 * checked on arrival, source.c's fti_heal_check_sums), those that more sources
 * agree with than with any other; the others are dropped, their ranges to
 * do again.  A disagreement nobody decides (two sources, or a tie) fails
 * the heal with FT_ERR_CHECKSUM: no source's word counts more for being
 * listed first (issue 23).  Sources dropped for their checksums on arrival
 * (bad_sums) have their ranges put back too.  *rc_p: why there is none
 * (NULL returned). */
static struct stripe_src *sums_reference(struct stripe *sp, int *rc_p)
{
    struct stripe_src *ref = NULL;
    int best = 0, tie = -1;
    for (int a = 0; a < sp->n_src; a++) {
        if (sp->src[a].bad_sums) {
            sp->src[a].bad_sums = false;
            src_drop_ranges(sp, a, FT_ERR_CHECKSUM);
        }
    }
    for (int a = 0; a < sp->n_src; a++) {
        struct stripe_src *w = &sp->src[a];
        if (w->dead || w->sums == NULL)
            continue;
        int votes = 0;
        for (int b = 0; b < sp->n_src; b++)
            votes += !sp->src[b].dead && sp->src[b].sums != NULL && sums_agree(sp, w, &sp->src[b]);
        if (votes > best) {
            best = votes;
            ref = w;
            tie = -1;
        } else if (votes == best && ref != NULL && !sums_agree(sp, ref, w)) {
            tie = a;
        }
    }
    if (ref == NULL) {
        *rc_p = fti_heal_stripe_code(sp);
        return NULL;
    }
    if (tie >= 0) {
        FTI_ERROR("heal: %s and %s sent other checksums of step %" PRId64 " (%d source%s each) and "
                  "no other source decides; the heal fails",
                  ref->addr, sp->src[tie].addr, sp->step, best, best == 1 ? "" : "s");
        *rc_p = FT_ERR_CHECKSUM;
        return NULL;
    }
    for (int a = 0; a < sp->n_src; a++) {
        struct stripe_src *w = &sp->src[a];
        if (w->dead || w->sums == NULL || sums_agree(sp, ref, w))
            continue;
        FTI_ERROR("heal: %s sent other checksums of step %" PRId64 " than %s and %d other "
                  "source%s; dropped as a source",
                  w->addr, sp->step, ref->addr, best - 1, best == 2 ? "" : "s");
        src_drop_ranges(sp, a, FT_ERR_CHECKSUM);
    }
    return ref;
}

/* The source that sent every range of buffer i overlapping [lo, hi), -1
 * when several did (ranges not aligned to the pieces). */
static int piece_owner(const struct stripe *sp, size_t i, size_t lo, size_t hi)
{
    int owner = -1;
    for (size_t j = 0; j < sp->n_r; j++) {
        const struct stripe_range *r = &sp->r[j];
        if (r->buf != i || r->off >= hi || r->off + r->len <= lo)
            continue;
        if (owner >= 0 && r->src != owner)
            return -1;
        owner = r->src;
    }
    return owner;
}

/* Verifies the pieces of stage s not verified yet against the reference
 * sums rb: by the frontier's chain (first round) or piece by piece (seeded
 * with the reference's sum of the piece before).  A piece that fails
 * drops its source when one source sent all of it, and is fetched again
 * whole from one live source (logged once each time).  Returns the pieces that
 * failed; FT_ERR_CHECKSUM (logged) when the source gives no piece sums
 * (one that predates them) and the whole buffer fails. */
static int verify_stage(struct stripe *sp, size_t i, const Ftmpi__HealBuffer *rb, bool chain_ok,
                        int *bad_p)
{
    struct heal_stage *s = &sp->stage[i];
    if (rb->n_piece_sums == 0 || s->n_pieces == 0) {
        if (s->sum != rb->checksum) {
            FTI_ERROR("heal: buffer '%s' fails its checksum (%016" PRIx64 " != %016" PRIx64 ")",
                      s->b->name, s->sum, rb->checksum);
            return FT_ERR_CHECKSUM;
        }
        return FT_SUCCESS;
    }
    if (rb->n_piece_sums != s->n_pieces) {
        FTI_WARN("heal: %zu piece sums for the %zu pieces of '%s'", rb->n_piece_sums, s->n_pieces,
                 s->b->name);
        return FT_ERR_PROC_FAILED;
    }
    for (size_t k = 0; k < s->n_pieces; k++) {
        size_t lo = k * FTI_HEAL_SUM_BYTES, n = FTI_MIN(FTI_HEAL_SUM_BYTES, s->b->len - lo);
        if (s->ok[k] || !ranges_in(sp, i, lo, lo + n))
            continue;
        uint64_t seed = k > 0 ? rb->piece_sums[k - 1] : 0;
        if (chain_ok && s->chain[k] == rb->piece_sums[k] && (k == 0 || s->chain[k - 1] == seed)) {
            s->ok[k] = true;
            continue;
        }
        if (fti_heal_sum(s->data + lo, n, seed) == rb->piece_sums[k]) {
            s->ok[k] = true;
            continue;
        }
        int owner = piece_owner(sp, i, lo, lo + n);
        FTI_WARN("heal: piece %zu of '%s' [%zu, +%zu) from %s fails its checksum; fetching it "
                 "again from another source",
                 k, s->b->name, lo, n, owner >= 0 ? sp->src[owner].addr : "several sources");
        if (owner >= 0) /* it alone sent the piece: it sends bad bytes */
            fti_heal_src_dead(&sp->src[owner], FT_ERR_CHECKSUM);
        /* the piece again from one source, so that a failure names it */
        int pin = -1;
        for (int j = 0; pin < 0 && j < sp->n_src; j++)
            if (!sp->src[j].dead)
                pin = j;
        ranges_redo(sp, i, lo, lo + n, pin);
        (*bad_p)++;
        sp->refetched++;
    }
    return FT_SUCCESS;
}

/* Verifies the staged copy against the reference checksums; *bad_p: the
 * pieces to fetch again. */
int fti_heal_stripe_verify(struct stripe *sp, bool chain_ok, int *bad_p)
{
    *bad_p = 0;
    int rc = FT_ERR_PROC_FAILED;
    struct stripe_src *ref = sums_reference(sp, &rc);
    if (ref == NULL)
        return rc;
    for (size_t i = 0; i < sp->n_stage; i++) {
        const Ftmpi__HealBuffer *rb = sums_of(ref, sp->stage[i].b->name);
        if (rb == NULL) { /* fti_heal_check_sums passed: not reached */
            FTI_ERROR("heal: %s sent no checksum of '%s'", ref->addr, sp->stage[i].b->name);
            return FT_ERR_INTERNAL;
        }
        rc = verify_stage(sp, i, rb, chain_ok, bad_p);
        if (rc != FT_SUCCESS)
            return rc;
    }
    return FT_SUCCESS;
}

/* The code of a failed heal: the gravest reason a source gave. */
int fti_heal_stripe_code(const struct stripe *sp)
{
    static const int order[] = {FT_ERR_NO_MEMORY, FT_ERR_ARG, FT_ERR_CHECKSUM, FT_ERR_TIMEOUT};
    for (size_t o = 0; o < FTI_ARRAY_SIZE(order); o++)
        for (int j = 0; j < sp->n_src; j++)
            if (sp->src[j].dead && fti_heal_code(sp->src[j].rc) == order[o])
                return order[o];
    return FT_ERR_PROC_FAILED;
}

bool fti_heal_stripe_all_done(const struct stripe *sp)
{
    for (size_t j = 0; j < sp->n_r; j++)
        if (sp->r[j].state != R_DONE)
            return false;
    return true;
}

