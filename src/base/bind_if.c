/* bind_if.c - FTMPI_BIND_HOST by interface name or subnet (see bind_if.h). */
#include "base/bind_if.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/util.h"

/* Room for one entry of the list ("if:" + an interface name, or a CIDR). */
#define BIND_ENTRY_SIZE 64
/* Interfaces read from getifaddrs at most (a node has a handful). */
#define BIND_MAX_IFS 256

bool fti_bind_is_selector(const char *setting)
{
    return strncmp(setting, "if:", 3) == 0 || strchr(setting, '/') != NULL;
}

/* One entry: by name (name set) or by subnet (net/mask). */
struct bind_sel {
    char name[BIND_ENTRY_SIZE];
    uint32_t net, mask;
};

/* Parses "if:NAME" or "A.B.C.D/N" (N 0..32) into *sel. */
static int sel_parse(const char *entry, struct bind_sel *sel)
{
    memset(sel, 0, sizeof(*sel));
    if (strncmp(entry, "if:", 3) == 0)
        return entry[3] != '\0' && fti_strlcpy(sel->name, entry + 3, sizeof(sel->name)) == 0
                   ? FT_SUCCESS
                   : FT_ERR_CONFIG;
    char ip[BIND_ENTRY_SIZE];
    const char *slash = strchr(entry, '/');
    if (slash == NULL || (size_t)(slash - entry) >= sizeof(ip))
        return FT_ERR_CONFIG;
    memcpy(ip, entry, (size_t)(slash - entry));
    ip[slash - entry] = '\0';
    struct in_addr a;
    int64_t bits = 0;
    if (inet_pton(AF_INET, ip, &a) != 1 ||
        fti_parse_int64(slash + 1, 0, 32, &bits, NULL, 0) != FT_SUCCESS)
        return FT_ERR_CONFIG;
    sel->mask = bits == 0 ? 0 : 0xFFFFFFFFu << (32 - bits);
    sel->net = ntohl(a.s_addr) & sel->mask;
    return FT_SUCCESS;
}

static bool sel_matches(const struct bind_sel *sel, const fti_ifaddr_t *ifa)
{
    if (!ifa->up)
        return false;
    if (sel->name[0] != '\0')
        return strcmp(sel->name, ifa->name) == 0;
    return (ifa->addr & sel->mask) == sel->net;
}

/* "lo 127.0.0.1 (up), eth0 10.0.0.1 (down), ..." into buf. */
static void ifs_describe(const fti_ifaddr_t *ifs, size_t n, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && off < len; i++) {
        struct in_addr a = {.s_addr = htonl(ifs[i].addr)};
        char ip[INET_ADDRSTRLEN] = "?";
        (void)inet_ntop(AF_INET, &a, ip, sizeof(ip));
        int w = snprintf(buf + off, len - off, "%s%s %s%s", i ? ", " : "", ifs[i].name, ip,
                         ifs[i].up ? "" : " (down)");
        if (w < 0)
            return;
        off += (size_t)w;
    }
    if (n == 0)
        (void)snprintf(buf, len, "none with an IPv4 address");
}

/* Index in ifs of the first match of entry, or -1; FT_ERR_CONFIG if malformed. */
static int entry_find(const char *entry, const fti_ifaddr_t *ifs, size_t n, long *idx_p)
{
    struct bind_sel sel;
    if (sel_parse(entry, &sel) != FT_SUCCESS)
        return FT_ERR_CONFIG;
    *idx_p = -1;
    for (size_t i = 0; i < n; i++)
        if (sel_matches(&sel, &ifs[i])) {
            *idx_p = (long)i;
            break;
        }
    return FT_SUCCESS;
}

int fti_bind_match(const char *setting, const fti_ifaddr_t *ifs, size_t n, char *host, size_t len,
                   char *err, size_t errlen)
{
    char desc[512];
    long found = -1;
    const char *p = setting;
    /* every entry is checked, also after the one that matches: a typo
     * fails on every node, not only on those where an earlier one misses */
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t el = comma ? (size_t)(comma - p) : strlen(p);
        char entry[BIND_ENTRY_SIZE] = "";
        long idx = -1;
        if (el > 0 && el < sizeof(entry))
            memcpy(entry, p, el);
        if (entry[0] == '\0' || entry_find(entry, ifs, n, &idx) != FT_SUCCESS) {
            (void)snprintf(err, errlen,
                           "FTMPI_BIND_HOST=%s: \"%.*s\" is neither if:NAME nor A.B.C.D/BITS "
                           "(a comma list of both, as Open MPI's btl_tcp_if_include)",
                           setting, (int)(el < BIND_ENTRY_SIZE ? el : BIND_ENTRY_SIZE), p);
            return FT_ERR_CONFIG;
        }
        if (found < 0)
            found = idx;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    if (found >= 0) {
        struct in_addr a = {.s_addr = htonl(ifs[found].addr)};
        char ip[INET_ADDRSTRLEN];
        if (inet_ntop(AF_INET, &a, ip, sizeof(ip)) == NULL)
            return FT_ERR_INTERNAL;
        return fti_strlcpy(host, ip, len) == FT_SUCCESS ? FT_SUCCESS : FT_ERR_ARG;
    }
    ifs_describe(ifs, n, desc, sizeof(desc));
    (void)snprintf(err, errlen,
                   "FTMPI_BIND_HOST=%s: no interface that is up with an IPv4 address matches "
                   "(this node's: %s)",
                   setting, desc);
    return FT_ERR_CONFIG;
}

int fti_bind_if_resolve(const char *setting, char *host, size_t len, char *err, size_t errlen)
{
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all) != 0) {
        (void)snprintf(err, errlen, "FTMPI_BIND_HOST=%s: getifaddrs: %s", setting,
                       strerror(errno));
        return FT_ERR_SYSTEM;
    }
    fti_ifaddr_t ifs[BIND_MAX_IFS];
    size_t n = 0;
    for (struct ifaddrs *i = all; i != NULL && n < BIND_MAX_IFS; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
            continue;
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)i->ifa_addr;
        ifs[n].name = i->ifa_name;
        ifs[n].addr = ntohl(sin->sin_addr.s_addr);
        ifs[n].up = (i->ifa_flags & IFF_UP) != 0;
        n++;
    }
    int rc = fti_bind_match(setting, ifs, n, host, len, err, errlen);
    freeifaddrs(all);
    return rc;
}
