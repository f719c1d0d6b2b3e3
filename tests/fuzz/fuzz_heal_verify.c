/*
 * fuzz_heal_verify.c - the multi-source verification of a striped heal in
 * one thread, without sockets: the fast harness of what fuzz_heal drives
 * end to end (fuzz_heal: three RPC servers, a thread per source, a few
 * hundred inputs a second; this one: tens of thousands).
 *
 * The real code it runs on the fuzzed bytes: protobuf decoding of every
 * metadata and checksum reply, fti_heal_check and fti_heal_check_sums
 * (src/heal/source.c: each source's metadata and sums checked as they
 * arrive) and fti_heal_stripe_verify / _code / _all_done (src/heal/verify.c:
 * the sources' vote on the checksums, each piece against the reference,
 * sources dropped, pieces put back and pinned).  This harness plays the
 * part of fetch.c's threads: it hands every range still to do to a source
 * the input picks among those allowed (not failed with it, pin), in the
 * order fetch.c's rounds do, and sums the pieces in order as the frontier
 * does (optionally stale, as after a range that failed half-way).
 *
 * The input: byte 0 picks how many sources (1 + b % 3), the range size
 * (8 << ((b >> 2) % 4) bytes) and whether the frontier's sums go stale
 * (bit 6).  Then, as they are needed: each source's metadata (a piece),
 * for each range fetched a byte choosing the source and a piece (its
 * bytes), each source's checksums if it deferred them (a piece).  A
 * piece's first byte says what the source answers:
 *   bit 7 set   an error (the call failed: the source is dropped)
 *   0x40, 0x41  an honest answer for the truth, or for another state (one
 *               byte of "w" flipped); 0x42, 0x43: the same, checksums
 *               deferred (metadata)
 *   otherwise   the bytes after it, as they are (a range of another length
 *               fails, as a short RPC reply does)
 * An input that runs out answers errors.  The healer registers "w" (64
 * bytes) and "v" (8); the libFuzzer build makes FTI_HEAL_SUM_BYTES 16 here
 * (FUZZ_HEAL_INLINE) so that "w" has four checksum pieces.  Checks: the heal ends (a round cap);
 * verify never reaches its "not reached" FT_ERR_INTERNAL; a heal that
 * succeeds staged bytes whose piece sums and checksums a live source sent
 * and that passed fti_heal_check_sums, every live source with sums agrees
 * with it, and they had more votes than any other sums (a disagreement is
 * decided by votes or fails the heal, never by the order of the sources);
 * a failure's code is one heal reports.
 */
#include "fuzz_common.h"

#ifdef FUZZ_HEAL_INLINE
/* The libFuzzer build: fetch.c, source.c, stage.c and verify.c compiled here, with checksum
 * pieces of FTI_HEAL_SUM_BYTES = 16 bytes (both set on its command line,
 * Makefile.inc), so that the small buffers have several pieces; the
 * archive's copies of them are not linked. */
#include "heal/fetch.c"
#include "heal/source.c"
#include "heal/stage.c"
#include "heal/verify.c"
#endif

#include <pthread.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"
#include "heal/stripe.h"

#define N_SRC 3
#define W_LEN 64
#define V_LEN 8
#define STEP 9
#define MAX_ROUNDS 64

static struct {
    fti_heal_h heal;
    uint8_t w[W_LEN], v[V_LEN];
    uint8_t truth_w[W_LEN], alt_w[W_LEN], truth_v[V_LEN];
} S;

static void start(void)
{
    if (S.heal != NULL)
        return;
    fti_log_level = FTI_LOG_NONE;
    CHECK(fti_heal_create(&S.heal) == FT_SUCCESS);
    CHECK(fti_heal_register(S.heal, "w", S.w, W_LEN) == FT_SUCCESS);
    CHECK(fti_heal_register(S.heal, "v", S.v, V_LEN) == FT_SUCCESS);
    for (size_t i = 0; i < W_LEN; i++)
        S.truth_w[i] = (uint8_t)(i * 37 + 1);
    memcpy(S.alt_w, S.truth_w, W_LEN);
    S.alt_w[50] ^= 0x10;
    for (size_t i = 0; i < V_LEN; i++)
        S.truth_v[i] = (uint8_t)(200 - i);
}

static size_t n_pieces(size_t len)
{
    return (len + FTI_HEAL_SUM_BYTES - 1) / FTI_HEAL_SUM_BYTES;
}

