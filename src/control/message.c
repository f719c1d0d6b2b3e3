/* control/message.c - protobuf messages over the framed RPC of base/rpc.h
 * (see control/message.h). */
#include "control/message.h"

#include <stdlib.h>

#include "ftmpi_errors.h"
#include "base/log.h"

/* Replies and requests packed up to these sizes are built on the stack. */
#define MSG_STACK_REPLY 512
#define MSG_STACK_REQUEST 1024

int fti_rpc_reply_msg(fti_rpc_call_h call, const ProtobufCMessage *msg)
{
    size_t len = protobuf_c_message_get_packed_size(msg);
    uint8_t stackbuf[MSG_STACK_REPLY], *buf = len <= sizeof(stackbuf) ? stackbuf : malloc(len);
    if (buf == NULL) {
        FTI_ERROR("rpc: out of memory packing a %zu-byte reply", len);
        return fti_rpc_reply_error(call, FT_ERR_NO_MEMORY, "out of memory");
    }
    protobuf_c_message_pack(msg, buf);
    int rc = fti_rpc_reply(call, buf, len);
    if (buf != stackbuf)
        free(buf);
    return rc;
}

/* Whether m encodes to bytes that decode again (see fti_rpc_unpack). */
static bool msg_encodable(const ProtobufCMessage *m)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t stackbuf[MSG_STACK_REQUEST], *buf = len <= sizeof(stackbuf) ? stackbuf : malloc(len);
    if (buf == NULL)
        return false;
    protobuf_c_message_pack(m, buf);
    ProtobufCMessage *again = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
    if (buf != stackbuf)
        free(buf);
    if (again == NULL)
        return false;
    protobuf_c_message_free_unpacked(again, NULL);
    return true;
}

ProtobufCMessage *fti_rpc_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
                                 size_t len)
{
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, len, data);
    if (m != NULL && !msg_encodable(m)) {
        protobuf_c_message_free_unpacked(m, NULL);
        return NULL;
    }
    return m;
}

int fti_rpc_call_msg(fti_rpc_client_h c, uint16_t method, const ProtobufCMessage *req,
                     const ProtobufCMessageDescriptor *rdesc, int timeout_ms,
                     ProtobufCMessage **resp_p)
{
    size_t len = protobuf_c_message_get_packed_size(req);
    uint8_t stackbuf[MSG_STACK_REQUEST], *buf = len <= sizeof(stackbuf) ? stackbuf : malloc(len);
    void *reply = NULL;
    size_t rlen = 0;

    if (buf == NULL)
        return FT_ERR_NO_MEMORY;
    protobuf_c_message_pack(req, buf);
    int rc = fti_rpc_call(c, method, buf, len, timeout_ms, &reply, &rlen);
    if (buf != stackbuf)
        free(buf);
    if (rc != FT_SUCCESS)
        return rc;
    ProtobufCMessage *m = fti_rpc_unpack(rdesc, reply, rlen);
    free(reply);
    if (m == NULL) {
        FTI_WARN("rpc %s method %u: reply does not decode as %s", fti_rpc_client_address(c),
                 method, rdesc->name);
        return FT_ERR_BAD_MESSAGE;
    }
    *resp_p = m;
    return FT_SUCCESS;
}
