// ft_sgd_cpp.cpp - a small C++ user of libftmpi: the step protocol with
// std::vector buffers.  Each rank fits w to a fixed target; the gradient of
// a step is a deterministic function of (step, group rank), summed in the
// group (MPI_Allreduce on the group's communicator) and averaged across the
// replica groups (FT_Allreduce, FT_AVG), so every rank of every group holds
// the same w after every committed step, whichever groups take part.
//
//   ft_sgd_cpp [--steps N] [--features F] [--sleep-ms MS]
//
// Output: "initial loss ..." (group rank 0), "step N loss ..." every 10
// committed steps, and on every rank at the end
// "final replica=ID rank=R step=S checksum=0x..." (FNV-1a of w).
#include <ftmpi.h>
#include <mpi.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
    long steps = 100;
    long features = 256;
    long sleep_ms = 0;
};

bool parse(int argc, char **argv, Options &o)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        long v = std::strtol(argv[i + 1], nullptr, 10);
        if (a == "--steps" && v >= 0)
            o.steps = v;
        else if (a == "--features" && v >= 1)
            o.features = v;
        else if (a == "--sleep-ms" && v >= 0)
            o.sleep_ms = v;
        else
            return false;
    }
    return argc % 2 == 1;
}

uint64_t fnv1a64(const void *p, size_t n)
{
    const unsigned char *b = static_cast<const unsigned char *>(p);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

double target(long i) { return std::sin(0.01 * static_cast<double>(i)); }

double loss(const std::vector<float> &w)
{
    double s = 0;
    for (size_t i = 0; i < w.size(); i++) {
        double d = w[i] - target(static_cast<long>(i));
        s += d * d;
    }
    return s / static_cast<double>(w.size());
}

// One attempt at the current step; true when it committed.  *killed: the
// lighthouse killed this group (FT_ERR_KILLED): leave the loop.
bool step(std::vector<float> &w, std::vector<float> &grad, MPI_Comm group, int rank, bool *killed)
{
    int rc = FT_Quorum(0);
    *killed = rc == FT_ERR_KILLED;
    if (rc != FT_SUCCESS) {
        std::printf("step %" PRId64 " quorum failed: %s\n", FT_Step(), FT_Error_string(rc));
        return false;
    }
    int64_t s = FT_Step();
    for (size_t i = 0; i < w.size(); i++) // this rank's share of the gradient
        grad[i] = static_cast<float>((w[i] - target(static_cast<long>(i))) *
                                     (1.0 + 0.1 * std::cos(static_cast<double>(s + rank))));
    MPI_Allreduce(MPI_IN_PLACE, grad.data(), static_cast<int>(grad.size()), MPI_FLOAT, MPI_SUM,
                  group);
    rc = FT_Allreduce(MPI_IN_PLACE, grad.data(), static_cast<int>(grad.size()), MPI_FLOAT, FT_AVG,
                      FT_COMM_REPLICAS);
    int committed = 0;
    int crc = FT_Commit(&committed);
    if (rc != FT_SUCCESS || crc != FT_SUCCESS || !committed)
        return false;
    for (size_t i = 0; i < w.size(); i++)
        w[i] -= 0.05f * grad[i];
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    // stdout line-buffered in a buffer of its own (see ft_sgd.c): with a
    // null buffer, after MPICH's MPI_Init made stdout unbuffered, every
    // piece of a printf was a write of its own
    static char out_buf[BUFSIZ];
    std::setvbuf(stdout, out_buf, _IOLBF, sizeof(out_buf));
    Options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr, "usage: ft_sgd_cpp [--steps N] [--features F] [--sleep-ms MS]\n");
        MPI_Finalize();
        return 2;
    }
    int rc = FT_Init(&argc, &argv);
    MPI_Comm group = MPI_COMM_NULL;
    if (rc != FT_SUCCESS || ftmpi_group_comm(&group) != FT_SUCCESS) {
        std::fprintf(stderr, "ft_sgd_cpp: FT_Init failed: %s\n", FT_Error_string(rc));
        if (rc == FT_SUCCESS)
            FT_Finalize();
        MPI_Finalize();
        return 2;
    }
    int rank = 0;
    MPI_Comm_rank(group, &rank);
    char id[64]; // a replica id is 1 to 63 characters
    ftmpi_replica_id(id, sizeof(id));

    std::vector<float> w(static_cast<size_t>(o.features), 0.0f), grad(w.size());
    FT_State_register("w", w.data(), w.size() * sizeof(float));
    if (rank == 0)
        std::printf("initial loss %.6f replica %s\n", loss(w), id);
    long failures = 0;
    bool killed = false;
    while (FT_Step() < o.steps && failures < 1000 && !killed) {
        if (!step(w, grad, group, rank, &killed)) {
            failures++;
            continue;
        }
        if (rank == 0 && FT_Step() % 10 == 0)
            std::printf("step %" PRId64 " loss %.6f\n", FT_Step(), loss(w));
        if (o.sleep_ms > 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(o.sleep_ms));
    }
    std::printf("final replica=%s rank=%d step=%" PRId64 " checksum=0x%016" PRIx64 "\n", id, rank,
                FT_Step(), fnv1a64(w.data(), w.size() * sizeof(float)));
    FT_Finalize();
    MPI_Finalize();
    return killed ? 5 : FT_Step() >= o.steps ? 0 : 1;
}
