/* net.c - sockets with deadlines (see net.h). */
#include "base/net.h"

#include <stdbool.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/bind_if.h"
#include "base/log.h"
#include "base/sizes.h"
#include "base/util.h"

/* Send and receive buffer size asked for every socket (the kernel caps it
 * at net.core.wmem_max / rmem_max). */
#define NET_SOCK_BUF (4 << 20)
/* Room for a port number in decimal. */
#define NET_PORT_STR 8

int fti_addr_any_port(char *buf, size_t len, const char *host)
{
    bool bare_v6 = strchr(host, ':') != NULL && host[0] != '[';
    int n = snprintf(buf, len, bare_v6 ? "[%s]:0" : "%s:0", host);
    return n < 0 || (size_t)n >= len ? FT_ERR_ARG : FT_SUCCESS;
}

int fti_bind_host_resolve(const char *setting, char *host, size_t len)
{
    if (fti_bind_is_selector(setting)) {
        char err[768] = "";
        int rc = fti_bind_if_resolve(setting, host, len, err, sizeof(err));
        if (rc != FT_SUCCESS)
            FTI_ERROR("%s", err[0] ? err : "FTMPI_BIND_HOST: the address does not fit");
        return rc;
    }
    if (strcmp(setting, "hostname") != 0)
        return fti_strlcpy(host, setting, len) == FT_SUCCESS ? FT_SUCCESS : FT_ERR_ARG;
    if (gethostname(host, len) != 0) {
        FTI_ERROR("FTMPI_BIND_HOST=hostname: gethostname: %m");
        return FT_ERR_SYSTEM;
    }
    host[len - 1] = '\0';
    return FT_SUCCESS;
}

int fti_addr_split(const char *addr, char *host, size_t hostlen, int *port_p)
{
    const char *colon, *hs = addr;
    size_t hl;
    char *end;

    if (addr == NULL || *addr == '\0')
        return FT_ERR_ARG;
    if (addr[0] == '[') {
        const char *rb = strchr(addr, ']');
        if (rb == NULL || rb[1] != ':')
            return FT_ERR_ARG;
        hs = addr + 1;
        hl = (size_t)(rb - hs);
        colon = rb + 1;
    } else {
        colon = strrchr(addr, ':');
        if (colon == NULL)
            return FT_ERR_ARG;
        hl = (size_t)(colon - addr);
    }
    if (hl == 0 || hl >= hostlen)
        return FT_ERR_ARG;
    if (colon[1] < '0' || colon[1] > '9') /* strtol would take " 80" and "+80" */
        return FT_ERR_ARG;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end != '\0' || port < 0 || port > 65535)
        return FT_ERR_ARG;
    memcpy(host, hs, hl);
    host[hl] = '\0';
    *port_p = (int)port;
    return FT_SUCCESS;
}

/* This thread's last connect or resolve failure, with the address. */
static _Thread_local char last_error[FTI_ADDRESS_SIZE + 128];

const char *fti_net_last_error(void)
{
    return last_error;
}

