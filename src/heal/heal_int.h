/*
 * heal_int.h - the registry of heal/serve.c as the rest of src/heal sees
 * it (fetch.c, source.c, stage.c, fingerprint.c).  Internal to src/heal.
 */
#ifndef FTI_HEAL_INT_H
#define FTI_HEAL_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <xxhash.h>

#include "heal/heal.h"

struct heal_buf {
    char name[FTI_HEAL_MAX_NAME];
    unsigned char *data; /* what is served and summed: user, or copy.mirror */
    void *user;          /* the registered memory */
    size_t len;
    fti_heal_copy_t copy; /* copy_out == NULL: none, data == user */
    uint64_t mirror_gen;  /* generation the mirror holds; written under both mutexes */
    /* checksum cache, guarded by the registry's mutex */
    uint64_t sum;
    uint64_t sum_gen; /* generation it was computed for; 0 = none */
    /* the chained sum after each piece (HealBuffer.piece_sums), written
     * under the mutex as the summing cursor passes, valid with sum_gen */
    uint64_t *piece_sums;
    size_t n_pieces;
};

struct fti_heal {
    pthread_mutex_t mu;
    pthread_mutex_t mirror_mu; /* serialises mirror refreshes; taken before mu */
    pthread_cond_t served_cv; /* CLOCK_MONOTONIC; signalled when served grows */
    struct heal_buf **bufs;   /* entries never move once registered */
    size_t n, cap;
    int64_t step;
    bool open;
    uint64_t gen;    /* bumped by every fti_heal_set_step */
    int served;      /* complete copies handed out in this generation */
    /* The summing cursor (heal/serve.c, "summing"): generation cur_gen is summed
     * up to byte cur_off of buffer cur_buf, cur_xs holding the piece under
     * way.  One thread at a time moves it (cur_busy), the mutex released
     * while it sums. */
    uint64_t cur_gen;
    size_t cur_buf, cur_off;
    XXH3_state_t *cur_xs;
    bool cur_busy;
    /* in generation pos_gen: the furthest stream position a fetch reply
     * was sent up to (sent_*) and the furthest start of a fetch asked for
     * (asked_*); the summing thread sums what the cursor left behind them */
    uint64_t pos_gen;
    size_t sent_buf, sent_off, asked_buf, asked_off;
    /* the summing thread (started and joined on the loop thread only);
     * sum_cv (under mu) wakes it when a position, the cursor, the
     * generation or sum_hurry (sum the rest now) changes */
    pthread_cond_t sum_cv;
    bool sum_hurry;
    pthread_t sum_tid;
    bool sum_thread;   /* sum_tid is to be joined */
    uint64_t sum_for;  /* the generation it sums */
    /* Test hooks, read by fti_heal_create only in a build configured with
     * --enable-test-hooks (FTMPI_TEST_HOOKS); otherwise empty and 0.
     * FTMPI_TEST_HEAL_CORRUPT=NAME:OFFSET: the fetch replies
     * of buffer NAME that cover byte OFFSET carry that byte flipped
     * (NAME:*, UINT64_MAX here: every reply's first byte) */
    char corrupt_name[FTI_HEAL_MAX_NAME];
    uint64_t corrupt_at;
    /* FTMPI_TEST_HEAL_SERVE_DELAY_MS=N (test hook too): each fetch reply waits
     * N ms on the loop thread, so that a test can kill a source while a
     * heal of it runs, whatever the machine's speed */
    int serve_delay_ms;
    /* FTMPI_TEST_HEAL_GET_DELAY_MS=N (test hook): a healer waits N ms before
     * each one-sided get (heal/rma.c), so that a test can kill the source
     * while a heal over ucx runs (the source sees no request to delay) */
    int get_delay_ms;
    /* the one-sided transport served when a healer asks (fti_heal_set_rma) */
    const fti_heal_rma_t *rma;
};

#endif
