/*
 * hub.h - the watchdog's hub: world rank 0's table of the other ranks'
 * connections (watch.c runs it on the watchdog thread; DESIGN section 10).
 * No MPI: tests/fuzz/fuzz_hub.c drives it with socketpairs.
 *
 * The rules.
 *  1. Every accepted connection first proves the job secret: with a key,
 *     auth.h's handshake (the hub is its server side) before any of its
 *     bytes is taken as a frame; without one, nothing to prove (anyone who
 *     reaches the port may claim a rank not yet claimed; doc/USER_GUIDE.md).
 *  2. Then one HELLO frame claims world rank r (0 < r < size).  A rank is
 *     claimed once for the job: a claim of a rank that is live, said
 *     goodbye or was lost is refused, and the live connection is left
 *     alone.
 *  3. A connection that fails the handshake, sends anything but HELLO
 *     before its claim, makes a refused claim, or does not claim within
 *     FTI_AUTH_TIMEOUT_MS of its accept is closed (the refused claim gets a
 *     REFUSED frame first); it never held a rank, so its closing is no
 *     loss.  Refusals are logged at warn level, the 1st, 2nd, 4th ...
 *     time (a flood does not flood the log).
 *  4. At most FTI_HUB_MAX_PENDING connections wait for their claim at
 *     once; a new one closes the oldest of them.  A rank's handshake takes
 *     one round trip, so a flood must open that many connections within
 *     it to push a rank out.  With the claimed ones the table never holds
 *     more than size - 1 + FTI_HUB_MAX_PENDING connections; a closed
 *     connection's slot is free for the next.
 *  5. A claimed rank's connection that closes without a goodbye (BYE) is
 *     the rank lost (FTI_HUB_WHY_DEAD); one silent for silence_ms is lost
 *     too (FTI_HUB_WHY_SILENT).  The hub then calls lost(rank, why, arg);
 *     the caller tells the others (fti_hub_tell_lost).  An unknown frame
 *     from a claimed rank is logged and ignored (closing would lose it).
 *
 * Frames: 8 bytes, a type and a value, each a little-endian uint32.
 *
 * Threads: one thread at a time (watch.c's watchdog thread; the caller
 * that destroys it after joining that thread).  The clock is passed in.
 */
#ifndef FTI_SHIM_HUB_H
#define FTI_SHIM_HUB_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/auth.h"

#define FTI_HUB_FRAME_LEN 8
/* connections waiting for their claim at once (rule 4) */
#define FTI_HUB_MAX_PENDING 32

enum fti_hub_frame_type {
    FTI_HUB_HELLO = 1,   /* rank -> hub: value = the world rank claimed */
    FTI_HUB_PING = 2,    /* both ways */
    FTI_HUB_BYE = 3,     /* both ways: leaving is no loss */
    FTI_HUB_LOST = 4,    /* hub -> ranks: value = rank | why << 24 */
    FTI_HUB_REFUSED = 5  /* hub -> a refused claim, then close: value = the rank */
};

enum fti_hub_why { FTI_HUB_WHY_DEAD = 1, FTI_HUB_WHY_SILENT = 2 };

void fti_hub_frame_encode(uint8_t f[FTI_HUB_FRAME_LEN], uint32_t type, uint32_t value);
void fti_hub_frame_decode(const uint8_t f[FTI_HUB_FRAME_LEN], uint32_t *type_p,
                          uint32_t *value_p);

typedef void (*fti_hub_lost_fn)(int rank, int why, void *arg);

typedef struct fti_hub_stats {
    int open;              /* connections in the table */
    int pending;           /* of them, waiting for their claim */
    int claimed;           /* ranks claimed so far (live, gone or lost) */
    uint64_t accepted;
    uint64_t refused;      /* handshake failed, bad frame before the claim, refused claim */
    uint64_t timed_out;    /* no claim in time */
    uint64_t evicted;      /* closed for a newer connection (rule 4) */
} fti_hub_stats_t;

typedef struct fti_hub *fti_hub_h;

/* A hub for a job of size ranks; key NULL: no secret (copied otherwise).
 * FT_ERR_NO_MEMORY, FT_ERR_ARG (size < 1).  Free with fti_hub_destroy. */
int fti_hub_create(int size, const fti_auth_key_t *key, int silence_ms, fti_hub_lost_fn lost,
                   void *arg, fti_hub_h *hub_p);
/* Sends BYE to every claimed rank still connected, closes every
 * connection, frees the hub.  NULL is fine. */
void fti_hub_destroy(fti_hub_h h);

/* Takes an accepted connection fd (closed by the hub from now on) at time
 * now; its slot, or -1 when it could not be kept (closed). */
int fti_hub_add(fti_hub_h h, int fd, int64_t now);
/* Accepts what the listening socket lfd has (at most FTI_HUB_MAX_PENDING). */
void fti_hub_accept(fti_hub_h h, int lfd, int64_t now);

/* The slots: p[0, fti_hub_slots) gets each slot's fd (-1 when free:
 * poll(2) skips it) and POLLIN; after poll, fti_hub_polled reads every
 * slot whose fd reported and is still the one polled. */
int fti_hub_slots(fti_hub_h h);
void fti_hub_poll_set(fti_hub_h h, struct pollfd *p);
void fti_hub_polled(fti_hub_h h, const struct pollfd *p, int64_t now);
/* Reads what slot i's connection has and acts on it (the rules). */
void fti_hub_read(fti_hub_h h, int i, int64_t now);
/* The clock: claims not made in time, silent ranks; a PING to every
 * claimed rank when ping. */
void fti_hub_tick(fti_hub_h h, int64_t now, bool ping);

/* Rank r is lost (why): its connection, if any, is closed (no callback)
 * and every other claimed rank is sent LOST. */
void fti_hub_tell_lost(fti_hub_h h, int r, int why);

/* Whether rank r was claimed; the slot of its connection (-1: none). */
bool fti_hub_claimed(fti_hub_h h, int r);
int fti_hub_rank_slot(fti_hub_h h, int r);
void fti_hub_get_stats(fti_hub_h h, fti_hub_stats_t *st);

#endif
