/* stub_nccl.c - a libnccl.so.2 that says it is NCCL 2.18.0 and has only
 * the calls 2.18 had that libftmpi links (tests/unit/test_nccl_symbols.sh):
 * no ncclCommShrink, no ncclCommRevoke.  Every call but the version fails. */
typedef int ncclResult_t;
enum { ok = 0, unhandled = 1 };
ncclResult_t ncclGetVersion(int *v);
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
const char *ncclGetErrorString(int r);
const char *ncclGetErrorString(int r)
{
    (void)r;
    return "stub";
}
const char *ncclGetLastError(void *c);
const char *ncclGetLastError(void *c)
{
    (void)c;
    return "stub";
}
