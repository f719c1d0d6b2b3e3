/*
 * hub.c - the watchdog's hub (see hub.h for its rules; DESIGN section 10).
 */
#define _POSIX_C_SOURCE 200809L
#include "mpi_shim/hub.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"

/* frames read from one connection per fti_hub_read (the others' turn) */
#define HUB_READ_BURST 64

/* Where a connection is (hub.h's rules). */
enum hub_conn_step {
    H_FREE,   /* no connection in the slot */
    H_HELLO,  /* waits for the handshake's HELLO */
    H_PROOF,  /* waits for its PROOF */
    H_CLAIM,  /* authenticated (or no key): waits for its HELLO frame */
    H_LIVE,   /* holds its rank */
    H_BYE     /* holds its rank, said goodbye */
};

struct hub_conn {
    int fd;
    int step;
    int rank;                  /* H_LIVE, H_BYE */
    int64_t since;             /* accepted (pending), last heard (claimed) */
    fti_auth_state_t auth;
    uint8_t buf[FTI_AUTH_PROOF_LEN]; /* the largest message read whole */
    size_t got;
    char peer[INET6_ADDRSTRLEN + 8];
};

struct fti_hub {
    int size, n_slots;
    bool has_key;
    fti_auth_key_t key;
    int silence_ms;
    fti_hub_lost_fn lost;
    void *arg;
    struct hub_conn *c;
    int *slot_of;              /* per rank: its connection's slot, -1 */
    unsigned char *claimed;    /* per rank: claimed once */
    bool all_told;             /* "every rank joined" logged */
    fti_hub_stats_t st;
};

void fti_hub_frame_encode(uint8_t f[FTI_HUB_FRAME_LEN], uint32_t type, uint32_t value)
{
    for (int i = 0; i < 4; i++) {
        f[i] = (uint8_t)(type >> (8 * i));
        f[4 + i] = (uint8_t)(value >> (8 * i));
    }
}

void fti_hub_frame_decode(const uint8_t f[FTI_HUB_FRAME_LEN], uint32_t *type_p, uint32_t *value_p)
{
    uint32_t t = 0, v = 0;
    for (int i = 0; i < 4; i++) {
        t |= (uint32_t)f[i] << (8 * i);
        v |= (uint32_t)f[4 + i] << (8 * i);
    }
    *type_p = t;
    *value_p = v;
}

static bool pending(const struct hub_conn *c)
{
    return c->step == H_HELLO || c->step == H_PROOF || c->step == H_CLAIM;
}

/* Everything the hub sends: non-blocking; a full buffer (a stopped peer)
 * loses a frame, which is fine for pings and losses.  False when not all
 * of it went. */
static bool send_all(struct hub_conn *c, const void *p, size_t n)
{
    return c->fd >= 0 && send(c->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)n;
}

static void send_frame(struct hub_conn *c, uint32_t type, uint32_t value)
{
    uint8_t f[FTI_HUB_FRAME_LEN];
    fti_hub_frame_encode(f, type, value);
    (void)send_all(c, f, sizeof(f));
}

/* Closes slot c; the rank it held (none when it was pending) is free of it. */
static void close_slot(struct fti_hub *h, struct hub_conn *c)
{
    if (c->fd < 0)
        return;
    if (pending(c))
        h->st.pending--;
    else if (h->slot_of[c->rank] == (int)(c - h->c))
        h->slot_of[c->rank] = -1;
    close(c->fd);
    h->st.open--;
    *c = (struct hub_conn){.fd = -1, .step = H_FREE, .rank = -1};
}

/* Rule 3: a refusal, logged the 1st, 2nd, 4th ... time, then close. */
static void refuse(struct hub_conn *c, struct fti_hub *h, const char *why)
{
    uint64_t n = ++h->st.refused;
    if ((n & (n - 1)) == 0)
        FTI_WARN("libftmpi_pmpi: watchdog hub refused the connection from %s: %s (%" PRIu64
                 " refused so far)",
                 c->peer, why, n);
    close_slot(h, c);
}