int fti_addr_resolve(const char *addr, struct sockaddr_storage *sa_p, socklen_t *salen_p)
{
    char host[FTI_ADDRESS_SIZE], port_s[NET_PORT_STR];
    int port;
    struct addrinfo hints, *res = NULL;

    if (fti_addr_split(addr, host, sizeof(host), &port) != FT_SUCCESS)
        return FT_ERR_ARG;
    snprintf(port_s, sizeof(port_s), "%d", port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int rc = getaddrinfo(host, port_s, &hints, &res);
    if (rc != 0 || res == NULL) {
        FTI_DEBUG("cannot resolve '%s': %s", addr, gai_strerror(rc));
        snprintf(last_error, sizeof(last_error), "%s: cannot resolve '%s': %s", addr, host,
                 rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return FT_ERR_ARG;
    }
    memcpy(sa_p, res->ai_addr, res->ai_addrlen);
    *salen_p = res->ai_addrlen;
    freeaddrinfo(res);
    return FT_SUCCESS;
}

int fti_sock_tune(int fd)
{
    int one = 1, bufsz = NET_SOCK_BUF;
    int fl = fcntl(fd, F_GETFL, 0);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        FTI_ERROR("fcntl(O_NONBLOCK): %m");
        return FT_ERR_SYSTEM;
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
    return FT_SUCCESS;
}

/* Resolves addr into *sa_p / *salen_p and opens a TCP socket of its family
 * into *fd_p (close()). */
static int socket_for(const char *addr, struct sockaddr_storage *sa_p, socklen_t *salen_p,
                      int *fd_p)
{
    int rc = fti_addr_resolve(addr, sa_p, salen_p);
    if (rc != FT_SUCCESS)
        return rc;
    int fd = socket(sa_p->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        FTI_ERROR("socket: %m");
        return FT_ERR_SYSTEM;
    }
    *fd_p = fd;
    return FT_SUCCESS;
}

int fti_tcp_listen(const char *addr, int backlog, int *fd_p)
{
    struct sockaddr_storage sa;
    socklen_t salen;
    int one = 1, fd;

    int rc = socket_for(addr, &sa, &salen, &fd);
    if (rc != FT_SUCCESS)
        return rc;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, salen) < 0) {
        FTI_ERROR("bind %s: %m", addr);
        close(fd);
        return FT_ERR_SYSTEM;
    }
    if (listen(fd, backlog) < 0) {
        FTI_ERROR("listen %s: %m", addr);
        close(fd);
        return FT_ERR_SYSTEM;
    }
    int fl = fcntl(fd, F_GETFL, 0);
    (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    *fd_p = fd;
    return FT_SUCCESS;
}

int fti_sock_name(int fd, char *buf, size_t len)
{
    struct sockaddr_storage sa;
    socklen_t salen = sizeof(sa);
    char host[FTI_ADDRESS_SIZE], port[NET_PORT_STR];

    if (getsockname(fd, (struct sockaddr *)&sa, &salen) < 0) {
        FTI_ERROR("getsockname: %m");
        return FT_ERR_SYSTEM;
    }
    int rc = getnameinfo((struct sockaddr *)&sa, salen, host, sizeof(host), port, sizeof(port),
                         NI_NUMERICHOST | NI_NUMERICSERV);
    if (rc != 0) {
        FTI_ERROR("getnameinfo: %s", gai_strerror(rc));
        return FT_ERR_SYSTEM;
    }
    if (sa.ss_family == AF_INET6)
        snprintf(buf, len, "[%s]:%s", host, port);
    else
        snprintf(buf, len, "%s:%s", host, port);
    return FT_SUCCESS;
}

static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    struct pollfd p = {fd, events, 0};
    for (;;) {
        int left = fti_ms_left(deadline_ms);
        int n = poll(&p, 1, left);
        if (n > 0)
            return FT_SUCCESS;
        if (n == 0)
            return FT_ERR_TIMEOUT;
        if (errno != EINTR) {
            FTI_ERROR("poll: %m");
            return FT_ERR_SYSTEM;
        }
    }
}

int fti_tcp_connect_start(const char *addr, int *fd_p, int *pending_p)
{
    struct sockaddr_storage sa;
    socklen_t salen;
    int fd;
    int rc = socket_for(addr, &sa, &salen, &fd);
    if (rc != FT_SUCCESS)
        return rc;
    if ((rc = fti_sock_tune(fd)) != FT_SUCCESS) {
        close(fd);
        return rc;
    }
    int pending = 0;
    if (connect(fd, (struct sockaddr *)&sa, salen) < 0) {
        /* EINTR: the connect goes on asynchronously, as with EINPROGRESS */
        if (errno != EINPROGRESS && errno != EINTR) {
            FTI_DEBUG("connect %s: %m", addr); /* keeps errno */
            int err = errno;
            snprintf(last_error, sizeof(last_error), "%s: %s", addr, strerror(err));
            close(fd);
            errno = err;
            return FT_ERR_CONNECT;
        }
        pending = 1;
    }
    *fd_p = fd;
    *pending_p = pending;
    return FT_SUCCESS;
}

