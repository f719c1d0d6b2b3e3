/*
 * ftmpi-baby - the child that runs a rank's cross-group collectives
 * (DESIGN section 5, baby-<backend>).  The rank starts it with fork+exec
 * (src/comm/baby.c); the command channel is fd 3, a socketpair, and buffers
 * live in memfd regions the rank passes over that channel.  Whatever hangs
 * in here, the rank ends it with SIGKILL and starts a new child.
 *
 *     ftmpi-baby [--log-level N] [--cpus LIST]   (started by the library)
 *
 * --cpus binds the child to a cpu list ("0-3,8"), as affinity.c chose.
 *
 * Commands (baby_chan.h): LISTEN opens the tcp ring's listener and replies
 * its address; CONNECT builds the ring; MAP / UNMAP a region; ALLREDUCE in
 * place in a region; ABORT drops the ring; EXIT; AUTH sets the job's key
 * (sent first when the rank has one: the ring then authenticates its
 * neighbours as the in-process tcp ring does).  With NCCL (baby-nccl,
 * baby_nccl_child.h): NCCL_ID, NCCL_INIT, NCCL_ALLREDUCE on CUDA IPC memory.  Each command carries the
 * rank's deadline and the child honours it.  A bad message or a closed
 * channel ends the child (exit 3 / 0).  Links libfti_base and libfti_comm
 * only: no MPI, no CUDA context unless a backend makes one.
 *
 * Exit status: 0 after EXIT or when the rank went away, 2 when fd 3 is not
 * a socket, 3 after a bad message.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftmpi_config.h" /* FTMPI_HAVE_NCCL */
#include "comm/baby_chan.h"
#ifdef FTMPI_HAVE_NCCL
#include "comm/baby_nccl_child.h"
#endif
#include "comm/comm.h"
#include "comm/tcp.h"
#include "base/auth.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

#define MAX_REGIONS 256
#define IDLE_WAIT_MS 3600000 /* between commands: the rank may compute for long */
/* After a reply, look for the next command this long before sleeping in
 * poll: when the rank reduces its buckets back to back the child is not
 * asleep when the command comes (one sleep and wake-up a call instead of
 * two, PERFORMANCE.md section 10); a rank that computes between calls pays
 * this much cpu a call, yielding to its parent all along. */
#define CMD_SPIN_US 30

struct region {
    uint64_t id;
    char *base;
    size_t bytes;
};

static struct baby {
    int chan;
    fti_tcp_listener_h listener;
    fti_comm_h comm;
    struct region reg[MAX_REGIONS];
    int nreg;
    bool has_key;
    fti_auth_key_t key; /* the rank's job key (FTI_BABY_AUTH) */
} B = {.chan = FTI_BABY_FD};

static void drop_ring(void)
{
#ifdef FTMPI_HAVE_NCCL
    fti_baby_nccl_drop();
#endif
    fti_comm_destroy(B.comm);
    B.comm = NULL;
    fti_tcp_listener_destroy(B.listener);
    B.listener = NULL;
}

static struct region *find_region(uint64_t id)
{
    for (int i = 0; i < B.nreg; i++)
        if (B.reg[i].id == id)
            return &B.reg[i];
    return NULL;
}

static int do_map(const fti_baby_map_t *m, int fd)
{
    if (fd < 0 || m->bytes == 0 || m->bytes > SIZE_MAX / 2 || find_region(m->region_id))
        return FT_ERR_ARG;
    if (B.nreg == MAX_REGIONS)
        return FT_ERR_NO_MEMORY;
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < m->bytes)
        return FT_ERR_ARG; /* a region smaller than announced would SIGBUS us */
    void *p = mmap(NULL, m->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        FTI_ERROR("ftmpi-baby: mmap of region %" PRIu64 " (%" PRIu64 " bytes): %m",
                  m->region_id, m->bytes);
        return FT_ERR_SYSTEM;
    }
    B.reg[B.nreg++] = (struct region){m->region_id, p, m->bytes};
    return FT_SUCCESS;
}

static int do_unmap(const fti_baby_map_t *m)
{
    struct region *r = find_region(m->region_id);
    if (r == NULL)
        return FT_ERR_NOT_FOUND;
    munmap(r->base, r->bytes);
    *r = B.reg[--B.nreg];
    return FT_SUCCESS;
}

