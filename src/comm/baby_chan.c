/* baby_chan.c - the parent <-> ftmpi-baby command channel (see baby_chan.h). */
#include "comm/baby_chan.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"
#include "base/util.h"

/* Waits until fd is ready for ev; past the deadline it still looks once
 * (a message that came in time is taken, not timed out). */
static int wait_ready(int fd, short ev, int64_t deadline_ms)
{
    for (;;) {
        int left = fti_ms_left(deadline_ms);
        struct pollfd p = {.fd = fd, .events = ev};
        int n = poll(&p, 1, left > 0 ? left : 0);
        if (n > 0)
            return FT_SUCCESS; /* readable, or an error/hang-up the call will see */
        if (n < 0 && errno != EINTR)
            return FT_ERR_SYSTEM;
        if (n == 0 && left <= 0)
            return FT_ERR_TIMEOUT;
    }
}

int fti_baby_send(int fd, fti_baby_hdr_t *h, const void *payload, size_t len, int pass_fd,
                  int64_t deadline_ms)
{
    if (len > FTI_BABY_MAX_PAYLOAD)
        return FT_ERR_ARG;
    h->magic = FTI_BABY_MAGIC;
    h->version = FTI_BABY_VERSION;
    h->len = (uint32_t)len;
    h->reserved = 0;
    char buf[sizeof(*h) + FTI_BABY_MAX_PAYLOAD];
    memcpy(buf, h, sizeof(*h));
    if (len)
        memcpy(buf + sizeof(*h), payload, len);
    size_t total = sizeof(*h) + len, done = 0;
    if (pass_fd >= 0) {
        /* the fd rides with the first byte; the rest follows as plain data */
        union {
            struct cmsghdr c;
            char b[CMSG_SPACE(sizeof(int))];
        } ctl;
        struct iovec iov = {.iov_base = buf, .iov_len = total};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                           .msg_controllen = sizeof(ctl.b)};
        memset(ctl.b, 0, sizeof(ctl.b));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
        for (;;) {
            ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);
            if (n > 0) {
                done = (size_t)n;
                break;
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                int rc = wait_ready(fd, POLLOUT, deadline_ms);
                if (rc != FT_SUCCESS)
                    return rc;
                continue;
            }
            return FT_ERR_PROC_FAILED;
        }
    }
    return fti_write_full(fd, buf + done, total - done, deadline_ms);
}

/* Keeps the first fd of m's SCM_RIGHTS in *passed, closes any other. */
static void take_fds(struct msghdr *m, int *passed)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < nfd; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (*passed < 0)
                *passed = f;
            else
                close(f); /* one fd per message: the rest is refused */
        }
    }
}

/* Reads the header; keeps the first fd passed with it.  The header is
 * seldom there yet (a reply comes when the collective ends, a command when
 * the rank calls): so recvmsg is tried for at most spin_us, then poll
 * waits, then recvmsg reads -- two system calls a message when it is not
 * there, one when the spin catches it, never the EAGAIN of a first blind
 * try. */
static int recv_hdr(int fd, fti_baby_hdr_t *h, int *passed, int spin_us, int64_t deadline_ms)
{
    char *p = (char *)h;
    size_t got = 0;
    int64_t spin_until = spin_us > 0 ? fti_now_us() + spin_us : 0;
    int ready = spin_us > 0; /* spinning: try before each wait */
    while (got < sizeof(*h)) {
        if (!ready) {
            int rc = wait_ready(fd, POLLIN, deadline_ms);
            if (rc != FT_SUCCESS)
                return rc;
        }
        union {
            struct cmsghdr c;
            char b[CMSG_SPACE(4 * sizeof(int))];
        } ctl;
        struct iovec iov = {.iov_base = p + got, .iov_len = sizeof(*h) - got};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                           .msg_controllen = sizeof(ctl.b)};
        ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        ready = n < 0 && errno == EINTR;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            ready = spin_until != 0 && fti_now_us() < spin_until;
            if (ready)
                sched_yield(); /* a parent and its child may share a core */
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return FT_ERR_PROC_FAILED;
        take_fds(&m, passed);
        got += (size_t)n;
        spin_until = 0; /* the rest of a message follows at once: wait for it */
    }
    return FT_SUCCESS;
}

int fti_baby_recv(int fd, fti_baby_hdr_t *h, void *payload, size_t cap, int *fd_p,
                  int64_t deadline_ms)
{
    return fti_baby_recv_spin(fd, h, payload, cap, fd_p, 0, deadline_ms);
}

int fti_baby_recv_spin(int fd, fti_baby_hdr_t *h, void *payload, size_t cap, int *fd_p,
                       int spin_us, int64_t deadline_ms)
{
    int passed = -1;
    int rc = recv_hdr(fd, h, &passed, spin_us, deadline_ms);
    if (rc == FT_SUCCESS) {
        unsigned t = h->type & ~(unsigned)FTI_BABY_REPLY;
        if (h->magic != FTI_BABY_MAGIC || h->version != FTI_BABY_VERSION || h->reserved != 0 ||
            t < FTI_BABY_LISTEN || t >= FTI_BABY_TYPE_END ||
            (h->type & ~0x1ffu) != 0 || h->len > cap || h->len > FTI_BABY_MAX_PAYLOAD ||
            (passed >= 0 && fd_p == NULL)) {
            FTI_WARN("baby channel: bad message (magic %#x version %u type %#x len %u)",
                     h->magic, h->version, h->type, h->len);
            rc = FT_ERR_BAD_MESSAGE;
        }
    }
    if (rc == FT_SUCCESS && h->len > 0)
        rc = fti_read_full(fd, payload, h->len, deadline_ms);
    if (rc != FT_SUCCESS) {
        if (passed >= 0)
            close(passed);
        return rc;
    }
    if (fd_p)
        *fd_p = passed;
    return FT_SUCCESS;
}