/* The chained piece sums of [d, +len) into ps (n_pieces(len) of them). */
static void chain_sums(const uint8_t *d, size_t len, uint64_t *ps)
{
    uint64_t seed = 0;
    for (size_t k = 0, lo = 0; lo < len; k++, lo += FTI_HEAL_SUM_BYTES) {
        seed = fti_heal_sum(d + lo, FTI_MIN(FTI_HEAL_SUM_BYTES, len - lo), seed);
        ps[k] = seed;
    }
}

/* An honest metadata (or checksum) reply for the truth or the other
 * state, packed into b (as a source sends it: it is decoded like any). */
static size_t honest_meta(bool alt, bool deferred, uint8_t *b, size_t cap)
{
    uint64_t ws[W_LEN], vs[V_LEN]; /* at least n_pieces() of each */
    chain_sums(alt ? S.alt_w : S.truth_w, W_LEN, ws);
    chain_sums(S.truth_v, V_LEN, vs);
    Ftmpi__HealBuffer hb[2] = {FTMPI__HEAL_BUFFER__INIT, FTMPI__HEAL_BUFFER__INIT};
    Ftmpi__HealBuffer *phb[2] = {&hb[0], &hb[1]};
    hb[0].name = "w";
    hb[0].length = W_LEN;
    hb[1].name = "v";
    hb[1].length = V_LEN;
    if (!deferred) {
        hb[0].n_piece_sums = n_pieces(W_LEN);
        hb[0].piece_sums = ws;
        hb[0].checksum = ws[hb[0].n_piece_sums - 1];
        hb[1].n_piece_sums = n_pieces(V_LEN);
        hb[1].piece_sums = vs;
        hb[1].checksum = vs[hb[1].n_piece_sums - 1];
    }
    Ftmpi__HealMetadataResponse m = FTMPI__HEAL_METADATA_RESPONSE__INIT;
    m.step = STEP;
    m.n_buffers = 2;
    m.buffers = phb;
    m.sums_deferred = deferred;
    size_t len = ftmpi__heal_metadata_response__get_packed_size(&m);
    CHECK(len <= cap);
    return ftmpi__heal_metadata_response__pack(&m, b);
}

/* The error code of a failed call whose reply was op. */
static int err_of(const uint8_t *d, size_t len)
{
    int rc = len > 0 ? -(int)(d[0] & 0x3f) : 0;
    return rc != 0 ? rc : FT_ERR_PROC_FAILED;
}

/* The next metadata or checksum reply of a source, decoded; NULL with
 * *rc_p when the call failed or the reply does not decode. */
static Ftmpi__HealMetadataResponse *next_meta(fuzz_in_t *in, int *rc_p)
{
    size_t len = 0;
    const uint8_t *d = fz_piece(in, &len);
    uint8_t b[1024];
    const uint8_t *p = d + 1;
    size_t n = len - 1;
    if (len == 0 || (d[0] & 0x80)) {
        *rc_p = err_of(d, len);
        return NULL;
    }
    if ((d[0] & 0xfc) == 0x40) {
        n = honest_meta(d[0] & 1, d[0] & 2, b, sizeof(b));
        p = b;
    }
    Ftmpi__HealMetadataResponse *m = ftmpi__heal_metadata_response__unpack(NULL, n, p);
    *rc_p = m != NULL ? FT_SUCCESS : FT_ERR_BAD_MESSAGE;
    return m;
}

/* fetch.c's src_open past the connection: the metadata of the step,
 * checked against the registrations. */
static void open_src(struct stripe *sp, struct stripe_src *w, fuzz_in_t *in)
{
    int rc;
    w->m = next_meta(in, &rc);
    if (rc == FT_SUCCESS && w->m->step != sp->step)
        rc = FT_ERR_PROC_FAILED;
    if (rc == FT_SUCCESS) {
        pthread_mutex_lock(&sp->h->mu);
        rc = w->m->sums_deferred ? fti_heal_check(sp->h, w->m, w->addr)
                                 : fti_heal_check_sums(sp->h, w->m, sp->step, w->addr);
        pthread_mutex_unlock(&sp->h->mu);
    }
    if (rc == FT_SUCCESS && !w->m->sums_deferred)
        w->sums = w->m;
    if (rc != FT_SUCCESS)
        fti_heal_src_dead(w, rc);
}

/* fetch.c's src_main after its share: the checksums it deferred, checked
 * as they arrive (a source that sent unusable ones never votes). */