/* The connection of a claimed rank closed: the rank is lost unless it said goodbye. */
static void drop_claimed(struct fti_hub *h, struct hub_conn *c)
{
    int r = c->rank;
    bool lost = c->step == H_LIVE;
    close_slot(h, c);
    if (lost && h->lost != NULL)
        h->lost(r, FTI_HUB_WHY_DEAD, h->arg);
}

static void claim(struct fti_hub *h, struct hub_conn *c, uint32_t value)
{
    char why[96];
    if (value == 0 || value >= (uint32_t)h->size) {
        snprintf(why, sizeof(why), "a claim of world rank %" PRIu32 " (the job has %d)", value,
                 h->size);
        refuse(c, h, why);
        return;
    }
    int r = (int)value;
    if (h->claimed[r]) {
        snprintf(why, sizeof(why), "a second claim of world rank %d (%s)", r,
                 h->slot_of[r] >= 0 ? "it is live" : "it has left or was lost");
        send_frame(c, FTI_HUB_REFUSED, value);
        refuse(c, h, why);
        return;
    }
    h->claimed[r] = 1;
    h->slot_of[r] = (int)(c - h->c);
    h->st.pending--;
    h->st.claimed++;
    c->step = H_LIVE;
    c->rank = r;
    if (h->st.claimed == h->size - 1 && !h->all_told) {
        h->all_told = true;
        FTI_INFO("libftmpi_pmpi: watchdog hub: the %d other rank(s) joined (%s)", h->size - 1,
                 h->has_key ? "each proved the job secret" : "no job secret");
    }
}

static void on_frame(struct fti_hub *h, struct hub_conn *c, const uint8_t *b)
{
    uint32_t type, value;
    fti_hub_frame_decode(b, &type, &value);
    if (c->step == H_CLAIM) {
        if (type == FTI_HUB_HELLO)
            claim(h, c, value);
        else
            refuse(c, h, "a frame before its claim (HELLO)");
        return;
    }
    if (type == FTI_HUB_BYE)
        c->step = H_BYE;
    else if (type != FTI_HUB_PING)
        FTI_WARN("libftmpi_pmpi: watchdog hub: world rank %d sent a frame of type %" PRIu32
                 " after its claim: ignored",
                 c->rank, type);
}

/* One whole message of the handshake in c->buf. */
static void on_auth(struct fti_hub *h, struct hub_conn *c)
{
    if (c->step == H_HELLO) {
        uint8_t chal[FTI_AUTH_CHALLENGE_LEN];
        int rc = fti_auth_server_challenge(&h->key, &c->auth, c->buf, chal);
        if (rc != FT_SUCCESS || !send_all(c, chal, sizeof(chal))) {
            refuse(c, h, rc == FT_ERR_AUTH ? "no job-secret handshake (FTMPI_TOKEN_FILE)"
                                           : "the handshake's challenge could not be sent");
            return;
        }
        c->step = H_PROOF;
        return;
    }
    uint8_t ack[FTI_AUTH_ACK_LEN];
    if (fti_auth_server_verify(&h->key, &c->auth, c->buf, ack) != FT_SUCCESS) {
        refuse(c, h, "a wrong job secret (FTMPI_TOKEN_FILE)");
        return;
    }
    if (!send_all(c, ack, sizeof(ack))) {
        refuse(c, h, "the handshake's answer could not be sent");
        return;
    }
    c->step = H_CLAIM;
}

/* How many bytes the connection's next message has. */
static size_t want(const struct hub_conn *c)
{
    return c->step == H_HELLO ? FTI_AUTH_HELLO_LEN
           : c->step == H_PROOF ? FTI_AUTH_PROOF_LEN
                                : FTI_HUB_FRAME_LEN;
}

