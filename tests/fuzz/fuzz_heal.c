/*
 * fuzz_heal.c - a striped heal (fti_heal_stage_multi, src/heal/fetch.c)
 * from several fake sources whose every reply comes from the input: the
 * multi-source verification (metadata and checksums checked as they
 * arrive, sources compared, pieces fetched again) with arbitrary replies.
 *
 * Three fake sources, RPC servers on 127.0.0.1, answer the manager's
 * CHECKPOINT_METADATA with their own address; every other call (metadata,
 * a range, the checksums) takes the next piece of that source's stream.
 * The input: byte 0 picks how many sources the heal uses (1 + b % 3) and
 * the range size; then pieces (fuzz_common.h), piece i going to source
 * i % n.  A piece's first byte says what to answer:
 *   bit 7 set   an error reply (status from the low bits)
 *   0x40, 0x41  an honest answer for the truth, or for another state (one
 *               byte of "w" flipped): the requested range's bytes, or the
 *               buffers with their checksums (0x42, 0x43: the same
 *               metadata, checksums deferred)
 *   otherwise   the bytes after it, as they are
 * The healer registers "w" (64 bytes) and "v" (8 bytes).  Checks: the heal
 * ends (no hang, crash or leak); a failed heal leaves the healer's memory
 * untouched; a heal that succeeds installed bytes whose checksums a source
 * sent (some reply that decodes as HealMetadataResponse carried exactly
 * those two checksums), so nothing unverified is installed.
 */
#include "fuzz_common.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <signal.h>

#include "ftmpi_errors.h"
#include "heal/heal.h"
#include "base/log.h"
#include "control/message.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/rpc.h"
#include "base/sizes.h"
#include "base/util.h"

#define N_SRC 3
#define W_LEN 64
#define V_LEN 8
#define STEP 9
#define MAX_PIECES 256
#define MAX_SEEN 64

struct src {
    fti_rpc_server_h srv;
    char addr[FTI_ADDRESS_SIZE];
    const uint8_t *piece[MAX_PIECES]; /* its stream, under S.mu */
    size_t len[MAX_PIECES];
    size_t n, next;
};

static struct {
    struct event_base *base;
    pthread_t loop;
    pthread_mutex_t mu;
    struct src src[N_SRC];
    fti_heal_h heal;
    uint8_t w[W_LEN], v[V_LEN];
    uint8_t truth_w[W_LEN], alt_w[W_LEN], truth_v[V_LEN];
    uint64_t seen[MAX_SEEN][2]; /* checksums ("w", "v") of the replies sent */
    size_t n_seen;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void note_sums(const uint8_t *p, size_t len)
{
    Ftmpi__HealMetadataResponse *m = ftmpi__heal_metadata_response__unpack(NULL, len, p);
    if (m == NULL)
        return;
    uint64_t cw = 0, cv = 0;
    int hw = 0, hv = 0;
    for (size_t i = 0; i < m->n_buffers; i++) {
        const char *name = m->buffers[i]->name ? m->buffers[i]->name : "";
        if (strcmp(name, "w") == 0 && !hw++)
            cw = m->buffers[i]->checksum;
        if (strcmp(name, "v") == 0 && !hv++)
            cv = m->buffers[i]->checksum;
    }
    if (hw && hv && S.n_seen < MAX_SEEN) {
        S.seen[S.n_seen][0] = cw;
        S.seen[S.n_seen][1] = cv;
        S.n_seen++;
    }
    ftmpi__heal_metadata_response__free_unpacked(m, NULL);
}

/* An honest reply for the truth (alt: the other state). */
static void honest(fti_rpc_call_h call, const uint8_t *req_p, size_t req_len, bool alt,
                   bool deferred)
{
    const uint8_t *w = alt ? S.alt_w : S.truth_w;
    uint16_t method = fti_rpc_call_method(call);
    Ftmpi__HealFetchRequest *req = NULL;
    if (method == FTMPI__METHOD__HEAL_FETCH) {
        req = ftmpi__heal_fetch_request__unpack(NULL, req_len, req_p);
        if (req == NULL) {
            fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "does not decode");
            return;
        }
        if (!req->sums) {
            bool isw = req->name != NULL && strcmp(req->name, "w") == 0;
            size_t blen = isw ? W_LEN : V_LEN;
            if (req->offset > blen || req->length > blen - req->offset)
                fti_rpc_reply_error(call, FT_ERR_ARG, "out of range");
            else
                fti_rpc_reply(call, (isw ? w : S.truth_v) + req->offset, req->length);
            ftmpi__heal_fetch_request__free_unpacked(req, NULL);
            return;
        }
        ftmpi__heal_fetch_request__free_unpacked(req, NULL);
        deferred = false;
    }
    uint64_t sw = fti_heal_sum(w, W_LEN, 0), sv = fti_heal_sum(S.truth_v, V_LEN, 0);
    Ftmpi__HealBuffer hb[2] = {FTMPI__HEAL_BUFFER__INIT, FTMPI__HEAL_BUFFER__INIT};
    Ftmpi__HealBuffer *phb[2] = {&hb[0], &hb[1]};
    hb[0].name = "w";
    hb[0].length = W_LEN;
    hb[1].name = "v";
    hb[1].length = V_LEN;
    if (!deferred) {
        hb[0].checksum = sw;
        hb[0].n_piece_sums = 1;
        hb[0].piece_sums = &sw;
        hb[1].checksum = sv;
        hb[1].n_piece_sums = 1;
        hb[1].piece_sums = &sv;
    }
    Ftmpi__HealMetadataResponse m = FTMPI__HEAL_METADATA_RESPONSE__INIT;
    m.step = STEP;
    m.n_buffers = 2;
    m.buffers = phb;
    m.sums_deferred = deferred;
    if (!deferred) {
        pthread_mutex_lock(&S.mu);
        if (S.n_seen < MAX_SEEN) {
            S.seen[S.n_seen][0] = sw;
            S.seen[S.n_seen][1] = sv;
            S.n_seen++;
        }
        pthread_mutex_unlock(&S.mu);
    }
    fti_rpc_reply_msg(call, &m.base);
}