static void sums_src(struct stripe *sp, struct stripe_src *w, fuzz_in_t *in)
{
    int rc;
    Ftmpi__HealMetadataResponse *sums = next_meta(in, &rc);
    bool bad = false;
    if (rc == FT_SUCCESS) {
        pthread_mutex_lock(&sp->h->mu);
        rc = fti_heal_check_sums(sp->h, sums, sp->step, w->addr);
        pthread_mutex_unlock(&sp->h->mu);
        if (rc != FT_SUCCESS) {
            bad = true;
            ftmpi__heal_metadata_response__free_unpacked(sums, NULL);
        }
    }
    if (rc == FT_SUCCESS)
        w->sums = sums;
    else
        fti_heal_src_dead(w, rc);
    w->bad_sums = bad;
}

/* One round of fetch.c's fetch_loop over all sources: every range to do
 * goes to a source allowed to take it (the input picks which) until one
 * delivers it or none is left for it. */
static void fetch_round(struct stripe *sp, fuzz_in_t *in)
{
    for (size_t j = 0; j < sp->n_r; j++) {
        struct stripe_range *r = &sp->r[j];
        struct heal_stage *s = &sp->stage[r->buf];
        while (r->state == R_TODO) {
            int cand[N_SRC], nc = 0;
            for (int k = 0; k < sp->n_src; k++)
                if (!sp->src[k].dead && !(r->tried & (1u << k)) && (r->pin < 0 || r->pin == k))
                    cand[nc++] = k;
            if (nc == 0)
                break;
            struct stripe_src *w = &sp->src[cand[fz_u8(in) % nc]];
            size_t len = 0;
            const uint8_t *d = fz_piece(in, &len);
            const uint8_t *bytes = d + 1;
            int rc = FT_SUCCESS;
            if (len == 0 || (d[0] & 0x80)) {
                rc = err_of(d, len);
            } else if ((d[0] & 0xfe) == 0x40) {
                bool isw = strcmp(s->b->name, "w") == 0;
                bytes = (isw ? (d[0] & 1 ? S.alt_w : S.truth_w) : S.truth_v) + r->off;
            } else if (len - 1 != r->len) {
                rc = FT_ERR_BAD_MESSAGE;
            }
            if (rc != FT_SUCCESS) {
                r->tried |= 1u << w->idx;
                fti_heal_src_dead(w, rc);
                continue;
            }
            memcpy(s->data + r->off, bytes, r->len);
            r->state = R_DONE;
            r->src = w->idx;
            w->bytes += r->len;
        }
    }
}

/* The frontier's in-order sums (stale: one piece summed over other bytes,
 * as when a range failed half-way and came again from another source). */
static void frontier(struct stripe *sp, bool stale)
{
    for (size_t i = 0; i < sp->n_stage; i++) {
        struct heal_stage *s = &sp->stage[i];
        chain_sums(s->data, s->b->len, s->chain);
        s->sum = s->chain[s->n_pieces - 1];
        if (stale && i == 0)
            s->chain[s->n_pieces / 2] ^= 1;
    }
}

/* Whether buffer i's staged bytes are what the checksums b say. */
static bool stage_matches(const struct heal_stage *s, const Ftmpi__HealBuffer *b)
{
    uint64_t ps[W_LEN];
    chain_sums(s->data, s->b->len, ps);
    if (b->checksum != ps[s->n_pieces - 1])
        return false;
    return b->n_piece_sums == 0 || (b->n_piece_sums == s->n_pieces &&
                                    memcmp(b->piece_sums, ps, s->n_pieces * sizeof(uint64_t)) == 0);
}

static const Ftmpi__HealBuffer *buf_of(const Ftmpi__HealMetadataResponse *m, const char *name)
{
    for (size_t j = 0; j < m->n_buffers; j++)
        if (m->buffers[j]->name != NULL && strcmp(m->buffers[j]->name, name) == 0)
            return m->buffers[j];
    return NULL;
}

/* Whether sources a and b sent the same checksums of every buffer. */
static bool same_sums(const struct stripe *sp, const struct stripe_src *a,
                      const struct stripe_src *b)
{
    for (size_t i = 0; i < sp->n_stage; i++) {
        const Ftmpi__HealBuffer *x = buf_of(a->sums, sp->stage[i].b->name);
        const Ftmpi__HealBuffer *y = buf_of(b->sums, sp->stage[i].b->name);
        if (x->checksum != y->checksum || x->n_piece_sums != y->n_piece_sums ||
            (x->n_piece_sums > 0 &&
             memcmp(x->piece_sums, y->piece_sums, x->n_piece_sums * sizeof(uint64_t)) != 0))
            return false;
    }
    return true;
}

/* After a heal that succeeded: every live source with checksums vouches
 * for the staged bytes (one at least does), and those checksums had more
 * votes than any other among the sources that had sent usable ones when
 * the sources were first compared (voter[j]): never "the first listed
 * wins" (issue 23). */