void fti_hub_read(fti_hub_h h, int i, int64_t now)
{
    if (h == NULL || i < 0 || i >= h->n_slots)
        return;
    struct hub_conn *c = &h->c[i];
    for (int n_msgs = 0; c->fd >= 0 && n_msgs < HUB_READ_BURST;) {
        size_t need = want(c);
        ssize_t n = recv(c->fd, c->buf + c->got, need - c->got, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (n <= 0) {
            if (pending(c)) {
                /* a peer that gives up before its claim (refused elsewhere, or
                 * probing): closed, and no loss */
                if (c->got > 0 || c->step == H_PROOF || (c->step == H_CLAIM && h->has_key))
                    refuse(c, h, "closed before its claim");
                else
                    close_slot(h, c);
            } else {
                drop_claimed(h, c);
            }
            return;
        }
        c->got += (size_t)n;
        /* a peer without the handshake is refused on its first bytes */
        if (c->step == H_HELLO &&
            memcmp(c->buf, fti_auth_hello_magic,
                   c->got < FTI_AUTH_MAGIC_LEN ? c->got : FTI_AUTH_MAGIC_LEN) != 0) {
            refuse(c, h, "no job-secret handshake (FTMPI_TOKEN_FILE)");
            return;
        }
        if (c->got < need)
            continue;
        c->got = 0;
        n_msgs++;
        if (c->step == H_HELLO || c->step == H_PROOF)
            on_auth(h, c);
        else
            on_frame(h, c, c->buf);
        if (c->fd >= 0 && !pending(c))
            c->since = now; /* a claimed rank heard (its claim included) */
    }
}

/* Rule 4: the slot for a new connection (the oldest pending one closed
 * when they are FTI_HUB_MAX_PENDING). */
static struct hub_conn *free_slot(struct fti_hub *h)
{
    if (h->st.pending >= FTI_HUB_MAX_PENDING) {
        struct hub_conn *old = NULL;
        for (int i = 0; i < h->n_slots; i++)
            if (h->c[i].fd >= 0 && pending(&h->c[i]) && (old == NULL || h->c[i].since < old->since))
                old = &h->c[i];
        if (old != NULL) {
            uint64_t n = ++h->st.evicted;
            if ((n & (n - 1)) == 0)
                FTI_WARN("libftmpi_pmpi: watchdog hub: %d connections wait for their claim: "
                         "closed the oldest, from %s (%" PRIu64 " so far)",
                         FTI_HUB_MAX_PENDING, old->peer, n);
            close_slot(h, old);
        }
    }
    for (int i = 0; i < h->n_slots; i++)
        if (h->c[i].fd < 0)
            return &h->c[i];
    return NULL;
}

static void peer_name(int fd, char *buf, size_t len)
{
    struct sockaddr_storage sa;
    socklen_t sl = sizeof(sa);
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    snprintf(buf, len, "a local socket");
    if (getpeername(fd, (struct sockaddr *)&sa, &sl) != 0)
        return;
    if (sa.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&sa;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        port = ntohs(a->sin_port);
    } else if (sa.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&sa;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
        port = ntohs(a->sin6_port);
    } else {
        return;
    }
    snprintf(buf, len, "%s:%d", host, port);
}

int fti_hub_add(fti_hub_h h, int fd, int64_t now)
{
    if (h == NULL || fd < 0)
        return -1;
    struct hub_conn *c = free_slot(h);
    if (c == NULL || fti_sock_tune(fd) != FT_SUCCESS) { /* never: rule 4 */
        close(fd);
        return -1;
    }
    *c = (struct hub_conn){.fd = fd, .step = h->has_key ? H_HELLO : H_CLAIM, .rank = -1,
                           .since = now};
    peer_name(fd, c->peer, sizeof(c->peer));
    h->st.open++;
    h->st.pending++;
    h->st.accepted++;
    return (int)(c - h->c);
}

void fti_hub_accept(fti_hub_h h, int lfd, int64_t now)
{
    for (int k = 0; k < FTI_HUB_MAX_PENDING; k++) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            return;
        (void)fti_hub_add(h, fd, now);
    }
}

int fti_hub_slots(fti_hub_h h)
{
    return h != NULL ? h->n_slots : 0;
}

void fti_hub_poll_set(fti_hub_h h, struct pollfd *p)
{
    for (int i = 0; h != NULL && i < h->n_slots; i++)
        p[i] = (struct pollfd){.fd = h->c[i].fd, .events = POLLIN};
}

void fti_hub_polled(fti_hub_h h, const struct pollfd *p, int64_t now)
{
    for (int i = 0; h != NULL && i < h->n_slots; i++)
        if (p[i].fd >= 0 && p[i].revents != 0 && h->c[i].fd == p[i].fd)
            fti_hub_read(h, i, now);
}

