// shim_check_cxx.cpp - an unmodified C++ MPI program (no FT_ call, the MPI
// C API from C++) for the drop-in's S1 test: MPI_Allreduce on
// MPI_COMM_WORLD and on a duplicate of it, of every datatype and op the
// shim protects, in place and with separate buffers (std::vector), counts
// 0, 1, odd and 1 Mi; every result checked against the value computed
// locally.  Prints "cxx ok: N checks on R ranks" on world rank 0 and exits
// 0, or names the first wrong result and exits 1.  Built by
// tests/shim/test_shim_s1.sh with mpic++ when there is one.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

int rank = 0, size = 1, checks = 0, bad = 0;

// Element i of rank r: small integers, so float sums are exact.
long val(int r, long i, MPI_Op op)
{
    if (op == MPI_PROD)
        return (r + i) % 3 == 0 ? 2 : 1;
    return static_cast<long>(r + 1) * (i % 5 + 1) - (i % 3 == 0 ? 4 : 0);
}

template <typename T> T expect(long i, MPI_Op op)
{
    T acc = static_cast<T>(val(0, i, op));
    for (int r = 1; r < size; r++) {
        T v = static_cast<T>(val(r, i, op));
        if (op == MPI_SUM)
            acc += v;
        else if (op == MPI_PROD)
            acc *= v;
        else if (op == MPI_MAX)
            acc = v > acc ? v : acc;
        else
            acc = v < acc ? v : acc;
    }
    return acc;
}

template <typename T> void check(MPI_Datatype dt, const char *name, MPI_Comm comm, long n,
                                 MPI_Op op, bool in_place)
{
    std::vector<T> s(static_cast<size_t>(n) + 1), r(static_cast<size_t>(n) + 1, T(-7));
    for (long i = 0; i < n; i++)
        s[i] = static_cast<T>(val(rank, i, op));
    if (in_place)
        r = s;
    int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : s.data(), r.data(), static_cast<int>(n), dt,
                           op, comm);
    checks++;
    for (long i = 0; i < n && !bad; i++) {
        if (rc != MPI_SUCCESS || r[i] != expect<T>(i, op)) {
            std::fprintf(stderr,
                         "shim_check_cxx: rank %d: %s count %ld %s: element %ld is %g, expected "
                         "%g (rc %d)\n",
                         rank, name, n, in_place ? "in place" : "separate", i,
                         static_cast<double>(r[i]), static_cast<double>(expect<T>(i, op)), rc);
            bad = 1;
        }
    }
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long counts[] = {0, 1, 7, 1001, 1L << 20};
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (MPI_Comm comm : {MPI_COMM_WORLD, dup})
        for (long count : counts)
            for (MPI_Op op : ops)
                for (bool ip : {false, true}) {
                    long n = op == MPI_PROD && count > 1001 ? 1001 : count;
                    check<float>(MPI_FLOAT, "float", comm, n, op, ip);
                    check<double>(MPI_DOUBLE, "double", comm, n, op, ip);
                    check<int>(MPI_INT, "int", comm, n, op, ip);
                    check<long>(MPI_LONG, "long", comm, n, op, ip);
                    check<std::int32_t>(MPI_INT32_T, "int32_t", comm, n, op, ip);
                    check<std::int64_t>(MPI_INT64_T, "int64_t", comm, n, op, ip);
                    if (op == MPI_SUM || op == MPI_PROD) // they wrap alike
                        check<std::uint64_t>(MPI_UINT64_T, "uint64_t", comm, n, op, ip);
                }
    MPI_Comm_free(&dup);
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !all)
        std::printf("cxx ok: %d checks on %d ranks\n", checks, size);
    MPI_Finalize();
    return all ? 1 : 0;
}
