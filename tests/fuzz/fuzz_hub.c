/*
 * fuzz_hub.c - the drop-in's watchdog hub (mpi_shim/hub.c; its rules in
 * hub.h) fed by up to FH_PEERS peers on socketpairs, with a fake clock.
 *
 * Input byte 0: bit 0 gives the hub a job secret, the next bits the job's
 * size (2-7 ranks).  Then operations, each an op byte (kind = op % 6,
 * peer = op / 6 % FH_PEERS) and its arguments:
 *   0  the peer connects as an intruder (without the secret)
 *   1  the peer connects as an insider: with a secret it passes the
 *      handshake (the harness holds the key; it must succeed)
 *   2  the peer sends a piece of bytes (fz_piece)
 *   3  the peer sends one frame: type u8 % 7, value u8 % (size + 2)
 *   4  the peer closes
 *   5  the clock moves u16 * 4 ms; u8 & 1: a ping round
 * Checks, after every operation:
 *  - with a secret an intruder never holds a rank, never gets a byte but
 *    the handshake's challenge, and its closing is no loss;
 *  - a rank is held by its first claimant only (claimed once), and lost
 *    (the callback) at most once, only after it was claimed, once its
 *    connection is closed;
 *  - an insider's frame does what hub.h says: a HELLO of a free rank claims
 *    it, any other first frame or claim closes the connection (a REFUSED
 *    frame before it for a claim of a taken rank), a claimed rank's frames
 *    never close it;
 *  - the clock: a connection that made no claim within FTI_AUTH_TIMEOUT_MS
 *    is closed, a claimed rank silent for the silence limit is lost;
 *  - the table: as many connections open as the peers see open, at most
 *    FTI_HUB_MAX_PENDING waiting for their claim; at the end, every peer
 *    closed, every slot free again.
 */
#include "fuzz_common.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/auth.h"
#include "base/log.h"
#include "base/net.h"
#include "base/util.h"
#include "mpi_shim/hub.h"

#define FH_PEERS 40
#define FH_SILENCE_MS 1000
#define FH_PIECE_MAX 4096

enum { P_NONE, P_OPEN, P_CLOSED };

struct peer {
    int id;              /* this incarnation of the peer (an index is reused) */
    int state;
    int fd;              /* our end */
    int slot;            /* the hub's */
    bool insider;        /* passed the handshake (or no secret) */
    bool dirty;          /* an insider that sent raw bytes: its state is the hub's word */
    int rank;            /* claimed (-1: none) */
    bool bye;
    int64_t opened, last;
    size_t got;          /* bytes the hub sent it */
    uint8_t frame[FTI_HUB_FRAME_LEN];
    size_t fgot;
    bool refused;        /* got a REFUSED frame */
};

static struct {
    fti_hub_h hub;
    bool keyed;
    fti_auth_key_t key;
    int size;
    int64_t now;
    struct peer p[FH_PEERS];
    int claimant[8];     /* per rank: the peer that claimed it, -1 */
    int claimant_id[8];  /* ... and its id */
    int next_id;
    int lost[8];         /* per rank: lost callbacks */
} F;

static void on_lost(int r, int why, void *arg)
{
    (void)arg;
    CHECK(r > 0 && r < F.size);
    CHECK(why == FTI_HUB_WHY_DEAD || why == FTI_HUB_WHY_SILENT);
    CHECK(F.claimant[r] >= 0); /* only a claimed rank */
    CHECK(++F.lost[r] == 1);   /* once */
    fti_hub_tell_lost(F.hub, r, why); /* as watch.c's mark_lost does */
}

/* Whether peer i, as it is now, claimed rank r. */
static bool is_claimant(int r, int i)
{
    return F.claimant[r] == i && F.claimant_id[r] == F.p[i].id;
}

static void set_claimant(int r, int i)
{
    F.claimant[r] = i;
    F.claimant_id[r] = F.p[i].id;
    F.p[i].rank = r;
}

