/*
 * fuzz_proto.c - every protobuf message of ftmpi.proto through protobuf-c,
 * and a quorum reply through what the library does with one.
 *
 * Input: byte 0 picks the message type (of the 25), byte 1 the group rank
 * and flags used for the results, the rest is the encoded message.
 * Checks: what decodes re-encodes to bytes that, when they decode, encode
 * to the same bytes (no field lost or invented).  A LighthouseQuorumResponse also
 * goes through the manager's broadcast decode (fti_quorum_unpack) and the
 * results every rank computes from it (fti_results_compute, the index, the
 * compact results, spares, mode B world ranks): each must either refuse
 * with an error code or give results within the quorum's bounds.
 */
#include "fuzz_common.h"

#include "ftmpi_errors.h"
#include "base/log.h"
#include "control/manager.h"
#include "control/proto/ftmpi.pb-c.h"
#include "control/results.h"
#include "base/rpc.h"
#include "control/message.h"

static const ProtobufCMessageDescriptor *const types[] = {
    &ftmpi__quorum_member__descriptor,
    &ftmpi__quorum__descriptor,
    &ftmpi__lighthouse_quorum_request__descriptor,
    &ftmpi__lighthouse_quorum_response__descriptor,
    &ftmpi__lighthouse_heartbeat_request__descriptor,
    &ftmpi__lighthouse_heartbeat_response__descriptor,
    &ftmpi__lighthouse_finalize_request__descriptor,
    &ftmpi__lighthouse_finalize_response__descriptor,
    &ftmpi__manager_quorum_result__descriptor,
    &ftmpi__kill_request__descriptor,
    &ftmpi__kill_response__descriptor,
    &ftmpi__checkpoint_metadata_request__descriptor,
    &ftmpi__checkpoint_metadata_response__descriptor,
    &ftmpi__store_set_request__descriptor,
    &ftmpi__store_set_response__descriptor,
    &ftmpi__store_get_request__descriptor,
    &ftmpi__store_get_response__descriptor,
    &ftmpi__store_add_request__descriptor,
    &ftmpi__store_add_response__descriptor,
    &ftmpi__store_delete_prefix_request__descriptor,
    &ftmpi__store_delete_prefix_response__descriptor,
    &ftmpi__heal_buffer__descriptor,
    &ftmpi__heal_metadata_request__descriptor,
    &ftmpi__heal_metadata_response__descriptor,
    &ftmpi__heal_fetch_request__descriptor,
};
#define N_TYPES (sizeof(types) / sizeof(types[0]))
#define T_QUORUM_RESPONSE 3

static void roundtrip(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t n)
{
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, n, p);
    if (m == NULL)
        return;
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *a = malloc(len + 1), *b = malloc(len + 1);
    CHECK(a != NULL && b != NULL);
    CHECK(protobuf_c_message_pack(m, a) == len);
    ProtobufCMessage *m2 = protobuf_c_message_unpack(desc, NULL, len, a);
    /* the library's decoder takes exactly what encodes back */
    ProtobufCMessage *lib = fti_rpc_unpack(desc, p, n);
    CHECK((lib != NULL) == (m2 != NULL));
    if (lib != NULL)
        protobuf_c_message_free_unpacked(lib, NULL);
    if (m2 == NULL) {
        /* protobuf-c keeps a decoded string as a C string: one holding a
         * NUL byte is cut there on encoding, which can cut a UTF-8
         * sequence that its decoder then refuses (corpus: regress-nul-in-
         * string).  fti_rpc_unpack refuses such a message (checked above). */
        protobuf_c_message_free_unpacked(m, NULL);
        free(a);
        free(b);
        return;
    }
    CHECK(protobuf_c_message_get_packed_size(m2) == len);
    CHECK(protobuf_c_message_pack(m2, b) == len);
    CHECK(memcmp(a, b, len) == 0);
    protobuf_c_message_free_unpacked(m2, NULL);
    protobuf_c_message_free_unpacked(m, NULL);
    free(a);
    free(b);
}

