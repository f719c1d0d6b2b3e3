/*
 * fuzz_baby.c - the baby channel's receive side (src/comm/baby_chan.c):
 * the header and payload checks of fti_baby_recv, on a socketpair.
 *
 * Input byte 0: bit 0 passes a file descriptor (SCM_RIGHTS) with the
 * first bytes, bit 1 lets the receiver take one (fd_p), bits 2-3 pick the
 * payload capacity; the rest is the stream.  Messages are received until
 * one fails.  Checks: an accepted header is a valid one and its payload
 * fits; no descriptor is leaked (a passed one is either handed to the
 * caller, who closes it here, or closed by the channel).
 */
#include "fuzz_common.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "comm/baby_chan.h"
#include "base/net.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

static int lowest_free_fd(void)
{
    int fd = dup(0);
    CHECK(fd >= 0);
    close(fd);
    return fd;
}

static void send_with_fd(int sock, const uint8_t *d, size_t n)
{
    int pass = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK(pass >= 0);
    union {
        struct cmsghdr c;
        char b[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof(ctl));
    struct iovec iov = {.iov_base = (void *)d, .iov_len = n};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                       .msg_controllen = sizeof(ctl.b)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &pass, sizeof(int));
    CHECK(sendmsg(sock, &m, 0) == (ssize_t)n);
    close(pass);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t caps[] = {0, 16, 256, FTI_BABY_MAX_PAYLOAD};
    fti_log_level = FTI_LOG_NONE;
    if (size < 1)
        return 0;
    uint8_t opt = data[0];
    const uint8_t *d = data + 1;
    size_t n = size - 1 > 60000 ? 60000 : size - 1;
    int free_before = lowest_free_fd();
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    if (n > 0 && (opt & 1))
        send_with_fd(sv[1], d, n);
    else if (n > 0)
        CHECK(fti_write_full(sv[1], d, n, fti_now_ms() + 5000) == FT_SUCCESS);
    shutdown(sv[1], SHUT_WR);

    size_t cap = caps[(opt >> 2) & 3];
    uint8_t payload[FTI_BABY_MAX_PAYLOAD];
    for (int i = 0; i < 64; i++) {
        fti_baby_hdr_t h;
        int fd = -1;
        int rc = fti_baby_recv(sv[0], &h, payload, cap, (opt & 2) ? &fd : NULL,
                               fti_now_ms() + 5000);
        if (rc != FT_SUCCESS) {
            CHECK(rc == FT_ERR_BAD_MESSAGE || rc == FT_ERR_PROC_FAILED);
            CHECK(fd == -1);
            break;
        }
        CHECK(h.magic == FTI_BABY_MAGIC && h.version == FTI_BABY_VERSION && h.reserved == 0);
        CHECK(h.len <= cap && h.len <= FTI_BABY_MAX_PAYLOAD);
        unsigned t = h.type & ~(unsigned)FTI_BABY_REPLY;
        CHECK(t >= FTI_BABY_LISTEN && t < FTI_BABY_TYPE_END);
        if (fd >= 0)
            close(fd);
    }
    close(sv[0]);
    close(sv[1]);
    CHECK(lowest_free_fd() == free_before); /* no descriptor leaked */
    return 0;
}

static void put_msg(fuzz_out_t *o, uint16_t type, uint32_t len, uint32_t magic)
{
    fti_baby_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.magic = magic;
    h.version = FTI_BABY_VERSION;
    h.type = type;
    h.seq = 7;
    h.deadline_ms = 123456;
    h.len = len;
    fo_bytes(o, &h, sizeof(h));
    for (uint32_t i = 0; i < len; i++)
        fo_u8(o, (uint8_t)i);
}

void fuzz_generated(fuzz_emit_fn emit)
{
    fuzz_out_t o;
    for (uint8_t opt = 0; opt < 16; opt += 1) {
        o.n = 0;
        fo_u8(&o, opt);
        put_msg(&o, FTI_BABY_LISTEN, sizeof(fti_baby_listen_t), FTI_BABY_MAGIC);
        put_msg(&o, FTI_BABY_MAP, sizeof(fti_baby_map_t), FTI_BABY_MAGIC);
        put_msg(&o, FTI_BABY_REPLY | FTI_BABY_ALLREDUCE, 0, FTI_BABY_MAGIC);
        put_msg(&o, FTI_BABY_EXIT, 0, FTI_BABY_MAGIC);
        emit(o.d, o.n);
    }
    o.n = 0;
    fo_u8(&o, 3);
    put_msg(&o, FTI_BABY_TYPE_END, 0, FTI_BABY_MAGIC);
    emit(o.d, o.n);
    o.n = 0;
    fo_u8(&o, 1);
    put_msg(&o, FTI_BABY_CONNECT, 2000, FTI_BABY_MAGIC);
    emit(o.d, o.n);
    o.n = 0;
    fo_u8(&o, 0);
    put_msg(&o, FTI_BABY_MAP, 0, 0x42424242);
    emit(o.d, o.n);
    o.n = 0;
    fo_u8(&o, 15);
    put_msg(&o, FTI_BABY_ABORT, 0, FTI_BABY_MAGIC);
    o.n -= 5; /* cut in the header */
    emit(o.d, o.n);
}