int fti_tcp_connect(const char *addr, int64_t deadline_ms, int *fd_p)
{
    int fd, pending;
    int rc = fti_tcp_connect_start(addr, &fd, &pending);
    if (rc != FT_SUCCESS)
        return rc == FT_ERR_ARG ? FT_ERR_CONNECT : rc;
    if (pending) {
        rc = wait_fd(fd, POLLOUT, deadline_ms);
        if (rc != FT_SUCCESS) {
            close(fd);
            return rc;
        }
        int err = 0;
        socklen_t elen = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err != 0) {
            errno = err;
            FTI_DEBUG("connect %s: %m", addr);
            snprintf(last_error, sizeof(last_error), "%s: %s", addr, strerror(err));
            close(fd);
            return FT_ERR_CONNECT;
        }
    }
    *fd_p = fd;
    return FT_SUCCESS;
}

int fti_tcp_accept(int lfd, int64_t deadline_ms, int *fd_p)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) {
            int rc = fti_sock_tune(fd);
            if (rc != FT_SUCCESS) {
                close(fd);
                return rc;
            }
            *fd_p = fd;
            return FT_SUCCESS;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            FTI_ERROR("accept: %m");
            return FT_ERR_SYSTEM;
        }
        int rc = wait_fd(lfd, POLLIN, deadline_ms);
        if (rc != FT_SUCCESS)
            return rc;
    }
}

int fti_write_full(int fd, const void *buf, size_t len, int64_t deadline_ms)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_fd(fd, POLLOUT, deadline_ms);
            if (rc != FT_SUCCESS)
                return rc;
            continue;
        }
        FTI_DEBUG("send: %m");
        return FT_ERR_PROC_FAILED;
    }
    return FT_SUCCESS;
}

/* Reads of at least this many bytes wait in the kernel (fti_read_bulk). */
#define NET_BULK_MIN ((size_t)256 << 10)

int fti_read_bulk(int fd, void *buf, size_t len, int64_t deadline_ms)
{
    int fl = fcntl(fd, F_GETFL);
    if (len < NET_BULK_MIN || fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
        return fti_read_full(fd, buf, len, deadline_ms);
    char *p = buf;
    int rc = FT_SUCCESS;
    while (len > 0 && rc == FT_SUCCESS) {
        int64_t left = deadline_ms - fti_now_ms();
        if (left <= 0) {
            rc = FT_ERR_TIMEOUT;
            break;
        }
        /* the wait of one recv: what is left, at most a second (the
         * deadline is checked between) */
        struct timeval tv = {left > 1000 ? 1 : 0, left > 1000 ? 0 : (long)left * 1000};
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
            rc = fti_read_full(fd, p, len, deadline_ms);
            break;
        }
        ssize_t n = recv(fd, p, len, MSG_WAITALL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n == 0) {
            rc = FT_ERR_PROC_FAILED;
        } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
            FTI_DEBUG("recv: %m");
            rc = FT_ERR_PROC_FAILED;
        }
    }
    struct timeval zero = {0, 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &zero, sizeof(zero));
    (void)fcntl(fd, F_SETFL, fl);
    return rc;
}

int fti_read_full(int fd, void *buf, size_t len, int64_t deadline_ms)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return FT_ERR_PROC_FAILED;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_fd(fd, POLLIN, deadline_ms);
            if (rc != FT_SUCCESS)
                return rc;
            continue;
        }
        FTI_DEBUG("recv: %m");
        return FT_ERR_PROC_FAILED;
    }
    return FT_SUCCESS;
}
