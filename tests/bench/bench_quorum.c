/*
 * bench_quorum.c - event-driven load generator for one ftmpi-lighthouse:
 * N simulated replica groups, one TCP connection each, all in this one
 * process (epoll, no thread per group).  Driver: bench_quorum.sh.
 *
 *   bench_quorum --lighthouse HOST:PORT --groups N [--rounds R] [--pid PID]
 *                [--timeout-ms MS] [--compact 0|1]
 *
 * --compact 1 asks for compact replies (LighthouseQuorumRequest.compact:
 * each group gets its own results, not the member list); default 0, the
 * full member list.
 *
 * It raises RLIMIT_NOFILE to the hard limit, connects N sockets (in
 * batches, so the listen backlog never overflows), then runs:
 *   1 untimed heartbeat round (every connection is accepted and known),
 *   R heartbeat rounds      (the baseline: N small RPCs in flight at once),
 *   1 formation round       (every group asks for its first quorum),
 *   R fast rounds           (every member asks again, step + 1: fast quorum).
 * A round writes one request on every connection in one loop and waits for
 * every reply.  Its latency is from the last request written to the last
 * reply read in full.  Per round it also records the reply bytes (frame
 * headers included) and, with --pid, the lighthouse's CPU time (utime +
 * stime of /proc/PID/stat); at the end its peak RSS (VmHWM).  One reply per
 * quorum round is decoded and checked (N participants, or with --compact
 * one result of a quorum of N groups; the same quorum id in every fast
 * round).
 *
 * Output: "CONNECT <groups> <us>" (untimed setup), one line per round, then
 * a summary:
 *   HB|FORM|FAST <round> <latency_us> <reply_bytes> <cpu_ms>
 *   SUMMARY groups N hb_us X form_us X fast_us X bytes_per_quorum X
 *           cpu_ms_per_quorum X hb_cpu_ms X vmhwm_kb X member_bytes X
 *           sys_ms_per_quorum X
 * (latencies and bytes: medians of the R rounds; CPU: their mean, since
 * /proc counts 10 ms ticks; form_us: the one formation round)
 * member_bytes is the packed size of one member (what a compact reply that
 * carries only the requester's own results would be near).
 * Exit status 0, or 1 on an error or a round past --timeout-ms.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_util.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/rpc.h"

#define CONNECT_BATCH 64 /* below the listen backlog (libevent: 128) */
#define MAX_ROUNDS 64

struct conn {
    int fd;
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    size_t hdr_got;
    size_t body_left; /* payload bytes still to read */
    size_t body_len;
    uint8_t *keep;    /* payload kept for decoding (conn 0 only) */
    int done;
};

static struct conn *conns;
static int n_groups, epfd, lh_pid;
static char lh_host[64];
static int lh_port;
static int timeout_ms = 120000;
static bool compact; /* --compact: ask for compact replies */
static uint8_t scratch[1 << 20];

static void die(const char *what)
{
    fprintf(stderr, "bench_quorum: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* The lighthouse's CPU time in ms (utime + stime); *sys_p gets stime. */
static double lh_cpu_ms(double *sys_p)
{
    char path[64], buf[2048];
    *sys_p = 0.0;
    if (lh_pid <= 0)
        return 0.0;
    snprintf(path, sizeof(path), "/proc/%d/stat", lh_pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0.0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* fields after the command name */
    unsigned long long ut = 0, st = 0;
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return 0.0;
    double tick_ms = 1000.0 / (double)sysconf(_SC_CLK_TCK);
    *sys_p = (double)st * tick_ms;
    return (double)(ut + st) * tick_ms;
}

static long lh_vmhwm_kb(void)
{
    char path[64], line[256];
    long kb = -1;
    if (lh_pid <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/status", lh_pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        die("getrlimit");
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        die("setrlimit");
    if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < n_groups + 64) {
        fprintf(stderr, "bench_quorum: RLIMIT_NOFILE hard limit %ld < %d groups + 64\n",
                (long)rl.rlim_cur, n_groups);
        exit(1);
    }
}

/* Connects every group, CONNECT_BATCH at a time. */
static void connect_all(void)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)lh_port);
    if (inet_pton(AF_INET, lh_host, &sa.sin_addr) != 1) {
        fprintf(stderr, "bench_quorum: %s is not an IPv4 address\n", lh_host);
        exit(1);
    }
    struct epoll_event evs[CONNECT_BATCH];
    for (int base = 0; base < n_groups; base += CONNECT_BATCH) {
        int end = base + CONNECT_BATCH < n_groups ? base + CONNECT_BATCH : n_groups, left = 0;
        for (int i = base; i < end; i++) {
            int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
            if (fd < 0)
                die("socket");
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            conns[i].fd = fd;
            if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS)
                die("connect");
            struct epoll_event ev = {.events = EPOLLOUT, .data.u32 = (uint32_t)i};
            if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
                die("epoll_ctl");
            left++;
        }
        double deadline = bench_now() + timeout_ms / 1000.0;
        while (left > 0) {
            int n = epoll_wait(epfd, evs, CONNECT_BATCH, 100);
            if (n < 0 && errno != EINTR)
                die("epoll_wait");
            for (int j = 0; j < n; j++) {
                int i = (int)evs[j].data.u32, err = 0;
                socklen_t len = sizeof(err);
                getsockopt(conns[i].fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err != 0) {
                    errno = err;
                    die("connect to the lighthouse");
                }
                struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
                if (epoll_ctl(epfd, EPOLL_CTL_MOD, conns[i].fd, &ev) != 0)
                    die("epoll_ctl");
                left--;
            }
            if (bench_now() > deadline) {
                fprintf(stderr, "bench_quorum: connecting timed out\n");
                exit(1);
            }
        }
    }
}

