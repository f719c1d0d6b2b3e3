/*
 * fuzz_servers.c - every request decoder of the control plane, behind its
 * real server: a lighthouse (LIGHTHOUSE_QUORUM, _HEARTBEAT, _FINALIZE;
 * lighthouse/server.c) and a manager's rank server (MANAGER_KILL,
 * _CHECKPOINT_METADATA; src/control/rank_server.c) with its store
 * (STORE_SET, _GET, _ADD, _DELETE_PREFIX: keys and values;
 * src/control/store.c) and the heal server of a real heal object with a
 * registered buffer (HEAL_METADATA, HEAL_FETCH; src/heal/serve.c).
 *
 * Input: a sequence of calls, each a byte that picks the method and a
 * piece (2-byte length, bytes) that is its payload, sent with the real
 * RPC client.  After the input both servers must still serve a
 * well-formed client: a heartbeat, a store set and get of a fresh key
 * (the value must come back), a heal fetch of the registered bytes.
 */
#include "fuzz_lh.h"

#include "heal/heal.h"
#include "control/proto/ftmpi.pb-c.h"
#include "control/rank_server.h"
#include "base/rpc.h"
#include "control/store.h"
#include "control/message.h"

#define CALL_MS 100

static struct {
    fti_rank_server_h rs;
    fti_heal_h heal;
    fti_rpc_client_h lhc, rsc;
    uint8_t buf[4096];
    long n;
} R;

static const uint16_t methods[] = {
    FTMPI__METHOD__LIGHTHOUSE_QUORUM,       FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT,
    FTMPI__METHOD__LIGHTHOUSE_FINALIZE,     FTMPI__METHOD__MANAGER_KILL,
    FTMPI__METHOD__MANAGER_CHECKPOINT_METADATA, FTMPI__METHOD__STORE_SET,
    FTMPI__METHOD__STORE_GET,               FTMPI__METHOD__STORE_ADD,
    FTMPI__METHOD__STORE_DELETE_PREFIX,     FTMPI__METHOD__HEAL_METADATA,
    FTMPI__METHOD__HEAL_FETCH,              999,
};
#define N_METHODS (sizeof(methods) / sizeof(methods[0]))

static void start(void)
{
    if (R.rs)
        return;
    lh_start(NULL);
    CHECK(fti_heal_create(&R.heal) == FT_SUCCESS);
    for (size_t i = 0; i < sizeof(R.buf); i++)
        R.buf[i] = (uint8_t)(i * 7 + 3);
    CHECK(fti_heal_register(R.heal, "w", R.buf, sizeof(R.buf)) == FT_SUCCESS);
    fti_heal_set_step(R.heal, 9, true);
    CHECK(fti_rank_server_start("127.0.0.1", 1 << 16, NULL, true, fti_heal_rpc, R.heal, &R.rs) ==
          FT_SUCCESS);
    const char *peers[2] = {fti_rank_server_address(R.rs), "127.0.0.1:1"};
    CHECK(fti_rank_server_set_peers(R.rs, peers, 2) == FT_SUCCESS);
}

static fti_rpc_client_h client(bool lighthouse)
{
    fti_rpc_client_h *c = lighthouse ? &R.lhc : &R.rsc;
    if (*c == NULL)
        CHECK(fti_rpc_client_create(lighthouse ? fti_lighthouse_address(LH.lh)
                                               : fti_rank_server_address(R.rs),
                                    NULL, 2000, 1 << 20, c) == FT_SUCCESS);
    return *c;
}

static void call(uint16_t method, const uint8_t *p, size_t len)
{
    bool lh = method <= FTMPI__METHOD__LIGHTHOUSE_FINALIZE;
    void *rep = NULL;
    size_t rlen = 0;
    int rc = fti_rpc_call(client(lh), method, p, len, CALL_MS, &rep, &rlen);
    if (rc == FT_SUCCESS)
        free(rep);
}

/* The servers still serve a well-behaved client. */
static void still_serving(void)
{
    char key[48];
    snprintf(key, sizeof(key), "fuzz/check/%ld", R.n++);
    Ftmpi__LighthouseHeartbeatRequest hb = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
    hb.replica_id = "fuzz-check";
    ProtobufCMessage *resp = NULL;
    CHECK(fti_rpc_call_msg(client(true), FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT, &hb.base,
                           &ftmpi__lighthouse_heartbeat_response__descriptor, 5000,
                           &resp) == FT_SUCCESS);
    protobuf_c_message_free_unpacked(resp, NULL);
    void *val = NULL;
    size_t vlen = 0;
    CHECK(fti_store_set(client(false), key, "v1", 2, 5000) == FT_SUCCESS);
    CHECK(fti_store_get(client(false), key, 0, &val, &vlen) == FT_SUCCESS);
    CHECK(vlen == 2 && memcmp(val, "v1", 2) == 0);
    free(val);
    int64_t deleted = 0;
    CHECK(fti_store_delete_prefix(client(false), key, 5000, &deleted) == FT_SUCCESS);
    CHECK(deleted >= 1);
    fti_heal_set_step(R.heal, 9, true);
    Ftmpi__HealFetchRequest hf = FTMPI__HEAL_FETCH_REQUEST__INIT;
    hf.step = 9;
    hf.name = "w";
    hf.offset = 100;
    hf.length = 50;
    uint8_t packed[64];
    size_t plen = ftmpi__heal_fetch_request__pack(&hf, packed);
    void *rep = NULL;
    size_t rlen = 0;
    CHECK(fti_rpc_call(client(false), FTMPI__METHOD__HEAL_FETCH, packed, plen, 5000, &rep,
                       &rlen) == FT_SUCCESS);
    CHECK(rlen == 50 && memcmp(rep, R.buf + 100, 50) == 0);
    free(rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size, 0};
    start();
    for (int k = 0; k < 16 && in.pos < in.n; k++) {
        uint16_t m = methods[fz_u8(&in) % N_METHODS];
        size_t len;
        const uint8_t *p = fz_piece(&in, &len);
        call(m, p, len);
    }
    still_serving();
    return 0;
}

