// Data-parallel training across processes (ctest dist_mpi_data_parallel_np2 and _np4): under mpirun,
// each rank trains a DataParallelExecutor with one replica over the real libpipec_mpi.so on its share
// of every batch, and rank 0 trains the same steps with as many replicas on threads in one process. In
// pipec's rank order the two give the same weights bit for bit (the transport does not change a bit);
// with MPI's own all-reduce (--library), within 1e-5 of how far training moved them. The model has
// dropout, so the ranks' shares must key their masks by the global example index to agree. Prints one
// line per rank and exits non-zero on any mismatch.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/compile/compile.h"
#include "runtime/dist/mpi_communicator.h"
#include "runtime/dist/thread_communicator.h"
#include "runtime/train/parallel/data_parallel_executor.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/sum_batches.h"

namespace {

using namespace pipec;

const char* kSpec = R"(pipeline data = range(64) | map(r => { x = random_uniform([6], seed = 1) { x, y: [sum(x)] } })
  | batch(12, drop_remainder = true)
model net(x: f32[6]) -> f32[1] { x | dense(24) | relu | dropout(0.3) | dense(8) | tanh | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = adam(lr = 0.01), steps = 5 }
)";

constexpr int64_t kRows = 12;
constexpr int kSteps = 5;

// Step k's whole batch (every rank makes the same).
void batch(uint64_t k, Tensor& x, Tensor& y) { testing::sum_batch(kRows, k + 100, x, y); }

std::unique_ptr<StepExecutor> reference(const ModelGraph& g, uint64_t seed) {
  return std::make_unique<ReferenceExecutor<float>>(g, seed);
}

// Trains kSteps; `share` picks this process's rows of each batch ([begin, end)).
std::vector<float> train(DataParallelExecutor& ex, int64_t begin, int64_t end) {
  for (int k = 0; k < kSteps; ++k) {
    Tensor x, y;
    batch(static_cast<uint64_t>(k), x, y);
    const std::vector<Tensor> inputs = {x.rows_view(begin, end)};
    const Tensor target = y.rows_view(begin, end);
    ex.run(inputs, &target, static_cast<uint64_t>(k), OpCategory::Loss);
    ex.resume(static_cast<uint64_t>(k), OpCategory::Update);
  }
  return ex.buffers().params;
}

}  // namespace

int main(int argc, char** argv) {
  const bool library = argc > 1 && std::string(argv[1]) == "--library";
  std::string why;
  const PipecMpiApi* api = mpi_plugin(&why);
  if (!api) {
    std::fprintf(stderr, "mpi_data_parallel_check: %s\n", why.c_str());
    return 2;
  }
  CompileRequest request;
  request.path = "mpi_data_parallel_check.pipe";
  request.text = kSpec;
  request.target = CompileTarget::Train;
  CompileResult compiled = compile(request);
  if (!compiled.ok()) {
    std::fprintf(stderr, "mpi_data_parallel_check: the spec does not compile: %s\n", compiled.error.c_str());
    return 2;
  }
  const ModelGraph& g = compiled.trains.at(0).program.step;
  int failures = 0;
  try {
    CollectiveOptions o;
    o.timeout_seconds = 60;
    o.order = library ? ReductionOrder::Library : ReductionOrder::Ranks;
    std::vector<std::shared_ptr<Communicator>> mpi;
    mpi.push_back(make_mpi_communicator(*api, o));
    const int rank = mpi[0]->rank(), size = mpi[0]->size();
    if (kRows % size != 0) {
      std::fprintf(stderr, "mpi_data_parallel_check: %d ranks do not split %ld rows\n", size, (long)kRows);
      return 2;
    }
    // The process's share of each batch: rows [rank * kRows / size, (rank + 1) * kRows / size).
    const int64_t per = kRows / size;
    DataParallelExecutor ranks(g, 7, std::move(mpi), reference);
    const std::vector<float> got = train(ranks, rank * per, (rank + 1) * per);
    // Every rank holds the same weights; rank 0 checks them against replicas on threads.
    if (rank == 0) {
      DataParallelExecutor threads(g, 7, shared_communicators(make_thread_communicators(size)), reference);
      ReferenceExecutor<float> one(g, 7);
      const std::vector<float> start = one.buffers().params;
      const std::vector<float> want = train(threads, 0, kRows);
      double apart = 0, moved = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        apart += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
        moved += (static_cast<double>(want[i]) - start[i]) * (static_cast<double>(want[i]) - start[i]);
      }
      const double relative = std::sqrt(apart / moved);
      if (!library && std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0) {
        std::fprintf(stderr,
                     "FAIL: %d MPI ranks in rank order differ from %d replicas on threads (%.3g of the "
                     "movement apart)\n",
                     size, size, relative);
        ++failures;
      }
      if (library && relative > 1e-5) {
        std::fprintf(stderr, "FAIL: %d MPI ranks with MPI's all-reduce are %.3g of the movement from %d replicas\n",
                     size, relative, size);
        ++failures;
      }
      std::printf("mpi_data_parallel_check: %d ranks (%s order) against %d replicas on threads: %s (%.3g apart)\n",
                  size, library ? "MPI's" : "rank", size, failures ? "FAILED" : "ok", relative);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_data_parallel_check: %s\n", e.what());
    return 1;
  }
  return failures ? 1 : 0;
}
