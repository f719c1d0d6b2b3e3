/*
 * net.h - sockets with deadlines: address parsing, listen, non-blocking
 * connect, and full reads/writes that give up at a deadline.  Used by the
 * RPC client and the tcp data plane.  All sends use MSG_NOSIGNAL.
 *
 * Return values are FT_Error codes (ftmpi_errors.h); system errors are logged once
 * here with %m.
 */
#ifndef FTI_NET_H
#define FTI_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Writes "host:0" into buf (len bytes): an ephemeral port on host, in
 * brackets when host is a bare IPv6 literal ("::1" -> "[::1]:0"; "[::1]"
 * stays as it is).  FT_ERR_ARG when it does not fit. */
int fti_addr_any_port(char *buf, size_t len, const char *host);

/* FTMPI_BIND_HOST as a rank's servers (and the drop-in's watchdog hub)
 * bind and advertise it, into host (len bytes): "hostname" is this node's
 * name (gethostname: multi-node jobs); "if:NAME", "A.B.C.D/BITS" or a comma
 * list of both (Open MPI's btl_tcp_if_include) the IPv4 address of this
 * node's first interface that matches (bind_if.h: FT_ERR_CONFIG, logged
 * naming the value, when none does); anything else is taken as given.
 * FT_ERR_SYSTEM (logged) when gethostname fails, FT_ERR_ARG when it does
 * not fit. */
int fti_bind_host_resolve(const char *setting, char *host, size_t len);

/* Splits "host:port" (or "[v6]:port") into host and port. */
int fti_addr_split(const char *addr, char *host, size_t hostlen, int *port_p);

/* Resolves addr into *sa_p / *salen_p (first result). */
int fti_addr_resolve(const char *addr, struct sockaddr_storage *sa_p, socklen_t *salen_p);

/* The calling thread's last failure to resolve or connect, naming the
 * address and the resolver's or the system's error ("host:1: Connection
 * refused"); "" if none.  For messages (FTI_WARN ... %s). */
const char *fti_net_last_error(void);

/* Listens on addr ("host:port", port 0 = ephemeral), non-blocking,
 * SO_REUSEADDR.  *fd_p is closed with close(). */
int fti_tcp_listen(const char *addr, int backlog, int *fd_p);

/* "host:port" actually bound by fd, written into buf. */
int fti_sock_name(int fd, char *buf, size_t len);

/* Starts a non-blocking connect to addr: resolves it, opens a socket, tunes
 * it (fti_sock_tune) and calls connect().  On success *fd_p is the socket
 * (closed with close()) and *pending_p is 1 while the connect is in
 * progress (poll for POLLOUT, then read SO_ERROR) or 0 when it completed at
 * once.  FT_ERR_ARG when addr does not resolve, FT_ERR_CONNECT when
 * connect() fails at once (errno says why), FT_ERR_SYSTEM. */
int fti_tcp_connect_start(const char *addr, int *fd_p, int *pending_p);

/* Connects to addr before deadline_ms (monotonic).  The returned socket is
 * non-blocking with TCP_NODELAY.  Returns FT_ERR_CONNECT when refused,
 * FT_ERR_TIMEOUT on the deadline. */
int fti_tcp_connect(const char *addr, int64_t deadline_ms, int *fd_p);

/* Accepts one connection on a listening fd before deadline_ms. */
int fti_tcp_accept(int lfd, int64_t deadline_ms, int *fd_p);

/* Writes / reads exactly len bytes on a non-blocking fd before deadline_ms.
 * FT_ERR_PROC_FAILED when the peer closes or resets, FT_ERR_TIMEOUT on the
 * deadline. */
int fti_write_full(int fd, const void *buf, size_t len, int64_t deadline_ms);
int fti_read_full(int fd, void *buf, size_t len, int64_t deadline_ms);

/* fti_read_full for a large payload: from NET_BULK_MIN (256 KiB) on, the
 * socket is made blocking for the read and recv(MSG_WAITALL) waits in the
 * kernel, which copies each segment as it arrives (a poll and a short recv
 * per wake-up cost a heal of 64 MiB over loopback about a third of its
 * speed); the socket's flags and receive timeout are restored. */
int fti_read_bulk(int fd, void *buf, size_t len, int64_t deadline_ms);

/* Sets O_NONBLOCK, TCP_NODELAY and large socket buffers. */
int fti_sock_tune(int fd);

#endif