static void answer(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    struct src *s = arg;
    if (fti_rpc_call_method(call) == FTMPI__METHOD__MANAGER_CHECKPOINT_METADATA) {
        Ftmpi__CheckpointMetadataResponse r = FTMPI__CHECKPOINT_METADATA_RESPONSE__INIT;
        r.heal_address = s->addr;
        fti_rpc_reply_msg(call, &r.base);
        return;
    }
    pthread_mutex_lock(&S.mu);
    const uint8_t *d = NULL;
    size_t n = 0;
    if (s->next < s->n) {
        d = s->piece[s->next];
        n = s->len[s->next];
        s->next++;
    }
    if (d != NULL && n > 1 && !(d[0] & 0x80) && (d[0] & 0xfc) != 0x40)
        note_sums(d + 1, n - 1);
    pthread_mutex_unlock(&S.mu);
    if (d == NULL || n == 0)
        fti_rpc_reply_error(call, FT_ERR_PROC_FAILED, "no more replies");
    else if (d[0] & 0x80)
        fti_rpc_reply_error(call, -(int)(d[0] & 0x3f), "fuzzed error");
    else if ((d[0] & 0xfc) == 0x40)
        honest(call, p, len, d[0] & 1, d[0] & 2);
    else
        fti_rpc_reply(call, d + 1, n - 1);
}

static const uint16_t methods_used[] = {FTMPI__METHOD__MANAGER_CHECKPOINT_METADATA,
                                        FTMPI__METHOD__HEAL_METADATA, FTMPI__METHOD__HEAL_FETCH};