static void check_result(const Ftmpi__Quorum *q, const fti_quorum_result_t *r)
{
    CHECK(r->replica_world_size == (int)q->n_participants);
    CHECK(r->replica_rank >= 0 && r->replica_rank < r->replica_world_size);
    CHECK(r->max_world_size >= 1 && r->max_world_size <= r->replica_world_size);
    CHECK(r->max_replica_rank >= -1 && r->max_replica_rank < r->max_world_size);
    CHECK(r->n_recover_dst >= 0 && r->n_recover_dst <= r->replica_world_size);
    CHECK(memchr(r->store_address, 0, sizeof(r->store_address)) != NULL);
    CHECK(memchr(r->recover_src_manager_address, 0, sizeof(r->recover_src_manager_address)));
    CHECK(memchr(r->recover_src_replica_id, 0, sizeof(r->recover_src_replica_id)) != NULL);
    if (r->heal)
        CHECK(r->recover_src_replica_rank >= 0 &&
              r->recover_src_replica_rank < r->replica_world_size);
    else
        CHECK(r->recover_src_replica_rank == -1);
}

/* What a rank does with the group's broadcast. */
static void quorum_reply(const uint8_t *p, size_t n, uint8_t opt)
{
    Ftmpi__LighthouseQuorumResponse *resp = NULL;
    if (fti_quorum_unpack(p, n, &resp) != FT_SUCCESS)
        return;
    const Ftmpi__Quorum *q = resp->quorum;
    int group_rank = opt & 7;
    bool init_sync = (opt & 8) != 0;
    fti_quorum_result_t res, res2;

    for (size_t i = 0; i < resp->n_results; i++)
        if (fti_results_from_msg(resp->results[i], &res) == FT_SUCCESS) {
            CHECK(res.participants == res.replica_world_size);
            fti_results_apply_spares(&res, opt >> 4);
            CHECK(res.participants <= res.replica_world_size);
        }
    fti_results_index_h idx = NULL;
    int irc = fti_results_index_create(q, &idx);
    for (size_t i = 0; i < q->n_participants && i < 8; i++) {
        const char *id = q->participants[i] ? q->participants[i]->replica_id : NULL;
        if (id == NULL)
            continue;
        int rc = fti_results_compute(q, id, group_rank, init_sync, &res);
        if (rc == FT_SUCCESS) {
            check_result(q, &res);
            fti_results_apply_spares(&res, opt >> 4);
            CHECK(res.participants >= 0 && res.participants <= res.replica_world_size);
        }
        if (irc == FT_SUCCESS) {
            int rr = fti_results_index_find(idx, id);
            if (rr >= 0 && fti_results_compute_at(idx, rr, group_rank, init_sync, &res2) ==
                               FT_SUCCESS && rc == FT_SUCCESS)
                CHECK(res2.replica_rank == res.replica_rank && res2.heal == res.heal &&
                      res2.max_step == res.max_step);
        }
    }
    if (irc == FT_SUCCESS)
        fti_results_index_destroy(idx);
    if (q->n_participants > 0 && q->n_participants < 4096) {
        int *ranks = calloc(q->n_participants, sizeof(*ranks));
        CHECK(ranks != NULL);
        (void)fti_results_world_ranks(q, group_rank, ranks);
        free(ranks);
    }
    ftmpi__lighthouse_quorum_response__free_unpacked(resp, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fti_log_level = FTI_LOG_NONE;
    if (size < 2)
        return 0;
    size_t t = data[0] % N_TYPES;
    roundtrip(types[t], data + 2, size - 2);
    if (t == T_QUORUM_RESPONSE)
        quorum_reply(data + 2, size - 2, data[1]);
    return 0;
}

/* ---- generated cases: one valid message of every type --------------------- */

static void emit_msg(fuzz_emit_fn emit, size_t t, uint8_t opt, const ProtobufCMessage *m)
{
    static uint8_t buf[1 << 16];
    size_t len = protobuf_c_message_get_packed_size(m);
    CHECK(len + 2 <= sizeof(buf));
    buf[0] = (uint8_t)t;
    buf[1] = opt;
    protobuf_c_message_pack(m, buf + 2);
    emit(buf, len + 2);
}

static void gen_quorum(fuzz_emit_fn emit, Ftmpi__QuorumMember *mem, size_t n)
{
    Ftmpi__QuorumMember *pm[4];
    Ftmpi__Quorum q = FTMPI__QUORUM__INIT;
    for (size_t i = 0; i < n; i++)
        pm[i] = &mem[i];
    q.quorum_id = 42;
    q.n_participants = n;
    q.participants = pm;
    q.created_ms = 1700000000000;
    emit_msg(emit, 1, 0, &q.base);

    Ftmpi__LighthouseQuorumResponse r = FTMPI__LIGHTHOUSE_QUORUM_RESPONSE__INIT;
    r.quorum = &q;
    for (uint8_t opt = 0; opt < 4; opt++)
        emit_msg(emit, T_QUORUM_RESPONSE, (uint8_t)(opt | (opt << 3) | (opt << 4)), &r.base);

    /* compact: results computed as the lighthouse does */
    Ftmpi__ManagerQuorumResult mr[2], *pmr[2];
    int64_t dst[2][8];
    fti_quorum_result_t res[2]; /* mr[g] points into res[g]'s strings */
    for (int g = 0; g < 2; g++) {
        ftmpi__manager_quorum_result__init(&mr[g]);
        CHECK(fti_results_compute(&q, mem[0].replica_id, g, false, &res[g]) == FT_SUCCESS);
        fti_results_to_msg(&res[g], dst[g], &mr[g]);
        pmr[g] = &mr[g];
    }
    emit_msg(emit, 8, 0, &mr[0].base);
    Ftmpi__Quorum cq = FTMPI__QUORUM__INIT;
    cq.quorum_id = 42;
    r.quorum = &cq;
    r.n_results = 2;
    r.results = pmr;
    emit_msg(emit, T_QUORUM_RESPONSE, 0x21, &r.base);
}

static void gen_lighthouse(fuzz_emit_fn emit)
{
    static char *ids[] = {"g0", "g1", "g2"};
    static char *addrs[] = {"127.0.0.1:4000", "127.0.0.1:4001", "127.0.0.1:4002"};
    Ftmpi__QuorumMember mem[3];
    for (int i = 0; i < 3; i++) {
        ftmpi__quorum_member__init(&mem[i]);
        mem[i].replica_id = ids[i];
        mem[i].address = addrs[i];
        mem[i].store_address = addrs[i];
        mem[i].step = i == 1 ? 7 : 9;
        mem[i].world_size = 2;
        mem[i].data.data = (uint8_t *)"4";
        mem[i].data.len = 1;
        mem[i].incarnation = 1234 + (uint64_t)i;
    }
    emit_msg(emit, 0, 0, &mem[0].base);
    gen_quorum(emit, mem, 3);

    Ftmpi__LighthouseQuorumRequest qr = FTMPI__LIGHTHOUSE_QUORUM_REQUEST__INIT;
    qr.requester = &mem[1];
    qr.compact = true;
    qr.max_quorum_id = 41;
    emit_msg(emit, 2, 0, &qr.base);
    Ftmpi__LighthouseHeartbeatRequest hb = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
    hb.replica_id = ids[0];
    hb.incarnation = 99;
    hb.heals = 3;
    emit_msg(emit, 4, 0, &hb.base);
    Ftmpi__LighthouseFinalizeRequest fr = FTMPI__LIGHTHOUSE_FINALIZE_REQUEST__INIT;
    fr.replica_id = ids[2];
    emit_msg(emit, 6, 0, &fr.base);
}

static void gen_rest(fuzz_emit_fn emit)
{
    Ftmpi__KillRequest k = FTMPI__KILL_REQUEST__INIT;
    k.msg = "stop";
    emit_msg(emit, 9, 0, &k.base);
    Ftmpi__CheckpointMetadataRequest cr = FTMPI__CHECKPOINT_METADATA_REQUEST__INIT;
    cr.group_rank = 3;
    emit_msg(emit, 11, 0, &cr.base);
    Ftmpi__CheckpointMetadataResponse cp = FTMPI__CHECKPOINT_METADATA_RESPONSE__INIT;
    cp.heal_address = "127.0.0.1:5000";
    emit_msg(emit, 12, 0, &cp.base);
    Ftmpi__StoreSetRequest ss = FTMPI__STORE_SET_REQUEST__INIT;
    ss.key = "slice/1/addr";
    ss.value.data = (uint8_t *)"127.0.0.1:6000";
    ss.value.len = 14;
    emit_msg(emit, 13, 0, &ss.base);
    Ftmpi__StoreGetRequest sg = FTMPI__STORE_GET_REQUEST__INIT;
    sg.key = "slice/1/addr";
    sg.timeout_ms = 100;
    emit_msg(emit, 15, 0, &sg.base);
    Ftmpi__StoreGetResponse sgr = FTMPI__STORE_GET_RESPONSE__INIT;
    sgr.value = ss.value;
    emit_msg(emit, 16, 0, &sgr.base);
    Ftmpi__StoreAddRequest sa = FTMPI__STORE_ADD_REQUEST__INIT;
    sa.key = "counter";
    sa.delta = -5;
    emit_msg(emit, 17, 0, &sa.base);
    Ftmpi__StoreAddResponse sar = FTMPI__STORE_ADD_RESPONSE__INIT;
    sar.value = 12;
    emit_msg(emit, 18, 0, &sar.base);
    Ftmpi__StoreDeletePrefixRequest sd = FTMPI__STORE_DELETE_PREFIX_REQUEST__INIT;
    sd.prefix = "slice/";
    emit_msg(emit, 19, 0, &sd.base);
    Ftmpi__HealBuffer hb[2], *phb[2] = {&hb[0], &hb[1]};
    ftmpi__heal_buffer__init(&hb[0]);
    ftmpi__heal_buffer__init(&hb[1]);
    hb[0].name = "weights";
    hb[0].length = 4096;
    hb[0].checksum = 0x1234567890abcdefULL;
    hb[1].name = "opt";
    hb[1].length = 16;
    emit_msg(emit, 21, 0, &hb[0].base);
    Ftmpi__HealMetadataRequest hm = FTMPI__HEAL_METADATA_REQUEST__INIT;
    hm.step = 9;
    emit_msg(emit, 22, 0, &hm.base);
    Ftmpi__HealMetadataResponse hmr = FTMPI__HEAL_METADATA_RESPONSE__INIT;
    hmr.step = 9;
    hmr.n_buffers = 2;
    hmr.buffers = phb;
    emit_msg(emit, 23, 0, &hmr.base);
    Ftmpi__HealFetchRequest hf = FTMPI__HEAL_FETCH_REQUEST__INIT;
    hf.step = 9;
    hf.name = "weights";
    hf.offset = 1024;
    hf.length = 2048;
    emit_msg(emit, 24, 0, &hf.base);
}

void fuzz_generated(fuzz_emit_fn emit)
{
    gen_lighthouse(emit);
    gen_rest(emit);
    /* broken encodings of a quorum reply */
    emit((const uint8_t *)"\x03\x00\x0a\xff\xff\xff\xff\x0f", 8);
    emit((const uint8_t *)"\x03\x00\x0a\x02\x12\x00", 6);
    emit((const uint8_t *)"\x03\x07\x0a\x04\x12\x02\x0a\x00", 8);
}
