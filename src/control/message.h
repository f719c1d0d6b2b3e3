/*
 * control/message.h - protobuf messages over the framed RPC of base/rpc.h:
 * pack a request and decode its reply, pack a reply, decode a payload
 * strictly.  base/rpc.h moves bytes and knows no protobuf; the messages
 * themselves are control/proto/ftmpi.proto's.  Threads: as base/rpc.h (a
 * client serialises its callers; replies on the server's loop thread).
 */
#ifndef FTI_CONTROL_MESSAGE_H
#define FTI_CONTROL_MESSAGE_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "base/rpc.h"

/* Packs msg and replies with it (fti_rpc_reply); an out-of-memory packing
 * answers FT_ERR_NO_MEMORY instead.  Ends the call either way. */
int fti_rpc_reply_msg(fti_rpc_call_h call, const ProtobufCMessage *msg);

/* Decodes a message of type desc from data[0..len): protobuf_c_message_unpack,
 * and a message is refused unless it encodes to bytes that decode again.
 * protobuf-c accepts two inputs it cannot encode back: an unknown field
 * numbered 0 (a tag written in more than one byte; re-encoded, a one-byte tag
 * 0 that no decoder takes; found by tests/fuzz/fuzz_client) and a string
 * holding a NUL byte that, cut there, ends inside a UTF-8 sequence.  The
 * lighthouse re-encodes what members send into every quorum reply, so one
 * such member would make every group's quorum undecodable.  NULL when
 * either fails; release the message with protobuf_c_message_free_unpacked
 * (or its type's free_unpacked). */
ProtobufCMessage *fti_rpc_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
                                 size_t len);

/* Protobuf convenience: packs req, unpacks the reply with rdesc.  Free
 * *resp_p with protobuf_c_message_free_unpacked(*resp_p, NULL). */
int fti_rpc_call_msg(fti_rpc_client_h client, uint16_t method, const ProtobufCMessage *req,
                     const ProtobufCMessageDescriptor *rdesc, int timeout_ms,
                     ProtobufCMessage **resp_p);

#endif
