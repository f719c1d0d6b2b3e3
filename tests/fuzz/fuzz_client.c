/*
 * fuzz_client.c - the reply decoders: what the library does with the bytes
 * a server sends back.  A fake server on 127.0.0.1 answers each call with
 * the next piece of the input; the real clients call it:
 *   0  lighthouse quorum (src/control/lighthouse_client.c), then the
 *      manager's broadcast round trip (fti_quorum_unpack)
 *   1  lighthouse heartbeat      2  lighthouse finalize
 *   3  store get   4  store add   5  store set   6  store delete prefix
 *      (src/control/store.c)
 *   7  a heal (src/heal/serve.c fti_heal_fetch): the fake server hands out its
 *      own heal address, then the pieces are the metadata reply, the
 *      chunk replies and the checksum reply; the healer's registered
 *      buffer must be either untouched or hold exactly what was sent and
 *      checked
 * A piece whose first byte has bit 7 set is an error reply (status from
 * the low bits); otherwise the bytes after the first are the payload.
 * Every call must end with a result code, never hang, crash or leak.
 */
#include "fuzz_common.h"
#include "control/message.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <signal.h>

#include "ftmpi_errors.h"
#include "heal/heal.h"
#include "control/lighthouse_client.h"
#include "base/log.h"
#include "control/manager.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/rpc.h"
#include "base/sizes.h"
#include "control/store.h"
#include "base/util.h"

#define BUF_LEN 64