static void write_all(int fd, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue; /* requests are small: the buffer drains at once */
            die("send");
        }
        buf += n;
        len -= (size_t)n;
    }
}

/* Reads what is available on conn i; returns 1 when its reply is complete. */
static int read_reply(int i, uint16_t method, uint64_t *bytes)
{
    struct conn *c = &conns[i];
    for (;;) {
        ssize_t n;
        if (c->hdr_got < FTI_RPC_HEADER_LEN) {
            n = recv(c->fd, c->hdr + c->hdr_got, FTI_RPC_HEADER_LEN - c->hdr_got, 0);
        } else {
            uint8_t *dst = c->keep ? c->keep + (c->body_len - c->body_left) : scratch;
            size_t want = c->keep ? c->body_left
                                  : (c->body_left < sizeof(scratch) ? c->body_left
                                                                    : sizeof(scratch));
            n = want ? recv(c->fd, dst, want, 0) : 0;
            if (want == 0)
                goto complete;
        }
        if (n == 0) {
            fprintf(stderr, "bench_quorum: the lighthouse closed connection %d\n", i);
            exit(1);
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return 0;
            die("recv");
        }
        *bytes += (uint64_t)n;
        if (c->hdr_got < FTI_RPC_HEADER_LEN) {
            c->hdr_got += (size_t)n;
            if (c->hdr_got == FTI_RPC_HEADER_LEN) {
                fti_rpc_header_t h;
                fti_rpc_header_decode(c->hdr, &h);
                if (h.magic != FTI_RPC_MAGIC || !(h.flags & FTI_RPC_F_REPLY) || h.status != 0 ||
                    (h.method != method && h.method != 0)) {
                    fprintf(stderr,
                            "bench_quorum: bad reply on connection %d: method %u status %d\n", i,
                            h.method, h.status);
                    exit(1);
                }
                c->body_len = c->body_left = h.length;
                if (i == 0 && method == FTMPI__METHOD__LIGHTHOUSE_QUORUM) {
                    c->keep = malloc(h.length ? h.length : 1);
                    if (c->keep == NULL)
                        die("malloc");
                }
                if (h.length == 0)
                    goto complete;
            }
        } else {
            c->body_left -= (size_t)n;
            if (c->body_left == 0)
                goto complete;
        }
    }
complete:
    c->done = 1;
    return 1;
}

struct round_result {
    double latency_us;
    uint64_t bytes;
    double cpu_ms;
    double sys_ms; /* the kernel's part of cpu_ms */
    int64_t quorum_id;
};