static int do_connect(const fti_baby_connect_t *c, int64_t deadline_ms)
{
    if (c->size < 1 || c->rank < 0 || c->rank >= c->size || B.comm ||
        (c->size > 1 && B.listener == NULL) ||
        memchr(c->next_addr, '\0', sizeof(c->next_addr)) == NULL)
        return FT_ERR_ARG;
    int rc = fti_tcp_ring_create(B.listener, c->rank, c->size, c->next_addr, (size_t)c->chunk_bytes,
                                 B.has_key ? &B.key : NULL, deadline_ms, &B.comm);
    fti_tcp_listener_destroy(B.listener);
    B.listener = NULL;
    if (rc == FT_SUCCESS && c->small_max != UINT64_MAX)
        fti_tcp_set_small_max(B.comm, (size_t)c->small_max);
    return rc;
}

static int do_allreduce(const fti_baby_allreduce_t *a, int64_t deadline_ms)
{
    if (B.comm == NULL)
        return FT_ERR_STATE;
    if (a->dtype < 0 || a->dtype >= FTI_DT_COUNT || a->op < 0 || a->op >= FTI_OP_COUNT)
        return FT_ERR_ARG;
    struct region *r = find_region(a->region_id);
    size_t es = fti_dtype_size((enum fti_dtype)a->dtype);
    if (r == NULL || a->offset > r->bytes || a->count > (r->bytes - a->offset) / es)
        return FT_ERR_ARG;
    return fti_comm_allreduce(B.comm, r->base + a->offset, (size_t)a->count,
                              (enum fti_dtype)a->dtype, (enum fti_op)a->op, deadline_ms);
}

/* The rank's job key (FTI_BABY_AUTH): the rings built from now on run the
 * challenge-response of auth.h with it, as the rank's in-process ring does.
 * Only before a ring or listener exists (the key is read-only once one
 * does). */
static int do_auth(const void *pl)
{
    if (B.comm || B.listener)
        return FT_ERR_STATE;
    memcpy(B.key.k, ((const fti_baby_auth_t *)pl)->key, sizeof(B.key.k));
    B.has_key = true;
    return FT_SUCCESS;
}

/* Runs one command; fills the reply payload (*rlen bytes). */
static int dispatch(const fti_baby_hdr_t *h, const void *pl, int fd, void *reply, size_t *rlen)
{
    *rlen = 0;
    switch (h->type) {
    case FTI_BABY_LISTEN: {
        if (h->len != sizeof(fti_baby_listen_t))
            return FT_ERR_BAD_MESSAGE;
        fti_baby_listen_t l;
        memcpy(&l, pl, sizeof(l));
        l.bind_host[sizeof(l.bind_host) - 1] = '\0';
        drop_ring();
        int rc = fti_tcp_listener_create(l.bind_host, &B.listener);
        if (rc == FT_SUCCESS) {
            fti_baby_addr_t *a = reply;
            memset(a, 0, sizeof(*a));
            fti_strlcpy(a->address, fti_tcp_listener_address(B.listener), sizeof(a->address));
            *rlen = sizeof(*a);
        }
        return rc;
    }
    case FTI_BABY_CONNECT:
        if (h->len != sizeof(fti_baby_connect_t))
            return FT_ERR_BAD_MESSAGE;
        return do_connect(pl, h->deadline_ms);
    case FTI_BABY_MAP:
        return h->len != sizeof(fti_baby_map_t) ? FT_ERR_BAD_MESSAGE : do_map(pl, fd);
    case FTI_BABY_UNMAP:
        return h->len != sizeof(fti_baby_map_t) ? FT_ERR_BAD_MESSAGE : do_unmap(pl);
    case FTI_BABY_ALLREDUCE:
        if (h->len != sizeof(fti_baby_allreduce_t))
            return FT_ERR_BAD_MESSAGE;
        return do_allreduce(pl, h->deadline_ms);
    case FTI_BABY_ABORT:
        drop_ring();
        return FT_SUCCESS;
    case FTI_BABY_EXIT:
        return FT_SUCCESS;
    case FTI_BABY_AUTH:
        return h->len != sizeof(fti_baby_auth_t) ? FT_ERR_BAD_MESSAGE : do_auth(pl);
    case FTI_BABY_NCCL_ID:
    case FTI_BABY_NCCL_INIT:
    case FTI_BABY_NCCL_ALLREDUCE:
#ifdef FTMPI_HAVE_NCCL
        return fti_baby_nccl_dispatch(h, pl, reply, rlen);
#else
        return FT_ERR_UNSUPPORTED; /* a child built without NCCL */
#endif
    default:
        return FT_ERR_BAD_MESSAGE; /* a reply type sent to us */
    }
}

