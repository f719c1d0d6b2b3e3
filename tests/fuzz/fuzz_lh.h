/*
 * fuzz_lh.h - a real lighthouse on 127.0.0.1 with its loop in a thread,
 * for the harnesses that talk to one (fuzz_servers, fuzz_http).
 */
#ifndef FTI_FUZZ_LH_H
#define FTI_FUZZ_LH_H

#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <signal.h>

#include "fuzz_common.h"
#include "ftmpi_errors.h"
#include "lighthouse/lighthouse.h"
#include "base/log.h"
#include "base/util.h"

static struct {
    struct event_base *base;
    fti_lighthouse_h lh;
    pthread_t loop;
} LH;

static void *lh_loop_main(void *arg)
{
    (void)arg;
    event_base_loop(LH.base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* Starts the lighthouse once; setup(base, lh) runs before the loop does
 * (e.g. to add the HTTP server on the same base). */
static void lh_start(void (*setup)(struct event_base *, fti_lighthouse_h))
{
    static int started;
    if (started)
        return;
    started = 1;
    signal(SIGPIPE, SIG_IGN);
    fti_log_level = FTI_LOG_NONE;
    CHECK(evthread_use_pthreads() == 0);
    LH.base = event_base_new();
    CHECK(LH.base != NULL);
    fti_lighthouse_opts_t o;
    fti_lighthouse_opts_default(&o);
    fti_strlcpy(o.bind, "127.0.0.1:0", sizeof(o.bind));
    o.min_replicas = 1;
    o.join_timeout_ms = 5;
    o.quorum_tick_ms = 1;
    o.heartbeat_timeout_ms = 200;
    o.max_frame = 1 << 16;
    o.max_finalized = 64;
    o.summary_interval_ms = 0;
    CHECK(fti_lighthouse_create(LH.base, &o, &LH.lh) == FT_SUCCESS);
    if (setup)
        setup(LH.base, LH.lh);
    CHECK(pthread_create(&LH.loop, NULL, lh_loop_main, NULL) == 0);
}

#endif
