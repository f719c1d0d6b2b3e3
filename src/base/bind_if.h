/*
 * bind_if.h - FTMPI_BIND_HOST by interface name or subnet: the values an
 * HPC admin gives Open MPI's btl_tcp_if_include ("if:ib0", "10.78.1.0/24",
 * a comma list of both, first match wins), matched against this node's
 * interfaces (getifaddrs) to the IPv4 address a rank binds and advertises.
 *
 * The matching is pure (fti_bind_match, on a list the caller gives) so
 * that tests run it on a fake node; fti_bind_if_resolve reads the real one.
 */
#ifndef FTI_BIND_IF_H
#define FTI_BIND_IF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One interface address of a node: its name, its IPv4 address (host byte
 * order) and whether the interface is up. */
typedef struct fti_ifaddr {
    const char *name;
    uint32_t addr;
    bool up;
} fti_ifaddr_t;

/* Whether setting selects by interface or subnet (it begins with "if:" or
 * holds a '/': no host name or literal address does). */
bool fti_bind_is_selector(const char *setting);

/* Picks, for setting (a comma list of "if:NAME" and "A.B.C.D/N", tried in
 * order), the first of ifs[0..n) that is up and matches, and writes its
 * dotted IPv4 address into host (len bytes).  FT_ERR_CONFIG with a line
 * in err (errlen bytes) naming the setting's value and the node's
 * interfaces when an entry is malformed or none matches; FT_ERR_ARG when
 * the address does not fit.  host is written only on success. */
int fti_bind_match(const char *setting, const fti_ifaddr_t *ifs, size_t n, char *host, size_t len,
                   char *err, size_t errlen);

/* fti_bind_match on this node's interfaces (getifaddrs, IPv4 only).
 * FT_ERR_SYSTEM when getifaddrs fails; errors go into err as above. */
int fti_bind_if_resolve(const char *setting, char *host, size_t len, char *err, size_t errlen);

#endif