static void check_staged(const struct stripe *sp, const bool *voter)
{
    int win = -1;
    int vouch = 0;
    for (int j = 0; j < sp->n_src; j++) {
        const struct stripe_src *w = &sp->src[j];
        if (w->dead || w->sums == NULL)
            continue;
        for (size_t i = 0; i < sp->n_stage; i++) {
            const Ftmpi__HealBuffer *b = buf_of(w->sums, sp->stage[i].b->name);
            CHECK(b != NULL);
            CHECK(stage_matches(&sp->stage[i], b));
        }
        vouch++;
        win = j;
    }
    CHECK(vouch > 0);
    int votes_win = 0;
    for (int j = 0; j < sp->n_src; j++)
        votes_win += voter[j] && same_sums(sp, &sp->src[win], &sp->src[j]);
    for (int a = 0; a < sp->n_src; a++) {
        if (!voter[a] || same_sums(sp, &sp->src[win], &sp->src[a]))
            continue;
        int votes = 0;
        for (int j = 0; j < sp->n_src; j++)
            votes += voter[j] && same_sums(sp, &sp->src[a], &sp->src[j]);
        CHECK(votes < votes_win);
    }
}

/* fetch.c's stripe_fetch with this file's rounds. */
static int heal(struct stripe *sp, fuzz_in_t *in, bool stale, bool *voter)
{
    for (int j = 0; j < sp->n_src; j++)
        open_src(sp, &sp->src[j], in);
    fetch_round(sp, in);
    for (int j = 0; j < sp->n_src; j++)
        if (!sp->src[j].dead && sp->src[j].sums == NULL)
            sums_src(sp, &sp->src[j], in);
    if (!fti_heal_stripe_all_done(sp))
        return fti_heal_stripe_code(sp);
    frontier(sp, stale);
    for (int j = 0; j < sp->n_src; j++)
        voter[j] = !sp->src[j].dead && sp->src[j].sums != NULL;
    int bad = 0, rounds = 0;
    int rc = fti_heal_stripe_verify(sp, true, &bad);
    sp->sums_phase = false;
    while (rc == FT_SUCCESS && !fti_heal_stripe_all_done(sp)) {
        CHECK(++rounds < MAX_ROUNDS); /* pieces put back converge */
        fetch_round(sp, in);
        if (!fti_heal_stripe_all_done(sp))
            rc = fti_heal_stripe_code(sp);
        if (rc == FT_SUCCESS)
            rc = fti_heal_stripe_verify(sp, false, &bad);
    }
    CHECK(rc != FT_ERR_INTERNAL);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    start();
    fuzz_in_t in = {data, size, 1};
    struct stripe sp;
    struct stripe_src src[N_SRC];
    struct heal_stage stage[2];
    struct stripe_range r[W_LEN + V_LEN];
    uint8_t sw[W_LEN], sv[V_LEN];
    uint64_t chain[2][W_LEN];
    bool ok[2][W_LEN];
    memset(&sp, 0, sizeof(sp));
    memset(src, 0, sizeof(src));
    memset(stage, 0, sizeof(stage));
    pthread_mutex_init(&sp.mu, NULL);
    pthread_cond_init(&sp.cv, NULL);
    sp.h = S.heal;
    sp.step = STEP;
    sp.sums_phase = true;
    sp.ready = true;
    sp.n_src = 1 + data[0] % N_SRC;
    sp.src = src;
    for (int j = 0; j < sp.n_src; j++) {
        src[j] = (struct stripe_src){.sp = &sp, .idx = j};
        snprintf(src[j].addr, sizeof(src[j].addr), "127.0.0.%d:1", j + 1);
    }
    /* the staging memory and ranges (fetch.c's stage_alloc, ranges_make) */
    CHECK(S.heal->n == 2);
    uint8_t *mem[2] = {sw, sv};
    size_t chunk = (size_t)8 << ((data[0] >> 2) % 4);
    for (size_t i = 0; i < 2; i++) {
        stage[i].b = S.heal->bufs[i];
        stage[i].data = mem[i];
        stage[i].n_pieces = n_pieces(stage[i].b->len);
        CHECK(stage[i].n_pieces <= W_LEN);
        stage[i].chain = chain[i];
        stage[i].ok = ok[i];
        memset(ok[i], 0, sizeof(ok[i]));
        memset(mem[i], 0x5a, stage[i].b->len);
        for (size_t off = 0; off < stage[i].b->len; off += chunk)
            r[sp.n_r++] = (struct stripe_range){
                i, off, FTI_MIN(chunk, stage[i].b->len - off), R_TODO, -1, 0, -1, 0};
    }
    sp.stage = stage;
    sp.n_stage = 2;
    sp.r = r;
    sp.pop_upto = SIZE_MAX;

    bool voter[N_SRC] = {false};
    int rc = heal(&sp, &in, data[0] & 0x40, voter);
    if (rc == FT_SUCCESS) {
        check_staged(&sp, voter);
    } else {
        rc = fti_heal_code(rc);
        CHECK(rc == FT_ERR_PROC_FAILED || rc == FT_ERR_CHECKSUM || rc == FT_ERR_ARG ||
              rc == FT_ERR_TIMEOUT || rc == FT_ERR_NO_MEMORY);
    }
    for (int j = 0; j < sp.n_src; j++) { /* fetch.c's stripe_free */
        if (src[j].sums != NULL && src[j].sums != src[j].m)
            ftmpi__heal_metadata_response__free_unpacked(src[j].sums, NULL);
        if (src[j].m != NULL)
            ftmpi__heal_metadata_response__free_unpacked(src[j].m, NULL);
    }
    pthread_cond_destroy(&sp.cv);
    pthread_mutex_destroy(&sp.mu);
    return 0;
}

