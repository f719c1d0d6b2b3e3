/*
 * shim_hub_forge.c - plays an intruder at the drop-in's watchdog hub (world
 * rank 0; mpi_shim/hub.h) for tests/shim/test_shim_hub.sh.
 *
 *   shim_hub_forge ADDR WAIT_S hello R...
 *       per R, a connection that sends a forged HELLO claiming world rank
 *       R (8 bytes: type 1 and R, little-endian uint32s) without any
 *       handshake, waits up to WAIT_S seconds for the hub to close it,
 *       then closes it.  Prints "hello R: closed by the hub" or
 *       "hello R: still open after WAIT_S s".
 *   shim_hub_forge ADDR WAIT_S claim R
 *       an insider: proves FTMPI_TOKEN_FILE's secret (the library's
 *       handshake), then claims world rank R.  Prints "claim R: refused"
 *       when the hub answers REFUSED (type 5) and closes, "claim R:
 *       accepted" when it keeps the connection WAIT_S seconds, "claim R:
 *       handshake failed (...)" otherwise.
 * Exit 0 once done; 1 on a usage or connect error.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/auth.h"
#include "base/log.h"
#include "base/net.h"
#include "base/util.h"

static void frame(uint8_t f[8], uint32_t type, uint32_t value)
{
    for (int i = 0; i < 4; i++) {
        f[i] = (uint8_t)(type >> (8 * i));
        f[4 + i] = (uint8_t)(value >> (8 * i));
    }
}

/* Reads until the hub closes or wait_s pass; the frame types seen (bit
 * per type < 32) into *types_p.  True when the hub closed. */
static int until_closed(int fd, int wait_s, uint32_t *types_p)
{
    uint8_t buf[8];
    size_t got = 0;
    int64_t deadline = fti_now_ms() + 1000LL * wait_s;
    *types_p = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + got, sizeof(buf) - got, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return 1;
        if (n > 0) {
            got += (size_t)n;
            if (got == sizeof(buf)) {
                uint32_t t = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 |
                             (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 24;
                if (t < 32)
                    *types_p |= 1u << t;
                got = 0;
            }
            continue;
        }
        if (fti_ms_left(deadline) <= 0)
            return 0;
        struct pollfd p = {fd, POLLIN, 0};
        (void)poll(&p, 1, fti_ms_left(deadline));
    }
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: shim_hub_forge ADDR WAIT_S hello R... | claim R\n");
        return 1;
    }
    fti_log_level = FTI_LOG_NONE;
    const char *addr = argv[1];
    int wait_s = atoi(argv[2]);
    bool insider = strcmp(argv[3], "claim") == 0;
    fti_auth_key_t key;
    char err[512];
    const char *tf = getenv("FTMPI_TOKEN_FILE");
    if (insider && fti_auth_load_key(tf, &key, err, sizeof(err)) != FT_SUCCESS) {
        fprintf(stderr, "shim_hub_forge: %s\n", err);
        return 1;
    }
    for (int i = 4; i < argc; i++) {
        int fd = -1, r = atoi(argv[i]);
        if (fti_tcp_connect(addr, fti_now_ms() + 10000, &fd) != FT_SUCCESS) {
            fprintf(stderr, "shim_hub_forge: cannot connect to %s: %s\n", addr,
                    fti_net_last_error());
            return 1;
        }
        if (insider) {
            int rc = fti_auth_connect_fd(fd, &key, fti_now_ms() + 1000LL * wait_s);
            if (rc != FT_SUCCESS) {
                printf("claim %d: handshake failed (%s)\n", r, FT_Error_string(rc));
                close(fd);
                continue;
            }
        }
        uint8_t f[8];
        uint32_t types = 0;
        frame(f, 1, (uint32_t)r);
        int rc = fti_write_full(fd, f, sizeof(f), fti_now_ms() + 10000);
        int closed = rc == FT_SUCCESS ? until_closed(fd, wait_s, &types) : 1;
        if (insider)
            printf("claim %d: %s\n", r,
                   closed && (types & 1u << 5) ? "refused" : closed ? "closed" : "accepted");
        else if (closed)
            printf("hello %d: closed by the hub\n", r);
        else
            printf("hello %d: still open after %d s\n", r, wait_s);
        fflush(stdout);
        close(fd);
    }
    return 0;
}
