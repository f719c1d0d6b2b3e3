/* base/rpc_int.h - what the two sides of the framed RPC share, internal to
 * the server (base/rpc_reply.c) and base/rpc_client.c. */
#ifndef FTI_BASE_RPC_INT_H
#define FTI_BASE_RPC_INT_H

/* Error replies carry a message of at most this many bytes (the server
 * cuts longer ones, the client refuses them). */
#define RPC_MAX_ERROR_MSG 4096

#endif