void fti_hub_tick(fti_hub_h h, int64_t now, bool ping)
{
    for (int i = 0; h != NULL && i < h->n_slots; i++) {
        struct hub_conn *c = &h->c[i];
        if (c->fd < 0)
            continue;
        if (pending(c)) {
            if (now - c->since > FTI_AUTH_TIMEOUT_MS) {
                uint64_t n = ++h->st.timed_out;
                if ((n & (n - 1)) == 0)
                    FTI_WARN("libftmpi_pmpi: watchdog hub: the connection from %s made no claim "
                             "within %d ms: closed (%" PRIu64 " so far)",
                             c->peer, FTI_AUTH_TIMEOUT_MS, n);
                close_slot(h, c);
            }
        } else if (c->step == H_LIVE && now - c->since > h->silence_ms) {
            int r = c->rank;
            close_slot(h, c);
            if (h->lost != NULL)
                h->lost(r, FTI_HUB_WHY_SILENT, h->arg);
        } else if (ping) {
            send_frame(c, FTI_HUB_PING, 0);
        }
    }
}

void fti_hub_tell_lost(fti_hub_h h, int r, int why)
{
    if (h == NULL || r <= 0 || r >= h->size)
        return;
    if (h->slot_of[r] >= 0)
        close_slot(h, &h->c[h->slot_of[r]]);
    for (int i = 0; i < h->n_slots; i++)
        if (h->c[i].fd >= 0 && !pending(&h->c[i]))
            send_frame(&h->c[i], FTI_HUB_LOST, (uint32_t)r | (uint32_t)why << 24);
}

bool fti_hub_claimed(fti_hub_h h, int r)
{
    return h != NULL && r > 0 && r < h->size && h->claimed[r];
}

int fti_hub_rank_slot(fti_hub_h h, int r)
{
    return h != NULL && r > 0 && r < h->size ? h->slot_of[r] : -1;
}

void fti_hub_get_stats(fti_hub_h h, fti_hub_stats_t *st)
{
    *st = h->st;
}

int fti_hub_create(int size, const fti_auth_key_t *key, int silence_ms, fti_hub_lost_fn lost,
                   void *arg, fti_hub_h *hub_p)
{
    if (size < 1 || hub_p == NULL)
        return FT_ERR_ARG;
    struct fti_hub *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return FT_ERR_NO_MEMORY;
    h->size = size;
    h->n_slots = size - 1 + FTI_HUB_MAX_PENDING;
    h->has_key = key != NULL;
    if (key != NULL)
        h->key = *key;
    h->silence_ms = silence_ms;
    h->lost = lost;
    h->arg = arg;
    h->c = calloc((size_t)h->n_slots, sizeof(*h->c));
    h->slot_of = calloc((size_t)size, sizeof(*h->slot_of));
    h->claimed = calloc((size_t)size, 1);
    if (h->c == NULL || h->slot_of == NULL || h->claimed == NULL) {
        fti_hub_destroy(h);
        return FT_ERR_NO_MEMORY;
    }
    for (int i = 0; i < h->n_slots; i++)
        h->c[i] = (struct hub_conn){.fd = -1, .step = H_FREE, .rank = -1};
    for (int r = 0; r < size; r++)
        h->slot_of[r] = -1;
    *hub_p = h;
    return FT_SUCCESS;
}

void fti_hub_destroy(fti_hub_h h)
{
    if (h == NULL)
        return;
    for (int i = 0; h->c != NULL && i < h->n_slots; i++) {
        if (h->c[i].fd >= 0 && !pending(&h->c[i]))
            send_frame(&h->c[i], FTI_HUB_BYE, 0);
        if (h->c[i].fd >= 0)
            close(h->c[i].fd);
    }
    free(h->c);
    free(h->slot_of);
    free(h->claimed);
    for (volatile uint8_t *k = h->key.k; k < h->key.k + sizeof(h->key.k); k++)
        *k = 0; /* the key's copy does not outlive the hub */
    free(h);
}
