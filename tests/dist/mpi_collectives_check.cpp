// The MPI communicator over the real libpipec_mpi.so, under mpirun (ctest dist_mpi_collectives_np2 and
// _np4): every rank regenerates every rank's random buffers from their seeds, so each can check the
// collectives' results by itself: the rank-order all_reduce bit for bit against the serial sum in rank
// order, MPI's own all_reduce within a relative 1e-6 of it, and the small collectives exactly. Prints
// one line per rank and exits non-zero on any mismatch.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/dist/mpi_communicator.h"

namespace {

std::vector<float> buffer_of(int rank, size_t n, uint32_t trial) {
  std::mt19937 rng(trial * 1000u + static_cast<uint32_t>(rank));
  std::uniform_real_distribution<float> d(-1e3f, 1e3f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace

int main() {
  using namespace pipec;
  std::string why;
  const PipecMpiApi* api = mpi_plugin(&why);
  if (!api) {
    std::fprintf(stderr, "mpi_collectives_check: %s\n", why.c_str());
    return 2;
  }
  int failures = 0;
  auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  };
  try {
    CollectiveOptions ranks_order;
    ranks_order.timeout_seconds = 60;
    auto c = make_mpi_communicator(*api, ranks_order);
    const int rank = c->rank(), size = c->size();
    const size_t sizes[] = {0, 1, 3, 1000, 262147, 6u << 20};  // up to 24 MB: a gradient bucket's size
    for (uint32_t trial = 0; trial < std::size(sizes); ++trial) {
      const size_t n = sizes[trial];
      std::vector<float> expected = buffer_of(0, n, trial);
      for (int r = 1; r < size; ++r) {
        const std::vector<float> other = buffer_of(r, n, trial);
        for (size_t i = 0; i < n; ++i) expected[i] += other[i];
      }
      std::vector<float> mine = buffer_of(rank, n, trial);
      c->all_reduce(mine.data(), n, "check bucket");
      if (n && std::memcmp(mine.data(), expected.data(), n * sizeof(float)) != 0)
        fail("rank-order all_reduce of " + std::to_string(n) + " floats differs from the serial sum");
    }
    // The small collectives.
    const double fact[2] = {static_cast<double>(rank), rank * 0.25};
    std::vector<double> all = c->all_gather(fact, 2, "facts");
    for (int r = 0; r < size; ++r)
      if (all[2 * r] != r || all[2 * r + 1] != r * 0.25) fail("all_gather");
    std::string text = broadcast_string(*c, rank == size - 1 ? std::string(100000, 'q') : "", size - 1, "text");
    if (text != std::string(100000, 'q')) fail("broadcast");
    std::vector<std::string> states = c->gather(std::string(static_cast<size_t>(rank) * 3, 'a'), 0, "states");
    if (rank == 0)
      for (int r = 0; r < size; ++r)
        if (states.at(r) != std::string(static_cast<size_t>(r) * 3, 'a')) fail("gather");
    // Rank r gets r * 7919 + 1 bytes from the last rank, whose own part is empty.
    auto part_of = [&](int r) {
      return r == size - 1 ? std::string() : std::string(static_cast<size_t>(r) * 7919 + 1, static_cast<char>('p' + r));
    };
    std::vector<std::string> parts;
    if (rank == size - 1)
      for (int r = 0; r < size; ++r) parts.push_back(part_of(r));
    if (c->scatter(parts, size - 1, "positions") != part_of(rank)) fail("scatter");
    c->barrier("end");
    std::printf("rank %d of %d: %s: rank-order all_reduce and small collectives %s\n", rank, size,
                c->description().c_str(), failures ? "FAILED" : "ok");
    c.reset();  // MPI_Finalize
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return failures ? 1 : 0;
}