/* Sends frames[i] on every connection, waits for every reply. */
static void run_round(uint16_t method, uint8_t **frames, size_t *lens, struct round_result *res)
{
    static struct epoll_event evs[1024];
    uint64_t bytes = 0;
    int left = n_groups;
    for (int i = 0; i < n_groups; i++) {
        conns[i].hdr_got = 0;
        conns[i].body_left = conns[i].body_len = 0;
        conns[i].done = 0;
        free(conns[i].keep);
        conns[i].keep = NULL;
    }
    double sys0, sys1;
    double cpu0 = lh_cpu_ms(&sys0);
    for (int i = 0; i < n_groups; i++)
        write_all(conns[i].fd, frames[i], lens[i]);
    double t_sent = bench_now(), t_last = t_sent, deadline = t_sent + timeout_ms / 1000.0;
    while (left > 0) {
        int n = epoll_wait(epfd, evs, 1024, 100);
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        for (int j = 0; j < n; j++) {
            int i = (int)evs[j].data.u32;
            if (!conns[i].done && read_reply(i, method, &bytes)) {
                left--;
                t_last = bench_now();
            }
        }
        if (left > 0 && bench_now() > deadline) {
            fprintf(stderr, "bench_quorum: round timed out: %d of %d replies missing\n", left,
                    n_groups);
            exit(1);
        }
    }
    res->cpu_ms = lh_cpu_ms(&sys1) - cpu0;
    res->sys_ms = sys1 - sys0;
    res->latency_us = (t_last - t_sent) * 1e6;
    res->bytes = bytes;
    res->quorum_id = -1;
    if (method == FTMPI__METHOD__LIGHTHOUSE_QUORUM) {
        Ftmpi__LighthouseQuorumResponse *r =
            ftmpi__lighthouse_quorum_response__unpack(NULL, conns[0].body_len, conns[0].keep);
        bool ok = r != NULL && r->quorum != NULL;
        if (ok && compact)
            ok = r->quorum->n_participants == 0 && r->n_results == 1 &&
                 r->results[0]->replica_world_size == n_groups &&
                 r->results[0]->replica_rank == 0 &&
                 r->results[0]->quorum_id == r->quorum->quorum_id;
        else if (ok)
            ok = (int)r->quorum->n_participants == n_groups && r->n_results == 0;
        if (!ok) {
            fprintf(stderr, "bench_quorum: the reply does not hold a %squorum of %d groups\n",
                    compact ? "compact " : "", n_groups);
            exit(1);
        }
        res->quorum_id = r->quorum->quorum_id;
        ftmpi__lighthouse_quorum_response__free_unpacked(r, NULL);
    }
}

static size_t frame(uint16_t method, const ProtobufCMessage *msg, uint8_t **out)
{
    size_t len = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = malloc(FTI_RPC_HEADER_LEN + len);
    if (buf == NULL)
        die("malloc");
    fti_rpc_header_t h = {FTI_RPC_MAGIC, 0, method, 0, (uint32_t)len};
    fti_rpc_header_encode(&h, buf);
    protobuf_c_message_pack(msg, buf + FTI_RPC_HEADER_LEN);
    *out = buf;
    return FTI_RPC_HEADER_LEN + len;
}

static void member_init(Ftmpi__QuorumMember *m, int i, int64_t step, char *id, char *addr,
                        char *store)
{
    ftmpi__quorum_member__init(m);
    sprintf(id, "bq%06d", i);
    sprintf(addr, "127.0.0.1:%d", 20000 + i % 40000);
    sprintf(store, "127.0.0.1:%d", 20000 + (i + 1) % 40000);
    m->replica_id = id;
    m->address = addr;
    m->store_address = store;
    m->step = step;
    m->world_size = 1;
}

/* Request frames of one round for every group. */
static void make_frames(uint16_t method, int64_t step, uint8_t **frames, size_t *lens)
{
    char id[32], addr[32], store[32];
    for (int i = 0; i < n_groups; i++) {
        free(frames[i]);
        if (method == FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT) {
            Ftmpi__LighthouseHeartbeatRequest hb = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
            sprintf(id, "bq%06d", i);
            hb.replica_id = id;
            lens[i] = frame(method, &hb.base, &frames[i]);
        } else {
            Ftmpi__QuorumMember m;
            Ftmpi__LighthouseQuorumRequest req = FTMPI__LIGHTHOUSE_QUORUM_REQUEST__INIT;
            member_init(&m, i, step, id, addr, store);
            req.requester = &m;
            req.compact = compact;
            lens[i] = frame(method, &req.base, &frames[i]);
        }
    }
}

/* field 0: latency, 1: bytes (medians); 2: CPU ms, 3: its system part
 * (means: the clock ticks of /proc are 10 ms, too coarse for one round) */
static double median_of(const struct round_result *r, int n, int field)
{
    if (field >= 2) {
        double sum = 0;
        for (int i = 0; i < n; i++)
            sum += field == 2 ? r[i].cpu_ms : r[i].sys_ms;
        return sum / n;
    }
    double v[MAX_ROUNDS];
    for (int i = 0; i < n; i++)
        v[i] = field == 0 ? r[i].latency_us : field == 1 ? (double)r[i].bytes : r[i].cpu_ms;
    return bench_median(v, (size_t)n);
}