static int serve(void)
{
    _Alignas(8) char pl[FTI_BABY_MAX_PAYLOAD], reply[FTI_BABY_MAX_PAYLOAD];
    for (;;) {
        fti_baby_hdr_t h;
        int fd = -1;
        int rc = fti_baby_recv_spin(B.chan, &h, pl, sizeof(pl), &fd, CMD_SPIN_US,
                                    fti_now_ms() + IDLE_WAIT_MS);
        if (rc == FT_ERR_TIMEOUT)
            continue;
        if (rc == FT_ERR_PROC_FAILED)
            return 0; /* the rank went away */
        if (rc != FT_SUCCESS)
            return 3;
        size_t rlen = 0;
        int crc = dispatch(&h, pl, fd, reply, &rlen);
        if (h.type == FTI_BABY_AUTH)
            explicit_bzero(pl, sizeof(pl)); /* the key lives on in auth.c only */
        if (fd >= 0)
            close(fd); /* a mapping keeps the region alive */
        if (crc == FT_ERR_BAD_MESSAGE)
            return 3;
        fti_baby_hdr_t r = {.type = (uint16_t)(h.type | FTI_BABY_REPLY), .seq = h.seq,
                            .rc = crc, .deadline_ms = h.deadline_ms};
        /* the reply may go out a little after the deadline: the rank waits
         * a grace period past it before it kills us */
        if (fti_baby_send(B.chan, &r, reply, rlen, -1, fti_now_ms() + 1000) != FT_SUCCESS)
            return 0;
        if (h.type == FTI_BABY_EXIT)
            return 0;
    }
}

/* Binds this process to a cpu list "0-3,8"; FT_ERR_ARG if it is bad. */
static int bind_cpus(const char *list)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    const char *p = list;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), z = a;
        if (end == p || a < 0 || a >= CPU_SETSIZE)
            return FT_ERR_ARG;
        if (*end == '-') {
            p = end + 1;
            z = strtol(p, &end, 10);
            if (end == p || z < a || z >= CPU_SETSIZE)
                return FT_ERR_ARG;
        }
        for (long c = a; c <= z; c++)
            CPU_SET((int)c, &set);
        if (*end != ',' && *end != '\0')
            return FT_ERR_ARG;
        p = *end ? end + 1 : end;
    }
    if (CPU_COUNT(&set) == 0)
        return FT_ERR_ARG;
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        FTI_WARN("ftmpi-baby: cannot bind to cpus %s: %m; running unbound", list);
        return FT_SUCCESS;
    }
    return FT_SUCCESS;
}

int main(int argc, char **argv)
{
    struct stat st;
    int level = FTI_LOG_WARN;
    const char *cpus = NULL;
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("ftmpi-baby (libftmpi) %s\n", PACKAGE_VERSION);
        return 0;
    }
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 < argc && !strcmp(argv[i], "--log-level"))
            level = fti_log_level_parse(argv[i + 1]);
        else if (i + 1 < argc && !strcmp(argv[i], "--cpus"))
            cpus = argv[i + 1];
        else
            level = -1;
    }
    if (level < 0 || fstat(B.chan, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        fprintf(stderr, "ftmpi-baby: fd %d is not the library's channel; "
                        "this program is started by libftmpi, not by hand\n", FTI_BABY_FD);
        return 2;
    }
    /* if the rank dies, so do we (also seen as EOF on the channel) */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGPIPE, SIG_IGN);
    fti_log_init("ftmpi-baby", level);
    if (cpus && bind_cpus(cpus) != FT_SUCCESS) {
        FTI_ERROR("ftmpi-baby: bad --cpus '%s'", cpus);
        return 2;
    }
    int fl = fcntl(B.chan, F_GETFL);
    if (fl < 0 || fcntl(B.chan, F_SETFL, fl | O_NONBLOCK) != 0)
        return 2;
    int rc = serve();
    drop_ring();
    return rc;
}