/* ---- generated cases -------------------------------------------------------- */

static void op(fuzz_out_t *o, size_t idx, const ProtobufCMessage *m)
{
    uint8_t b[4096];
    size_t len = protobuf_c_message_get_packed_size(m);
    CHECK(len <= sizeof(b));
    protobuf_c_message_pack(m, b);
    fo_u8(o, (uint8_t)idx);
    fo_piece(o, b, len);
}

void fuzz_generated(fuzz_emit_fn emit)
{
    fuzz_out_t o;
    Ftmpi__QuorumMember me = FTMPI__QUORUM_MEMBER__INIT;
    me.replica_id = "g1";
    me.address = "127.0.0.1:1";
    me.store_address = "127.0.0.1:1";
    me.step = 3;
    me.world_size = 1;
    Ftmpi__LighthouseQuorumRequest qr = FTMPI__LIGHTHOUSE_QUORUM_REQUEST__INIT;
    qr.requester = &me;
    Ftmpi__LighthouseHeartbeatRequest hb = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
    hb.replica_id = "g1";
    Ftmpi__LighthouseFinalizeRequest fr = FTMPI__LIGHTHOUSE_FINALIZE_REQUEST__INIT;
    fr.replica_id = "g1";
    Ftmpi__KillRequest kr = FTMPI__KILL_REQUEST__INIT;
    kr.msg = "fuzz";
    Ftmpi__CheckpointMetadataRequest cr = FTMPI__CHECKPOINT_METADATA_REQUEST__INIT;
    cr.group_rank = 1;
    Ftmpi__StoreSetRequest ss = FTMPI__STORE_SET_REQUEST__INIT;
    ss.key = "a/b";
    ss.value.data = (uint8_t *)"12";
    ss.value.len = 2;
    Ftmpi__StoreGetRequest sg = FTMPI__STORE_GET_REQUEST__INIT;
    sg.key = "a/b";
    Ftmpi__StoreAddRequest sa = FTMPI__STORE_ADD_REQUEST__INIT;
    sa.key = "a/b";
    sa.delta = 5;
    Ftmpi__StoreDeletePrefixRequest sd = FTMPI__STORE_DELETE_PREFIX_REQUEST__INIT;
    sd.prefix = "a/";
    Ftmpi__HealMetadataRequest hm = FTMPI__HEAL_METADATA_REQUEST__INIT;
    hm.step = 9;
    Ftmpi__HealFetchRequest hf = FTMPI__HEAL_FETCH_REQUEST__INIT;
    hf.step = 9;
    hf.name = "w";
    hf.length = 4096;

    o.n = 0; /* a group's life */
    op(&o, 0, &qr.base);
    op(&o, 1, &hb.base);
    op(&o, 2, &fr.base);
    emit(o.d, o.n);
    o.n = 0; /* the manager and the store */
    op(&o, 4, &cr.base);
    op(&o, 5, &ss.base);
    op(&o, 7, &sa.base);
    op(&o, 6, &sg.base);
    op(&o, 8, &sd.base);
    op(&o, 3, &kr.base);
    emit(o.d, o.n);
    o.n = 0; /* healing */
    op(&o, 9, &hm.base);
    op(&o, 10, &hf.base);
    hf.sums = true;
    op(&o, 10, &hf.base);
    hf.sums = false;
    hf.offset = 4000;
    hf.length = 200; /* past the end */
    op(&o, 10, &hf.base);
    hf.name = "nope";
    op(&o, 10, &hf.base);
    emit(o.d, o.n);
    o.n = 0; /* odd keys: empty, long, binary; a counter over a non-number */
    ss.key = "";
    op(&o, 5, &ss.base);
    char longkey[600];
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    ss.key = longkey;
    op(&o, 5, &ss.base);
    ss.key = "n";
    ss.value.data = (uint8_t *)"x9";
    op(&o, 5, &ss.base);
    sa.key = "n";
    sa.delta = INT64_MAX;
    op(&o, 7, &sa.base);
    op(&o, 7, &sa.base);
    sd.prefix = "";
    op(&o, 8, &sd.base);
    emit(o.d, o.n);
    o.n = 0; /* undecodable payloads to every method */
    for (uint8_t i = 0; i < N_METHODS; i++) {
        fo_u8(&o, i);
        fo_piece(&o, "\x0a\xff\x01", 3);
    }
    emit(o.d, o.n);
}
