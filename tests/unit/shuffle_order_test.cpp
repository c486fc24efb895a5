// The shuffle's order is tf.data's algorithm drawn from the documented Philox streams: for output
// element i of epoch e, slot = RandomStream(derive_key(seed, stage, e), i, e).uniform_int(0, live - 1)
// (e = 0 throughout with reshuffle_each_iteration = false). The stage computes the streams' first
// blocks eight at a time; this model draws every slot from a plain stream, one element at a time, so
// the two agree only if the batched blocks are the streams' own.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include <fmt/format.h>

#include "runtime/core/philox.h"
#include "runtime/exec/pipeline_run.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"

namespace pipec {
namespace {

using testing::ScratchDir;
namespace fs = std::filesystem;

// The order `range(n) | shuffle(buffer, seed) | repeat(epochs)` gives, by the algorithm above. The
// shuffle is stage #1 (the range source is #0).
std::vector<int64_t> model(int64_t n, int64_t buffer, uint64_t seed, int epochs, bool reshuffle) {
  std::vector<int64_t> out;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const uint64_t e = reshuffle ? static_cast<uint64_t>(epoch) : 0;
    const PhiloxKey key = RandomStream::derive_key(seed, 1, e);
    std::vector<int64_t> buf;
    int64_t next = 0;
    while (next < n && next < buffer) buf.push_back(next++);
    int64_t live = static_cast<int64_t>(buf.size());
    for (uint64_t i = 0; live > 0; ++i) {
      const auto slot = static_cast<size_t>(RandomStream(key, i, e).uniform_int(0, live - 1));
      out.push_back(buf[slot]);
      if (next < n) {
        buf[slot] = next++;
      } else {
        buf[slot] = buf[static_cast<size_t>(live - 1)];
        --live;
      }
    }
  }
  return out;
}

std::vector<int64_t> run(const fs::path& spec, int64_t chunk_rows) {
  std::vector<Plan> plans = testing::compiled_plans_of_file(spec.string());
  RunOptions o;
  o.threads = 2;
  o.spec_dir = spec.parent_path().string();
  o.chunk_rows = chunk_rows;
  PipelineRun r(plans.back(), o);
  std::vector<int64_t> ids;
  Chunk c;
  while (r.next(c)) {
    const Tensor& x = c.columns.at(0).dense;
    for (int64_t k = 0; k < x.num_elements(); ++k) ids.push_back(x.data<int64_t>()[k]);
  }
  return ids;
}

TEST(ShuffleOrder, IsTheAlgorithmDrawnFromPlainStreams) {
  ScratchDir d;
  std::mt19937 rng(77);
  for (int trial = 0; trial < 8; ++trial) {
    const int64_t n = std::uniform_int_distribution<int64_t>(1, 2500)(rng);
    const int64_t buffer = std::uniform_int_distribution<int64_t>(1, 1200)(rng);
    const int64_t chunk_rows = std::uniform_int_distribution<int64_t>(1, 500)(rng);
    const int64_t seed = std::uniform_int_distribution<int64_t>(0, 1 << 30)(rng);
    const bool reshuffle = trial % 3 != 2;
    const fs::path spec = d / fmt::format("s{}.pipe", trial);
    std::ofstream(spec) << fmt::format(
        "pipeline p = range({}) | shuffle({}, seed = {}, reshuffle_each_iteration = {}) "
        "| repeat(3) | batch(17)\n",
        n, buffer, seed, reshuffle ? "true" : "false");
    SCOPED_TRACE(
        fmt::format("n {} buffer {} chunk_rows {} seed {} reshuffle {}", n, buffer, chunk_rows, seed, reshuffle));
    EXPECT_EQ(run(spec, chunk_rows), model(n, buffer, static_cast<uint64_t>(seed), 3, reshuffle));
  }
}

}  // namespace
}  // namespace pipec
