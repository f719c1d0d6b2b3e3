/*
 * fuzz_ckpt.c - the checkpoint metadata parser (src/state/ckpt_format.c).
 *
 * The input is a checkpoint.meta text.  What parses must satisfy the
 * checks the parser promises (buffers covered by their shards, shards in
 * their files, valid names), and format back into a text that parses to
 * the same metadata.  Half the inputs get a correct "end" line added, so
 * that the fuzzer gets past the checksum.
 */
#include "fuzz_common.h"

#include "state/ckpt_format.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

static void check_meta(const fti_ckpt_meta_t *m)
{
    CHECK(m->group_size >= 1);
    for (size_t i = 0; i < m->n_bufs; i++) {
        const fti_ckpt_buf_t *b = &m->bufs[i];
        CHECK(fti_ckpt_name_ok(b->name));
        CHECK(fti_ckpt_meta_find(m, b->name) != NULL);
        int64_t at = 0;
        /* every byte count computed from the metadata fits (issue 23) */
        CHECK(b->elem > 0 && (uint64_t)b->global <= (uint64_t)INT64_MAX / b->elem);
        for (size_t s = 0; s < b->n_shards; s++) {
            const fti_ckpt_shard_t *sh = &b->shards[s];
            CHECK(sh->start == at && sh->end >= sh->start);
            CHECK(sh->rank >= 0 && sh->rank < m->group_size);
            CHECK((uint64_t)(sh->end - sh->start) * b->elem <= m->file_bytes[sh->rank]);
            at = sh->end;
        }
        CHECK(at == b->global);
    }
    (void)fti_ckpt_meta_bytes(m);
}

static void same(const fti_ckpt_meta_t *a, const fti_ckpt_meta_t *b)
{
    CHECK(a->step == b->step && a->group_size == b->group_size && a->n_bufs == b->n_bufs);
    CHECK(memcmp(a->file_bytes, b->file_bytes, sizeof(uint64_t) * (size_t)a->group_size) == 0);
    for (size_t i = 0; i < a->n_bufs; i++) {
        CHECK(strcmp(a->bufs[i].name, b->bufs[i].name) == 0);
        CHECK(a->bufs[i].n_shards == b->bufs[i].n_shards);
        CHECK(a->bufs[i].global == b->bufs[i].global && a->bufs[i].elem == b->bufs[i].elem);
    }
}

static void parse(const char *t, size_t n)
{
    fti_ckpt_meta_t m, m2;
    char err[256] = "";
    memset(&m, 0, sizeof(m));
    if (fti_ckpt_meta_parse(t, n, &m, err, sizeof(err)) != FT_SUCCESS) {
        CHECK(err[0] != '\0');
        return;
    }
    check_meta(&m);
    char *text = NULL;
    size_t len = 0;
    CHECK(fti_ckpt_meta_format(&m, &text, &len) == FT_SUCCESS);
    memset(&m2, 0, sizeof(m2));
    if (fti_ckpt_meta_parse(text, len, &m2, err, sizeof(err)) != FT_SUCCESS) {
        fprintf(stderr, "fuzz_ckpt: formatted metadata does not parse: %s\n%s", err, text);
        abort();
    }
    same(&m, &m2);
    fti_ckpt_meta_free(&m2);
    fti_ckpt_meta_free(&m);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fti_log_level = FTI_LOG_NONE;
    if (size < 1)
        return 0;
    const char *t = (const char *)data + 1;
    size_t n = size - 1;
    if (data[0] & 1) {
        parse(t, n);
        return 0;
    }
    /* the text and an end line with its right checksum */
    char *s = malloc(n + 64);
    CHECK(s != NULL);
    memcpy(s, t, n);
    size_t k = n + (size_t)snprintf(s + n, 64, "end %016llx\n",
                                    (unsigned long long)fti_checksum64(t, n, 0));
    parse(s, k);
    free(s);
    return 0;
}

void fuzz_generated(fuzz_emit_fn emit)
{
    static const char *texts[] = {
        "ftmpi-checkpoint 1\nstep 12\ngroup_size 2\nfile 0 48\nfile 1 32\n"
        "buffer w shard float 4 12\nshard 0 0 6 0 0\nshard 1 6 12 0 0\n"
        "buffer lr replicated double 8 3\nshard 0 0 3 24 0\n",
        "ftmpi-checkpoint 1\nstep 0\ngroup_size 1\nfile 0 0\n",
        "ftmpi-checkpoint 1\nstep 5\ngroup_size 1\nfile 0 8\nbuffer a.b:c+d-e_f replicated "
        "byte 1 8\nshard 0 0 8 0 ffffffffffffffff\n",
        "ftmpi-checkpoint 1\nstep 5\ngroup_size 1\nfile 0 8\nbuffer x shard int 4 4\n"
        "shard 0 0 1 0 0\nshard 0 2 4 4 0\n",
        "ftmpi-checkpoint 1\nstep 5\ngroup_size 3\nfile 0 9223372036854775807\n",
        "ftmpi-checkpoint 2\n",
        /* 2^61 + 1 elements of 8 bytes: 8 bytes once wrapped (issue 23) */
        "ftmpi-checkpoint 1\nstep 5\ngroup_size 1\nfile 0 8\nbuffer w shard double 8 "
        "2305843009213693953\nshard 0 0 2305843009213693953 0 0\n",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        fuzz_out_t o;
        o.n = 0;
        fo_u8(&o, 0);
        fo_bytes(&o, texts[i], strlen(texts[i]));
        emit(o.d, o.n);
        o.d[0] = 1;
        emit(o.d, o.n);
    }
}