int main(int argc, char **argv)
{
    const char *lh = NULL;
    int rounds = 7;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--lighthouse"))
            lh = argv[i + 1];
        else if (!strcmp(argv[i], "--groups"))
            n_groups = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--pid"))
            lh_pid = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--timeout-ms"))
            timeout_ms = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--compact"))
            compact = atoi(argv[i + 1]) != 0;
        else
            lh = NULL, n_groups = 0, i = argc;
    }
    const char *colon = lh ? strrchr(lh, ':') : NULL;
    if (colon == NULL || n_groups < 1 || rounds < 1 || rounds > MAX_ROUNDS ||
        (size_t)(colon - lh) >= sizeof(lh_host) || timeout_ms < 1) {
        fprintf(stderr, "usage: bench_quorum --lighthouse HOST:PORT --groups N [--rounds R<=%d] "
                        "[--pid PID] [--timeout-ms MS] [--compact 0|1]\n", MAX_ROUNDS);
        return 2;
    }
    memcpy(lh_host, lh, (size_t)(colon - lh));
    lh_host[colon - lh] = '\0';
    lh_port = atoi(colon + 1);

    raise_nofile();
    conns = calloc((size_t)n_groups, sizeof(*conns));
    uint8_t **frames = calloc((size_t)n_groups, sizeof(*frames));
    size_t *lens = calloc((size_t)n_groups, sizeof(*lens));
    if (conns == NULL || frames == NULL || lens == NULL)
        die("calloc");
    if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        die("epoll_create1");
    double tc0 = bench_now();
    connect_all();
    printf("CONNECT %d %.1f\n", n_groups, (bench_now() - tc0) * 1e6);

    struct round_result warm, hb[MAX_ROUNDS], form, fast[MAX_ROUNDS];
    make_frames(FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT, 0, frames, lens);
    run_round(FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT, frames, lens, &warm);
    for (int r = 0; r < rounds; r++) {
        run_round(FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT, frames, lens, &hb[r]);
        printf("HB %d %.1f %" PRIu64 " %.1f\n", r, hb[r].latency_us, hb[r].bytes, hb[r].cpu_ms);
    }
    make_frames(FTMPI__METHOD__LIGHTHOUSE_QUORUM, 0, frames, lens);
    run_round(FTMPI__METHOD__LIGHTHOUSE_QUORUM, frames, lens, &form);
    printf("FORM 0 %.1f %" PRIu64 " %.1f\n", form.latency_us, form.bytes, form.cpu_ms);
    fflush(stdout);
    for (int r = 0; r < rounds; r++) {
        make_frames(FTMPI__METHOD__LIGHTHOUSE_QUORUM, r + 1, frames, lens);
        run_round(FTMPI__METHOD__LIGHTHOUSE_QUORUM, frames, lens, &fast[r]);
        printf("FAST %d %.1f %" PRIu64 " %.1f\n", r, fast[r].latency_us, fast[r].bytes,
               fast[r].cpu_ms);
        fflush(stdout);
        if (fast[r].quorum_id != form.quorum_id) {
            fprintf(stderr, "bench_quorum: fast round %d changed the quorum id (%" PRId64
                            " -> %" PRId64 ")\n", r, form.quorum_id, fast[r].quorum_id);
            return 1;
        }
    }

    /* size of one packed member, for the compact-reply comparison */
    char id[32], addr[32], store[32];
    Ftmpi__QuorumMember m;
    member_init(&m, n_groups - 1, rounds, id, addr, store);
    size_t member_bytes = ftmpi__quorum_member__get_packed_size(&m) + 3;

    printf("SUMMARY groups %d hb_us %.1f form_us %.1f fast_us %.1f bytes_per_quorum %.0f "
           "cpu_ms_per_quorum %.2f hb_cpu_ms %.2f vmhwm_kb %ld member_bytes %zu sys_ms_per_quorum %.2f\n",
           n_groups, median_of(hb, rounds, 0), form.latency_us, median_of(fast, rounds, 0),
           median_of(fast, rounds, 1), median_of(fast, rounds, 2), median_of(hb, rounds, 2),
           lh_vmhwm_kb(), member_bytes, median_of(fast, rounds, 3));
    for (int i = 0; i < n_groups; i++) {
        close(conns[i].fd);
        free(conns[i].keep);
        free(frames[i]);
    }
    free(conns);
    free(frames);
    free(lens);
    close(epfd);
    return 0;
}