static void *loop_main(void *arg)
{
    (void)arg;
    event_base_loop(S.base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

static void start(void)
{
    if (S.base)
        return;
    signal(SIGPIPE, SIG_IGN);
    fti_log_level = FTI_LOG_NONE;
    CHECK(evthread_use_pthreads() == 0);
    S.base = event_base_new();
    CHECK(S.base != NULL);
    for (int j = 0; j < N_SRC; j++) {
        fti_rpc_method_t m[3];
        for (int k = 0; k < 3; k++)
            m[k] = (fti_rpc_method_t){methods_used[k], answer};
        CHECK(fti_rpc_server_create(S.base, "127.0.0.1:0", 1 << 16, NULL, m, 3, &S.src[j],
                                    &S.src[j].srv) == FT_SUCCESS);
        fti_strlcpy(S.src[j].addr, fti_rpc_server_address(S.src[j].srv), sizeof(S.src[j].addr));
    }
    CHECK(pthread_create(&S.loop, NULL, loop_main, NULL) == 0);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    start();
    int n_src = 1 + data[0] % N_SRC;
    size_t chunk = (size_t)8 << ((data[0] >> 2) % 4); /* 8..64 bytes */
    fuzz_in_t in = {data, size, 1};
    pthread_mutex_lock(&S.mu);
    for (int j = 0; j < N_SRC; j++)
        S.src[j].n = S.src[j].next = 0;
    for (size_t i = 0; in.pos < in.n && i < (size_t)N_SRC * MAX_PIECES; i++) {
        struct src *s = &S.src[i % (size_t)n_src];
        size_t len = 0;
        const uint8_t *d = fz_piece(&in, &len);
        if (s->n < MAX_PIECES) {
            s->piece[s->n] = d;
            s->len[s->n++] = len;
        }
    }
    S.n_seen = 0;
    pthread_mutex_unlock(&S.mu);

    uint8_t before_w[W_LEN], before_v[V_LEN];
    for (size_t i = 0; i < W_LEN; i++)
        S.w[i] = (uint8_t)(255 - i);
    memset(S.v, 0xee, V_LEN);
    memcpy(before_w, S.w, W_LEN);
    memcpy(before_v, S.v, V_LEN);
    fti_heal_set_step(S.heal, 3, false);
    const char *managers[N_SRC];
    for (int j = 0; j < n_src; j++)
        managers[j] = S.src[j].addr;
    fti_heal_opts_t o = {2000, 1 << 16, chunk, false, NULL, NULL};
    fti_heal_staged_h staged = NULL;
    int rc = fti_heal_stage_multi(S.heal, managers, n_src, 0, STEP, &o, fti_now_ms() + 3000,
                                  &staged, NULL);
    if (rc == FT_SUCCESS)
        CHECK(fti_heal_install(S.heal, staged) >= 0);

    pthread_mutex_lock(&S.mu);
    if (rc != FT_SUCCESS) {
        CHECK(memcmp(before_w, S.w, W_LEN) == 0); /* a failed heal changes nothing */
        CHECK(memcmp(before_v, S.v, V_LEN) == 0);
    } else {
        uint64_t sw = fti_heal_sum(S.w, W_LEN, 0), sv = fti_heal_sum(S.v, V_LEN, 0);
        bool sent = false;
        for (size_t k = 0; k < S.n_seen && !sent; k++)
            sent = S.seen[k][0] == sw && S.seen[k][1] == sv;
        CHECK(sent); /* installed only what a source's checksums vouch for */
    }
    for (int j = 0; j < N_SRC; j++)
        S.src[j].n = S.src[j].next = 0;
    pthread_mutex_unlock(&S.mu);
    return 0;
}

/* ---- generated cases -------------------------------------------------------- */

static void op(fuzz_out_t *o, uint8_t code)
{
    fo_piece(o, &code, 1);
}

/* n sources answering with the codes in turn: codes[j][k] is source j's
 * k-th answer (0: none). */
static void emit_case(fuzz_emit_fn emit, uint8_t head, int n, const uint8_t codes[][12])
{
    fuzz_out_t o;
    o.n = 0;
    fo_u8(&o, head);
    for (int k = 0; k < 12; k++)
        for (int j = 0; j < n; j++) {
            if (codes[j][k] == 0xff) { /* sums without buffer "v": the issue 23 crash */
                Ftmpi__HealBuffer hb = FTMPI__HEAL_BUFFER__INIT, *phb = &hb;
                uint8_t w[W_LEN];
                for (size_t i = 0; i < W_LEN; i++)
                    w[i] = (uint8_t)(i * 37 + 1);
                uint64_t sw = fti_heal_sum(w, W_LEN, 0);
                hb.name = "w";
                hb.length = W_LEN;
                hb.checksum = sw;
                hb.n_piece_sums = 1;
                hb.piece_sums = &sw;
                Ftmpi__HealMetadataResponse m = FTMPI__HEAL_METADATA_RESPONSE__INIT;
                m.step = STEP;
                m.n_buffers = 1;
                m.buffers = &phb;
                uint8_t b[256];
                size_t len = ftmpi__heal_metadata_response__get_packed_size(&m);
                b[0] = 0;
                ftmpi__heal_metadata_response__pack(&m, b + 1);
                fo_piece(&o, b, len + 1);
            } else {
                op(&o, codes[j][k]);
            }
        }
    emit(o.d, o.n);
}

void fuzz_generated(fuzz_emit_fn emit)
{
    /* head: sources 1 + head % 3; range 8 << ((head >> 2) % 4) bytes.
     * 0x42: deferred metadata, 0x40: a range or the checksums, honest. */
    const uint8_t honest3[3][12] = {{0x42, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40},
                                    {0x42, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40},
                                    {0x42, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40}};
    emit_case(emit, 2 | 8, 3, honest3);
    emit_case(emit, 0 | 12, 1, honest3);
    /* one source sends checksums without "v" whenever it is asked */
    uint8_t missing[3][12];
    memcpy(missing, honest3, sizeof(missing));
    for (int k = 1; k < 12; k++)
        missing[1][k] = 0xff;
    emit_case(emit, 2 | 8, 3, missing);
    emit_case(emit, 1 | 12, 2, missing);
    /* another state, consistent: outvoted by two, a tie with one */
    uint8_t alt[3][12];
    memcpy(alt, honest3, sizeof(alt));
    alt[0][0] = 0x43;
    for (int k = 1; k < 12; k++)
        alt[0][k] = 0x41;
    emit_case(emit, 2 | 8, 3, alt);
    emit_case(emit, 1 | 8, 2, alt);
    /* checksums in the metadata, errors, garbage */
    const uint8_t mixed[3][12] = {{0x40, 0x40, 0x81, 0x40, 0x40, 0x40, 0x40},
                                  {0x40, 0x01, 0x40, 0x40, 0x40, 0x40, 0x40},
                                  {0x42, 0x40, 0x40, 0x40, 0x40, 0x41, 0x40, 0x40}};
    emit_case(emit, 2, 3, mixed);
    emit_case(emit, 2 | 4, 3, mixed);
}