/* ---- generated cases -------------------------------------------------------- */

static void op(fuzz_out_t *o, uint8_t code)
{
    fo_piece(o, &code, 1);
}

/* A case: n sources whose metadata replies are meta[j]; every range
 * (ranges of 8 bytes: 9 of them) fetched from source sel[k] with reply
 * code data[k] (k past 9: the rounds that fetch again); then the deferred
 * checksums sums[j] of the sources that deferred them. */
static void emit_case(fuzz_emit_fn emit, uint8_t head, int n, const uint8_t *meta,
                      const uint8_t *sel, const uint8_t *data, int n_data, const uint8_t *sums)
{
    fuzz_out_t *o = malloc(sizeof(*o));
    CHECK(o != NULL);
    o->n = 0;
    fo_u8(o, head);
    for (int j = 0; j < n; j++)
        op(o, meta[j]);
    for (int k = 0; k < n_data && k < 9; k++) {
        fo_u8(o, sel[k]);
        op(o, data[k]);
    }
    for (int j = 0; j < n; j++)
        if (sums[j] != 0)
            op(o, sums[j]);
    for (int k = 9; k < n_data; k++) {
        fo_u8(o, sel[k]);
        op(o, data[k]);
    }
    emit(o->d, o->n);
    free(o);
}

void fuzz_generated(fuzz_emit_fn emit)
{
    /* head: sources 1 + head % 3; ranges of 8 << ((head >> 2) % 4) bytes */
    const uint8_t sel[12] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2};
    const uint8_t truth[12] = {0x40, 0x40, 0x40, 0x40, 0x40, 0x40,
                               0x40, 0x40, 0x40, 0x40, 0x40, 0x40};
    const uint8_t m_def[3] = {0x42, 0x42, 0x42}, s_def[3] = {0x40, 0x40, 0x40};
    const uint8_t m_now[3] = {0x40, 0x40, 0x40}, s_none[3] = {0, 0, 0};
    emit_case(emit, 2, 3, m_def, sel, truth, 9, s_def);
    emit_case(emit, 0, 1, m_now, sel, truth, 9, s_none);
    emit_case(emit, 2 | 0x40, 3, m_now, sel, truth, 9, s_none);
    /* another state's sums: outvoted by two, a tie with one */
    const uint8_t m_alt[3] = {0x43, 0x42, 0x42}, s_alt[3] = {0x41, 0x40, 0x40};
    emit_case(emit, 2, 3, m_alt, sel, truth, 12, s_alt);
    emit_case(emit, 1, 2, m_alt, sel, truth, 12, s_alt);
    /* bad bytes from one source: its pieces fetched again from another */
    uint8_t bad[12];
    memcpy(bad, truth, sizeof(bad));
    bad[6] = 0x41; /* "w" [48, 56): the byte the other state flips */
    emit_case(emit, 2, 3, m_def, sel, bad, 12, s_def);
    /* errors: a failed metadata, a failed range, failed checksums */
    const uint8_t m_err[3] = {0x42, 0x81, 0x42}, s_err[3] = {0x40, 0, 0x85};
    uint8_t err[12];
    memcpy(err, truth, sizeof(err));
    err[2] = 0x82;
    emit_case(emit, 2, 3, m_err, sel, err, 12, s_err);
    emit_case(emit, 2 | 4, 3, m_def, sel, truth, 9, s_def);
}
