/* stub_nccl.c - a stub libnccl.so.2, no GPU needed.
 *
 * Built plain: says it is NCCL 2.18.0 and has only the calls 2.18 had that
 * libftmpi links (tests/unit/test_nccl_symbols.sh): no ncclCommShrink, no
 * ncclCommRevoke.  Every call but the version fails.
 *
 * Built with -DSTUB_NCCL_SHRINK: says it is NCCL 2.28.3 (shrink, no
 * revoke), every call succeeds at once on fake communicators, and
 * ncclCommShrink answers an empty exclude list with ncclInvalidArgument,
 * as the real 2.28.3 does (init.cc: "-> 4"), and otherwise stores a new
 * fake communicator.  It counts its shrink calls in stub_nccl_shrinks and
 * keeps the last list's length in stub_nccl_last_count
 * (tests/unit/test_nccl_shrink.sh). */
#include <stddef.h>

typedef int ncclResult_t;
enum { ok = 0, unhandled = 1, invalid_argument = 4 };
ncclResult_t ncclGetVersion(int *v);
const char *ncclGetErrorString(int r);
const char *ncclGetLastError(void *c);

const char *ncclGetErrorString(int r)
{
    return r == invalid_argument ? "invalid argument (stub)" : "stub";
}
const char *ncclGetLastError(void *c)
{
    (void)c;
    return "stub";
}

#ifndef STUB_NCCL_SHRINK
ncclResult_t ncclGetVersion(int *v)
{
    *v = 21800;
    return ok;
}
#define FAIL(name) \
    ncclResult_t name(void); \
    ncclResult_t name(void) { return unhandled; }
FAIL(ncclGetUniqueId)
FAIL(ncclCommInitRankConfig)
FAIL(ncclCommGetAsyncError)
FAIL(ncclAllReduce)
FAIL(ncclCommAbort)
FAIL(ncclCommFinalize)
FAIL(ncclCommDestroy)
#else
typedef struct {
    char internal[128];
} stub_id;
typedef void *stub_comm;

int stub_nccl_shrinks;        /* ncclCommShrink calls */
int stub_nccl_last_count = -1; /* excludeRanksCount of the last one */
static char comms[64];        /* fake communicators: addresses in here */
static int n_comms;

static stub_comm comm_new(void)
{
    return &comms[n_comms++ % (int)sizeof(comms)];
}

ncclResult_t ncclGetVersion(int *v)
{
    *v = 22803;
    return ok;
}
ncclResult_t ncclGetUniqueId(stub_id *id);
ncclResult_t ncclGetUniqueId(stub_id *id)
{
    for (size_t i = 0; i < sizeof(id->internal); i++)
        id->internal[i] = (char)i;
    return ok;
}
ncclResult_t ncclCommInitRankConfig(stub_comm *comm, int nranks, stub_id id, int rank, void *cfg);
ncclResult_t ncclCommInitRankConfig(stub_comm *comm, int nranks, stub_id id, int rank, void *cfg)
{
    (void)id;
    (void)cfg;
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return invalid_argument;
    *comm = comm_new();
    return ok;
}
ncclResult_t ncclCommGetAsyncError(stub_comm comm, ncclResult_t *st);
ncclResult_t ncclCommGetAsyncError(stub_comm comm, ncclResult_t *st)
{
    if (comm == NULL)
        return invalid_argument;
    *st = ok;
    return ok;
}
ncclResult_t ncclCommShrink(stub_comm comm, int *exclude, int count, stub_comm *newcomm,
                            void *cfg, int flags);
ncclResult_t ncclCommShrink(stub_comm comm, int *exclude, int count, stub_comm *newcomm,
                            void *cfg, int flags)
{
    (void)cfg;
    (void)flags;
    stub_nccl_shrinks++;
    stub_nccl_last_count = count;
    if (comm == NULL || newcomm == NULL || count < 1 || exclude == NULL)
        return invalid_argument; /* NCCL 2.28.3: an empty exclude list is refused */
    *newcomm = comm_new();
    return ok;
}
#define OK(name) \
    ncclResult_t name(void); \
    ncclResult_t name(void) { return ok; }
OK(ncclAllReduce)
OK(ncclCommAbort)
OK(ncclCommFinalize)
OK(ncclCommDestroy)
#endif
