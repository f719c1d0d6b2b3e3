/*
 * bench_tcpstream.c - the raw loopback TCP stream that healing is compared
 * with (driver: bench_recovery.sh).  A receiver (this process) and a sender
 * (a forked child) on 127.0.0.1; per repetition the sender connects, writes
 * BYTES from its buffer and waits for a one-byte acknowledgement, the
 * receiver reads the BYTES into its own buffer and acknowledges.  The time
 * is the sender's, from connect() to the acknowledgement: what a heal of
 * BYTES would take if it were nothing but one TCP stream between two
 * processes (sockets tuned as the library tunes them: TCP_NODELAY, 4 MiB
 * buffers).
 *
 *   bench_tcpstream --bytes N [--reps R] [--warmup W]
 *
 * Prints "RESULT <bytes> <median_us> <min_us> <max_us> <MiB_per_s of the median>".
 * Exit status 0, or 1 on an error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define MAX_REPS 1000
#define IO_CHUNK ((size_t)1 << 20)

static void die(const char *what)
{
    fprintf(stderr, "bench_tcpstream: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void tune(int fd)
{
    int one = 1, bufsz = 4 << 20;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
}

static void xfer(int fd, char *buf, size_t len, int sending)
{
    while (len > 0) {
        size_t want = len < IO_CHUNK ? len : IO_CHUNK;
        ssize_t n = sending ? send(fd, buf, want, MSG_NOSIGNAL) : recv(fd, buf, want, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ECONNRESET;
            die(sending ? "send" : "recv");
        }
        buf += n;
        len -= (size_t)n;
    }
}

static void sender(struct sockaddr_in sa, size_t bytes, int total, int out_fd)
{
    char *buf = malloc(bytes), ack;
    if (buf == NULL)
        die("malloc");
    memset(buf, 0x5a, bytes);
    for (int r = 0; r < total; r++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            die("socket");
        tune(fd);
        double t0 = bench_now();
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
            die("connect");
        xfer(fd, buf, bytes, 1);
        xfer(fd, &ack, 1, 0);
        double us = (bench_now() - t0) * 1e6;
        close(fd);
        if (write(out_fd, &us, sizeof(us)) != (ssize_t)sizeof(us))
            die("write");
    }
    free(buf);
}

int main(int argc, char **argv)
{
    size_t bytes = 0;
    int reps = 7, warmup = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--bytes") && bench_parse_bytes(argv[i + 1], &bytes) == 0)
            continue;
        if (!strcmp(argv[i], "--reps") && (reps = atoi(argv[i + 1])) >= 1 && reps <= MAX_REPS)
            continue;
        if (!strcmp(argv[i], "--warmup") && (warmup = atoi(argv[i + 1])) >= 0 &&
            warmup <= MAX_REPS)
            continue;
        bytes = 0;
        break;
    }
    if (bytes == 0) {
        fprintf(stderr, "usage: bench_tcpstream --bytes N [--reps R] [--warmup W]\n");
        return 2;
    }

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), pfd[2];
    struct sockaddr_in sa;
    socklen_t salen = sizeof(sa);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 4) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &salen) != 0)
        die("listen on 127.0.0.1");
    if (pipe(pfd) != 0)
        die("pipe");
    char *buf = malloc(bytes);
    if (buf == NULL)
        die("malloc");
    memset(buf, 0, bytes); /* the receiver's memory is resident, as a registered buffer is */

    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        close(pfd[0]);
        close(lfd);
        sender(sa, bytes, warmup + reps, pfd[1]);
        _exit(0);
    }
    close(pfd[1]);
    double t[MAX_REPS];
    for (int r = 0; r < warmup + reps; r++) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            die("accept");
        tune(fd);
        char ack = 1;
        xfer(fd, buf, bytes, 0);
        xfer(fd, &ack, 1, 1);
        double us;
        if (read(pfd[0], &us, sizeof(us)) != (ssize_t)sizeof(us))
            die("read the sender's time");
        close(fd);
        if (r >= warmup)
            t[r - warmup] = us;
    }
    int st;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bench_tcpstream: the sender failed\n");
        return 1;
    }
    double lo = t[0], hi = t[0];
    for (int r = 1; r < reps; r++) {
        lo = t[r] < lo ? t[r] : lo;
        hi = t[r] > hi ? t[r] : hi;
    }
    double med = bench_median(t, (size_t)reps);
    printf("RESULT %zu %.1f %.1f %.1f %.1f\n", bytes, med, lo, hi,
           (double)bytes / (1024.0 * 1024.0) / (med * 1e-6));
    free(buf);
    return 0;
}