/* What the hub sent p, read; false once the hub closed its end. */
static bool drain(struct peer *p)
{
    uint8_t b[512];
    for (;;) {
        ssize_t n = recv(p->fd, b, sizeof(b), MSG_DONTWAIT);
        if (n == 0)
            return false;
        if (n < 0)
            return !(errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
        p->got += (size_t)n;
        if (!p->insider || !F.keyed || p->dirty)
            continue;
        for (ssize_t i = 0; i < n; i++) {
            p->frame[p->fgot++] = b[i];
            if (p->fgot == FTI_HUB_FRAME_LEN) {
                uint32_t t, v;
                fti_hub_frame_decode(p->frame, &t, &v);
                CHECK(t == FTI_HUB_PING || t == FTI_HUB_LOST || t == FTI_HUB_BYE ||
                      t == FTI_HUB_REFUSED);
                p->refused |= t == FTI_HUB_REFUSED;
                p->fgot = 0;
            }
        }
    }
}

static void peer_close(struct peer *p)
{
    close(p->fd);
    p->fd = -1;
    p->state = P_CLOSED;
}

/* p, which the hub holds, closes; the hub reads until it sees the end
 * (what p sent before is read first). */
static void peer_hangup(struct peer *p)
{
    fti_hub_stats_t st;
    fti_hub_get_stats(F.hub, &st);
    int before = st.open;
    peer_close(p);
    for (int i = 0; i < 64 && st.open == before; i++) {
        fti_hub_read(F.hub, p->slot, F.now);
        fti_hub_get_stats(F.hub, &st);
    }
    CHECK(st.open == before - 1);
}

/* Every check of the top that holds at any time; peers the hub closed
 * are marked so. */
static void check_all(void)
{
    int open = 0;
    for (int i = 0; i < FH_PEERS; i++) {
        struct peer *p = &F.p[i];
        if (p->state != P_OPEN)
            continue;
        bool alive = drain(p);
        if (F.keyed && !p->insider)
            CHECK(p->got <= FTI_AUTH_CHALLENGE_LEN); /* the challenge, nothing else */
        if (!alive) {
            if (p->rank > 0 && !p->bye && !p->dirty)
                CHECK(F.lost[p->rank] == 1); /* its closing was its loss */
            peer_close(p);
            continue;
        }
        open++;
    }
    fti_hub_stats_t st;
    fti_hub_get_stats(F.hub, &st);
    CHECK(st.open == open);
    CHECK(st.pending >= 0 && st.pending <= FTI_HUB_MAX_PENDING);
    CHECK(st.open <= F.size - 1 + FTI_HUB_MAX_PENDING);
    for (int r = 1; r < F.size; r++) {
        int s = fti_hub_rank_slot(F.hub, r);
        if (s < 0) {
            CHECK(F.claimant[r] < 0 || !is_claimant(r, F.claimant[r]) ||
                  F.p[F.claimant[r]].state != P_OPEN || F.p[F.claimant[r]].bye ||
                  F.lost[r] > 0);
            continue;
        }
        int who = -1;
        for (int i = 0; i < FH_PEERS; i++)
            if (F.p[i].state == P_OPEN && F.p[i].slot == s)
                who = i;
        CHECK(who >= 0);
        CHECK(!F.keyed || F.p[who].insider); /* an intruder never holds a rank */
        if (F.claimant[r] < 0) {
            CHECK(F.p[who].dirty); /* a clean insider's claim was seen when made */
            set_claimant(r, who);
        }
        CHECK(is_claimant(r, who)); /* claimed once */
        CHECK(fti_hub_claimed(F.hub, r));
    }
}

static void peer_open(int k, bool insider)
{
    struct peer *p = &F.p[k];
    if (p->state == P_OPEN)
        return;
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    int big = 1 << 18;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    fti_hub_stats_t before;
    fti_hub_get_stats(F.hub, &before);
    *p = (struct peer){.id = ++F.next_id, .state = P_OPEN, .fd = sv[1], .rank = -1,
                       .opened = F.now,
                       .last = F.now, .insider = insider || !F.keyed};
    p->slot = fti_hub_add(F.hub, sv[0], F.now);
    CHECK(p->slot >= 0);
    if (before.pending == FTI_HUB_MAX_PENDING) { /* the oldest waiting one went */
        fti_hub_stats_t after;
        fti_hub_get_stats(F.hub, &after);
        CHECK(after.evicted == before.evicted + 1 && after.pending == FTI_HUB_MAX_PENDING);
    }
    if (!insider || !F.keyed)
        return;
    fti_auth_state_t st;
    uint8_t hello[FTI_AUTH_HELLO_LEN], chal[FTI_AUTH_CHALLENGE_LEN], proof[FTI_AUTH_PROOF_LEN],
        ack[FTI_AUTH_ACK_LEN];
    CHECK(fti_auth_client_hello(&st, hello) == FT_SUCCESS);
    CHECK(send(p->fd, hello, sizeof(hello), 0) == (ssize_t)sizeof(hello));
    fti_hub_read(F.hub, p->slot, F.now);
    CHECK(recv(p->fd, chal, sizeof(chal), MSG_DONTWAIT) == (ssize_t)sizeof(chal));
    CHECK(fti_auth_client_answer(&F.key, &st, chal, proof) == FT_SUCCESS);
    CHECK(send(p->fd, proof, sizeof(proof), 0) == (ssize_t)sizeof(proof));
    fti_hub_read(F.hub, p->slot, F.now);
    CHECK(recv(p->fd, ack, sizeof(ack), MSG_DONTWAIT) == (ssize_t)sizeof(ack));
    CHECK(fti_auth_client_finish(&F.key, &st, ack) == FT_SUCCESS);
}

static void peer_send(struct peer *p, const uint8_t *d, size_t n)
{
    size_t off = 0;
    while (off < n) {
        ssize_t k = send(p->fd, d + off, n - off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k <= 0)
            break; /* full, or the hub closed: the rest is lost */
        off += (size_t)k;
        fti_hub_read(F.hub, p->slot, F.now);
    }
    for (int i = 0; i < 1 + (int)(n / (8 * 64)); i++)
        fti_hub_read(F.hub, p->slot, F.now);
    if (n > 0)
        p->last = F.now;
}

/* One frame from a clean insider, and what hub.h says it does. */
static void peer_frame(struct peer *p, uint32_t type, uint32_t value)
{
    uint8_t f[FTI_HUB_FRAME_LEN];
    fti_hub_frame_encode(f, type, value);
    int r = (int)value;
    bool claims = p->rank < 0 && type == FTI_HUB_HELLO && r > 0 && r < F.size &&
                  F.claimant[r] < 0;
    bool taken = p->rank < 0 && type == FTI_HUB_HELLO && r > 0 && r < F.size;
    bool clean = p->insider && !p->dirty;
    peer_send(p, f, sizeof(f));
    if (!clean) {
        check_all();
        return;
    }
    if (p->rank < 0 && type != FTI_HUB_HELLO)
        CHECK(!drain(p)); /* a frame before the claim: closed */
    else if (claims) {
        CHECK(fti_hub_rank_slot(F.hub, r) == p->slot);
        set_claimant(r, (int)(p - F.p));
    } else if (p->rank < 0) {
        CHECK(!drain(p)); /* a bad or taken rank: closed */
        CHECK(p->refused == (taken && F.keyed)); /* taken: told so first */
    } else {
        CHECK(drain(p)); /* a claimed rank's frames never close it */
        p->bye |= type == FTI_HUB_BYE;
    }
    check_all();
}

static void tick(int64_t dt, bool ping)
{
    F.now += dt;
    fti_hub_tick(F.hub, F.now, ping);
    for (int i = 0; i < FH_PEERS; i++) {
        struct peer *p = &F.p[i];
        if (p->state != P_OPEN)
            continue;
        bool held = p->rank > 0 && fti_hub_rank_slot(F.hub, p->rank) == p->slot;
        if (!held && p->rank < 0 && F.now - p->opened > FTI_AUTH_TIMEOUT_MS && drain(p)) {
            fti_hub_stats_t st;
            fti_hub_get_stats(F.hub, &st);
            fprintf(stderr, "fuzz_hub: peer %d (id %d, slot %d, insider %d, dirty %d, got %zu) "
                    "opened at %lld, now %lld: not closed (open %d, pending %d)\n", i, p->id,
                    p->slot, p->insider, p->dirty, p->got, (long long)p->opened,
                    (long long)F.now, st.open, st.pending);
            CHECK(!"no claim in time: closed");
        }
        if (held && !p->bye && !p->dirty && F.now - p->last > FH_SILENCE_MS)
            CHECK(false); /* a silent rank is lost and closed */
        if (!held && p->rank > 0 && !p->bye && !p->dirty)
            CHECK(F.lost[p->rank] == 1);
    }
    check_all();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fti_log_level = FTI_LOG_NONE;
    memset(&F, 0, sizeof(F));
    F.keyed = data[0] & 1;
    F.size = 2 + (data[0] >> 1) % 6;
    F.now = 1000000;
    for (int r = 0; r < 8; r++)
        F.claimant[r] = -1;
    CHECK(fti_auth_key_from_token("fuzz-hub-secret", &F.key) == FT_SUCCESS);
    CHECK(fti_hub_create(F.size, F.keyed ? &F.key : NULL, FH_SILENCE_MS, on_lost, NULL,
                         &F.hub) == FT_SUCCESS);
    fuzz_in_t in = {data + 1, size - 1, 0};
    for (int n_ops = 0; in.pos < in.n && n_ops < 2000; n_ops++) {
        uint8_t op = fz_u8(&in);
        int k = op / 6 % FH_PEERS;
        struct peer *p = &F.p[k];
        switch (op % 6) {
        case 0:
        case 1:
            peer_open(k, op % 6 == 1);
            check_all();
            break;
        case 2: {
            size_t len;
            const uint8_t *d = fz_piece(&in, &len);
            if (p->state != P_OPEN)
                break;
            if (len > FH_PIECE_MAX)
                len = FH_PIECE_MAX;
            p->dirty |= p->insider;
            peer_send(p, d, len);
            check_all();
            break;
        }
        case 3: {
            uint32_t type = fz_u8(&in) % 7, value = fz_u8(&in) % (uint32_t)(F.size + 2);
            if (p->state == P_OPEN)
                peer_frame(p, type, value);
            break;
        }
        case 4:
            if (p->state == P_OPEN) {
                peer_hangup(p);
                if (p->rank > 0 && !p->bye && !p->dirty)
                    CHECK(F.lost[p->rank] == 1); /* closed without a goodbye: lost */
                if (p->rank < 0 || p->bye)
                    for (int r = 1; r < F.size; r++)
                        CHECK(!is_claimant(r, k) || F.lost[r] == 0 || p->dirty);
                check_all();
            }
            break;
        default: {
            int64_t dt = (int64_t)fz_u16(&in) * 4;
            tick(dt, fz_u8(&in) & 1);
            break;
        }
        }
    }
    /* the end: every peer closes; every slot is free again */
    for (int i = 0; i < FH_PEERS; i++)
        if (F.p[i].state == P_OPEN)
            peer_hangup(&F.p[i]);
    fti_hub_stats_t st;
    fti_hub_get_stats(F.hub, &st);
    CHECK(st.open == 0 && st.pending == 0);
    for (int r = 1; r < F.size; r++)
        CHECK(fti_hub_rank_slot(F.hub, r) < 0);
    fti_hub_destroy(F.hub);
    return 0;
}

static void gen(fuzz_emit_fn emit, fuzz_out_t *o)
{
    emit(o->d, o->n);
    o->n = 0;
}

/* peer k, operation kind */
static uint8_t op(int k, int kind)
{
    return (uint8_t)(k * 6 + kind);
}

void fuzz_generated(fuzz_emit_fn emit)
{
    fuzz_out_t o = {.n = 0};
    for (uint8_t keyed = 0; keyed < 2; keyed++) {
        uint8_t hdr = (uint8_t)(keyed | 2 << 1); /* 4 ranks */
        /* the review's attack: forged hellos, then closes, after the ranks joined */
        fo_u8(&o, hdr);
        for (int k = 0; k < 3; k++) {
            fo_u8(&o, op(k, 1));
            fo_u8(&o, op(k, 3));
            fo_u8(&o, FTI_HUB_HELLO);
            fo_u8(&o, (uint8_t)(k + 1));
        }
        for (int k = 3; k < 6; k++) {
            uint8_t f[FTI_HUB_FRAME_LEN];
            fti_hub_frame_encode(f, FTI_HUB_HELLO, (uint32_t)(k - 2));
            fo_u8(&o, op(k, 0));
            fo_u8(&o, op(k, 2));
            fo_piece(&o, f, sizeof(f));
            fo_u8(&o, op(k, 4));
        }
        fo_u8(&o, op(6, 1)); /* an insider's second claim of a live rank */
        fo_u8(&o, op(6, 3));
        fo_u8(&o, FTI_HUB_HELLO);
        fo_u8(&o, 2);
        fo_u8(&o, op(0, 3)); /* rank 1 pings, says goodbye, closes: no loss */
        fo_u8(&o, FTI_HUB_PING);
        fo_u8(&o, 0);
        fo_u8(&o, op(0, 3));
        fo_u8(&o, FTI_HUB_BYE);
        fo_u8(&o, 0);
        fo_u8(&o, op(0, 4));
        fo_u8(&o, op(1, 4)); /* rank 2 closes: lost */
        fo_u8(&o, op(7, 5)); /* 2 s: rank 3 silent, lost */
        fo_u8(&o, 0x01);
        fo_u8(&o, 0xf4);
        fo_u8(&o, 1);
        gen(emit, &o);
        /* a flood of silent connections: the oldest go, the slots come back */
        fo_u8(&o, hdr);
        for (int k = 0; k < FH_PEERS; k++)
            fo_u8(&o, op(k, 0));
        fo_u8(&o, op(0, 1));
        fo_u8(&o, op(0, 3));
        fo_u8(&o, FTI_HUB_HELLO);
        fo_u8(&o, 1);
        fo_u8(&o, op(9, 5)); /* 12 s: the waiting ones time out */
        fo_u8(&o, 0x0b);
        fo_u8(&o, 0xb8);
        fo_u8(&o, 0);
        for (int k = 1; k < 4; k++) {
            fo_u8(&o, op(k, 1));
            fo_u8(&o, op(k, 3));
            fo_u8(&o, FTI_HUB_HELLO);
            fo_u8(&o, (uint8_t)k);
        }
        gen(emit, &o);
        /* a half handshake, a wrong proof, garbage, a frame before the claim */
        fo_u8(&o, hdr);
        fo_u8(&o, op(0, 0));
        fo_u8(&o, op(0, 2));
        fo_piece(&o, fti_auth_hello_magic, 2);
        fo_u8(&o, op(1, 0));
        {
            uint8_t m[FTI_AUTH_HELLO_LEN + FTI_AUTH_PROOF_LEN] = {0};
            memcpy(m, fti_auth_hello_magic, FTI_AUTH_MAGIC_LEN);
            memcpy(m + FTI_AUTH_HELLO_LEN, fti_auth_proof_magic, FTI_AUTH_MAGIC_LEN);
            fo_u8(&o, op(1, 2));
            fo_piece(&o, m, sizeof(m));
        }
        fo_u8(&o, op(2, 0));
        fo_u8(&o, op(2, 2));
        fo_piece(&o, "GET / HTTP/1.1\r\n\r\n", 18);
        fo_u8(&o, op(3, 1));
        fo_u8(&o, op(3, 3));
        fo_u8(&o, FTI_HUB_PING);
        fo_u8(&o, 0);
        fo_u8(&o, op(4, 1));
        fo_u8(&o, op(4, 3));
        fo_u8(&o, FTI_HUB_HELLO);
        fo_u8(&o, 9);
        fo_u8(&o, op(5, 1)); /* a claimed rank sends raw frames, then nothing */
        fo_u8(&o, op(5, 3));
        fo_u8(&o, FTI_HUB_HELLO);
        fo_u8(&o, 3);
        {
            uint8_t f[3 * FTI_HUB_FRAME_LEN];
            fti_hub_frame_encode(f, FTI_HUB_LOST, 1);
            fti_hub_frame_encode(f + 8, 77, 0);
            fti_hub_frame_encode(f + 16, FTI_HUB_HELLO, 2);
            fo_u8(&o, op(5, 2));
            fo_piece(&o, f, sizeof(f));
        }
        gen(emit, &o);
    }
}