static struct {
    struct event_base *base;
    fti_rpc_server_h srv;
    pthread_t loop;
    char addr[FTI_ADDRESS_SIZE];
    pthread_mutex_t mu;
    fuzz_in_t in; /* the pieces left */
    fti_lighthouse_client_h lhc;
    fti_rpc_client_h c;
    fti_heal_h heal;
    uint8_t buf[BUF_LEN];
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void answer(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    (void)p;
    (void)len;
    (void)arg;
    if (fti_rpc_call_method(call) == FTMPI__METHOD__MANAGER_CHECKPOINT_METADATA) {
        Ftmpi__CheckpointMetadataResponse r = FTMPI__CHECKPOINT_METADATA_RESPONSE__INIT;
        r.heal_address = S.addr;
        fti_rpc_reply_msg(call, &r.base);
        return;
    }
    pthread_mutex_lock(&S.mu);
    size_t n = 0;
    const uint8_t *d = S.in.pos < S.in.n ? fz_piece(&S.in, &n) : NULL;
    pthread_mutex_unlock(&S.mu);
    if (d == NULL || n == 0)
        fti_rpc_reply_error(call, FT_ERR_PROC_FAILED, "no more replies");
    else if (d[0] & 0x80)
        fti_rpc_reply_error(call, -(int)(d[0] & 0x3f), "fuzzed error");
    else
        fti_rpc_reply(call, d + 1, n - 1);
}

static const fti_rpc_method_t methods[] = {
    {FTMPI__METHOD__LIGHTHOUSE_QUORUM, answer},  {FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT, answer},
    {FTMPI__METHOD__LIGHTHOUSE_FINALIZE, answer}, {FTMPI__METHOD__MANAGER_CHECKPOINT_METADATA, answer},
    {FTMPI__METHOD__STORE_SET, answer},          {FTMPI__METHOD__STORE_GET, answer},
    {FTMPI__METHOD__STORE_ADD, answer},          {FTMPI__METHOD__STORE_DELETE_PREFIX, answer},
    {FTMPI__METHOD__HEAL_METADATA, answer},      {FTMPI__METHOD__HEAL_FETCH, answer},
};

static void *loop_main(void *arg)
{
    (void)arg;
    event_base_loop(S.base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

static void start(void)
{
    if (S.base)
        return;
    signal(SIGPIPE, SIG_IGN);
    fti_log_level = FTI_LOG_NONE;
    CHECK(evthread_use_pthreads() == 0);
    S.base = event_base_new();
    CHECK(S.base != NULL);
    CHECK(fti_rpc_server_create(S.base, "127.0.0.1:0", 1 << 16, NULL, methods,
                                sizeof(methods) / sizeof(methods[0]), NULL, &S.srv) == FT_SUCCESS);
    fti_strlcpy(S.addr, fti_rpc_server_address(S.srv), sizeof(S.addr));
    CHECK(pthread_create(&S.loop, NULL, loop_main, NULL) == 0);
    CHECK(fti_lighthouse_client_create(S.addr, NULL, 2000, &S.lhc) == FT_SUCCESS);
    CHECK(fti_rpc_client_create(S.addr, NULL, 2000, 1 << 16, &S.c) == FT_SUCCESS);
    CHECK(fti_heal_create(&S.heal) == FT_SUCCESS);
    CHECK(fti_heal_register(S.heal, "w", S.buf, sizeof(S.buf)) == FT_SUCCESS);
}

static void quorum(void)
{
    Ftmpi__QuorumMember me = FTMPI__QUORUM_MEMBER__INIT;
    Ftmpi__LighthouseQuorumResponse *resp = NULL, *again = NULL;
    me.replica_id = "g1";
    me.address = S.addr;
    me.step = 4;
    me.world_size = 2;
    if (fti_lighthouse_quorum_resp(S.lhc, &me, true, false, 2000, &resp) != FT_SUCCESS)
        return;
    CHECK(resp->quorum != NULL);
    size_t len = ftmpi__lighthouse_quorum_response__get_packed_size(resp);
    uint8_t *b = malloc(len + 1);
    CHECK(b != NULL);
    ftmpi__lighthouse_quorum_response__pack(resp, b);
    CHECK(fti_quorum_unpack(b, len, &again) == FT_SUCCESS);
    CHECK(again->quorum->quorum_id == resp->quorum->quorum_id);
    ftmpi__lighthouse_quorum_response__free_unpacked(again, NULL);
    ftmpi__lighthouse_quorum_response__free_unpacked(resp, NULL);
    free(b);
}

static void heal(void)
{
    uint8_t before[BUF_LEN];
    fti_heal_opts_t o = {2000, 1 << 16, 16, false, NULL, NULL};
    fti_heal_stats_t st;
    for (size_t i = 0; i < BUF_LEN; i++)
        S.buf[i] = (uint8_t)i;
    memcpy(before, S.buf, BUF_LEN);
    fti_heal_set_step(S.heal, 3, false);
    int rc = fti_heal_fetch(S.heal, S.addr, 0, 9, &o, fti_now_ms() + 3000, &st);
    if (rc != FT_SUCCESS)
        CHECK(memcmp(before, S.buf, BUF_LEN) == 0); /* a failed heal changes nothing */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    start();
    pthread_mutex_lock(&S.mu);
    S.in = (fuzz_in_t){data, size, 1};
    pthread_mutex_unlock(&S.mu);
    void *val = NULL;
    size_t vlen = 0;
    int64_t v = 0;
    switch (data[0] % 8) {
    case 0: quorum(); break;
    case 1: (void)fti_lighthouse_heartbeat(S.lhc, "g1", 2000); break;
    case 2: (void)fti_lighthouse_finalize(S.lhc, "g1", 2000); break;
    case 3:
        if (fti_store_get(S.c, "k", 0, &val, &vlen) == FT_SUCCESS)
            free(val);
        break;
    case 4: (void)fti_store_add(S.c, "k", 3, 2000, &v); break;
    case 5: (void)fti_store_set(S.c, "k", "v", 1, 2000); break;
    case 6: (void)fti_store_delete_prefix(S.c, "k", 2000, &v); break;
    default: heal(); break;
    }
    pthread_mutex_lock(&S.mu);
    S.in = (fuzz_in_t){NULL, 0, 0};
    pthread_mutex_unlock(&S.mu);
    return 0;
}

/* ---- generated cases -------------------------------------------------------- */

static void reply_msg(fuzz_out_t *o, const ProtobufCMessage *m)
{
    uint8_t b[4096];
    size_t len = protobuf_c_message_get_packed_size(m);
    CHECK(len + 1 <= sizeof(b));
    b[0] = 0;
    protobuf_c_message_pack(m, b + 1);
    fo_piece(o, b, len + 1);
}

void fuzz_generated(fuzz_emit_fn emit)
{
    fuzz_out_t o;
    Ftmpi__QuorumMember m = FTMPI__QUORUM_MEMBER__INIT, *pm = &m;
    m.replica_id = "g1";
    m.step = 4;
    Ftmpi__Quorum q = FTMPI__QUORUM__INIT;
    q.quorum_id = 7;
    q.n_participants = 1;
    q.participants = &pm;
    Ftmpi__LighthouseQuorumResponse r = FTMPI__LIGHTHOUSE_QUORUM_RESPONSE__INIT;
    r.quorum = &q;
    o.n = 0;
    fo_u8(&o, 0);
    reply_msg(&o, &r.base);
    emit(o.d, o.n);
    o.n = 0; /* a reply without a quorum */
    fo_u8(&o, 0);
    fo_piece(&o, "\x00", 1);
    emit(o.d, o.n);
    for (uint8_t k = 1; k < 7; k++) {
        o.n = 0; /* an empty (valid) reply, an error, garbage */
        fo_u8(&o, k);
        fo_piece(&o, "\x00", 1);
        emit(o.d, o.n);
        o.n = 0;
        fo_u8(&o, k);
        fo_piece(&o, "\x98", 1);
        emit(o.d, o.n);
        o.n = 0;
        fo_u8(&o, k);
        fo_piece(&o, "\x00\x0a\xff", 3);
        emit(o.d, o.n);
    }
    Ftmpi__StoreGetResponse g = FTMPI__STORE_GET_RESPONSE__INIT;
    g.value.data = (uint8_t *)"value";
    g.value.len = 5;
    o.n = 0;
    fo_u8(&o, 3);
    reply_msg(&o, &g.base);
    emit(o.d, o.n);
    Ftmpi__StoreAddResponse a = FTMPI__STORE_ADD_RESPONSE__INIT;
    a.value = 8;
    o.n = 0;
    fo_u8(&o, 4);
    reply_msg(&o, &a.base);
    emit(o.d, o.n);

    /* a heal: metadata, 4 chunks of 16 bytes, the checksums */
    uint8_t data[BUF_LEN];
    for (size_t i = 0; i < BUF_LEN; i++)
        data[i] = (uint8_t)(255 - i);
    Ftmpi__HealBuffer hb = FTMPI__HEAL_BUFFER__INIT, *phb = &hb;
    hb.name = "w";
    hb.length = BUF_LEN;
    hb.checksum = fti_heal_sum(data, BUF_LEN, 0);
    Ftmpi__HealMetadataResponse md = FTMPI__HEAL_METADATA_RESPONSE__INIT;
    md.step = 9;
    md.n_buffers = 1;
    md.buffers = &phb;
    for (int deferred = 0; deferred < 2; deferred++) {
        o.n = 0;
        fo_u8(&o, 7);
        md.sums_deferred = deferred;
        uint64_t sum = hb.checksum;
        if (deferred)
            hb.checksum = 0;
        reply_msg(&o, &md.base);
        for (int c = 0; c < 4; c++) {
            uint8_t piece[17];
            piece[0] = 0;
            memcpy(piece + 1, data + 16 * c, 16);
            fo_piece(&o, piece, 17);
        }
        hb.checksum = sum;
        md.sums_deferred = false;
        reply_msg(&o, &md.base);
        emit(o.d, o.n);
    }
    o.n = 0; /* a metadata reply of another step, of another buffer */
    fo_u8(&o, 7);
    md.step = 8;
    reply_msg(&o, &md.base);
    emit(o.d, o.n);
    o.n = 0;
    fo_u8(&o, 7);
    md.step = 9;
    hb.name = "x";
    reply_msg(&o, &md.base);
    emit(o.d, o.n);
}
