// shim_trainer_cxx.cpp - the data-parallel trainer of shim_trainer.c in C++
// with plain MPI (the C API; no FT_ call): least-squares regression by SGD,
// each rank its own shard, the gradient averaged with MPI_Allreduce on
// MPI_COMM_WORLD.  Under the drop-in it survives a rank's death:
//
//   mpic++ -o shim_trainer_cxx shim_trainer_cxx.cpp
//   mpirun --enable-recovery -np 4 -x LD_PRELOAD=libftmpi_pmpi.so
//       -x FTMPI_SHIM_ON_FAILURE=continue -x FTMPI_SHIM_RESCALE=1 ./shim_trainer_cxx
//   (one command line)
//
// Environment (optional): SHIM_TRAINER_STEPS (default 200),
// SHIM_TRAINER_SLEEP_MS per step (default 0).  Prints "initial loss L" and
// per rank "final rank=R steps=S loss=L checksum=C"; exits 1 when the loss
// did not go down.
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

constexpr int kDim = 16;
constexpr int kSamples = 256;

struct Shard {
    std::vector<double> x, y;
};

Shard make_shard(int rank)
{
    std::mt19937_64 truth_rng(12345);
    std::uniform_real_distribution<double> u(-0.5, 0.5);
    std::vector<double> truth(kDim);
    for (double &t : truth)
        t = 4 * u(truth_rng);
    std::mt19937_64 rng(777 + static_cast<unsigned>(rank));
    Shard s{std::vector<double>(kSamples * kDim), std::vector<double>(kSamples)};
    for (int i = 0; i < kSamples; i++)
        for (int d = 0; d < kDim; d++) {
            s.x[i * kDim + d] = u(rng);
            s.y[i] += truth[d] * s.x[i * kDim + d];
        }
    return s;
}

// Mean squared error of w on the shard; its gradient into g when given.
double loss(const Shard &s, const std::vector<double> &w, std::vector<double> *g)
{
    double l = 0;
    if (g)
        g->assign(kDim, 0.0);
    for (int i = 0; i < kSamples; i++) {
        double e = -s.y[i];
        for (int d = 0; d < kDim; d++)
            e += w[d] * s.x[i * kDim + d];
        l += e * e / kSamples;
        for (int d = 0; g && d < kDim; d++)
            (*g)[d] += 2 * e * s.x[i * kDim + d] / kSamples;
    }
    return l;
}

int env_int(const char *name, int dflt)
{
    const char *v = std::getenv(name);
    return v ? std::atoi(v) : dflt;
}

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int steps = env_int("SHIM_TRAINER_STEPS", 200);
    const int sleep_ms = env_int("SHIM_TRAINER_SLEEP_MS", 0);
    const Shard shard = make_shard(rank);
    std::vector<double> w(kDim, 0.0), g(kDim);
    double l0 = loss(shard, w, nullptr);
    MPI_Allreduce(MPI_IN_PLACE, &l0, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    l0 /= size;
    if (rank == 0)
        std::printf("initial loss %.6f\n", l0);
    std::fflush(stdout);
    int s = 0;
    for (; s < steps; s++) {
        loss(shard, w, &g);
        MPI_Allreduce(MPI_IN_PLACE, g.data(), kDim, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int d = 0; d < kDim; d++)
            w[d] -= 0.1 * g[d] / size; // the average over the world
        if (sleep_ms > 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    }
    double l = loss(shard, w, nullptr);
    MPI_Allreduce(MPI_IN_PLACE, &l, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    l /= size;
    std::uint64_t sum = 0;
    for (double v : w) {
        std::uint64_t b;
        std::memcpy(&b, &v, sizeof(b));
        sum = sum * 31 + b;
    }
    std::printf("final rank=%d steps=%d loss=%.6f checksum=%016llx\n", rank, s, l,
                static_cast<unsigned long long>(sum));
    MPI_Finalize();
    return l < l0 ? 0 : 1;
}
