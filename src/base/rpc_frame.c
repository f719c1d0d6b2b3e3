/* base/rpc_frame.c - the frame header of the framed RPC, both sides (see
 * base/rpc.h): network byte order, fixed FTI_RPC_HEADER_LEN bytes. */
#include "base/rpc.h"

#include <arpa/inet.h>
#include <string.h>

void fti_rpc_header_encode(const fti_rpc_header_t *h, uint8_t out[FTI_RPC_HEADER_LEN])
{
    uint32_t magic = htonl(h->magic), status = htonl((uint32_t)h->status),
             length = htonl(h->length);
    uint16_t flags = htons(h->flags), method = htons(h->method);
    memcpy(out, &magic, 4);
    memcpy(out + 4, &flags, 2);
    memcpy(out + 6, &method, 2);
    memcpy(out + 8, &status, 4);
    memcpy(out + 12, &length, 4);
}

void fti_rpc_header_decode(const uint8_t in[FTI_RPC_HEADER_LEN], fti_rpc_header_t *h)
{
    uint32_t magic, status, length;
    uint16_t flags, method;
    memcpy(&magic, in, 4);
    memcpy(&flags, in + 4, 2);
    memcpy(&method, in + 6, 2);
    memcpy(&status, in + 8, 4);
    memcpy(&length, in + 12, 4);
    h->magic = ntohl(magic);
    h->flags = ntohs(flags);
    h->method = ntohs(method);
    h->status = (int32_t)ntohl(status);
    h->length = ntohl(length);
}
