// The shuffle's two ways of moving rows give one order: a buffer whose fields all have rows of one
// fixed size (numbers, fixed-length bytes) copies them by raw pointers (produce_fixed), any other
// buffer (here: a byte string of varying length) through the general per-row code. The same records
// shuffled both ways, over several epochs (the buffer drains at each end) and with random buffer
// sizes, chunk sizes and seeds, must come out in the same order.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include <fmt/format.h>

#include "runtime/exec/pipeline_run.h"
#include "runtime/io/example_writer.h"
#include "runtime/io/tfrecord_writer.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"

namespace pipec {
namespace {

using testing::ScratchDir;
namespace fs = std::filesystem;

// Records {x: the id, d: 5 bytes from the id, name: a string of the id's varying length}.
void write_records(const fs::path& path, int64_t n) {
  TFRecordWriterOptions o;
  o.sync = false;
  TFRecordWriter w(path.string(), o);
  for (int64_t i = 0; i < n; ++i) {
    std::string d(5, '\0');
    for (size_t k = 0; k < d.size(); ++k) d[k] = static_cast<char>((i * 7 + static_cast<int64_t>(k)) & 0xff);
    std::string name = std::string(static_cast<size_t>(i % 11), 'n') + std::to_string(i);
    std::string_view dv = d, nv = name;
    ExampleWriter ex;
    ex.add_int64("x", std::span<const int64_t>(&i, 1));
    ex.add_bytes("d", std::span<const std::string_view>(&dv, 1));
    ex.add_bytes("name", std::span<const std::string_view>(&nv, 1));
    w.write(ex.serialize());
  }
  w.close();
}

// The ids in the order the spec's pipeline delivers them (field x is the first), checking that the
// row's other field (d or name) still belongs to its id.
std::vector<int64_t> ids_of(const fs::path& spec, int64_t chunk_rows, bool has_d) {
  std::vector<Plan> plans = testing::compiled_plans_of_file(spec.string());
  RunOptions o;
  o.threads = 2;
  o.spec_dir = spec.parent_path().string();
  o.chunk_rows = chunk_rows;
  PipelineRun run(plans.back(), o);
  std::vector<int64_t> ids;
  Chunk c;
  while (run.next(c)) {
    const Tensor& x = c.columns.at(0).dense;
    const Tensor& other = c.columns.at(1).dense;
    for (int64_t k = 0; k < x.num_elements(); ++k) {
      const int64_t i = x.data<int64_t>()[k];
      if (has_d) {
        EXPECT_EQ(other.data<uint8_t>()[k * 5 + 4], static_cast<uint8_t>((i * 7 + 4) & 0xff)) << "id " << i;
      } else {
        EXPECT_EQ(other.str(k), std::string(static_cast<size_t>(i % 11), 'n') + std::to_string(i)) << "id " << i;
      }
      ids.push_back(i);
    }
  }
  return ids;
}

TEST(ShuffleFixedRows, RawRowCopiesGiveTheOrderOfTheGeneralPath) {
  ScratchDir d;
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 6; ++trial) {
    const int64_t n = std::uniform_int_distribution<int64_t>(50, 3000)(rng);
    const int64_t buffer = std::uniform_int_distribution<int64_t>(1, 1500)(rng);
    const int64_t chunk_rows = std::uniform_int_distribution<int64_t>(1, 700)(rng);
    const int64_t seed = std::uniform_int_distribution<int64_t>(0, 1000)(rng);
    const fs::path data = d / fmt::format("r{}.tfrecord", trial);
    write_records(data, n);
    // The shuffle is stage #1 in both specs, so both draw from the same streams.
    auto spec = [&](const char* name, const char* fields) {
      fs::path p = d / fmt::format("{}{}.pipe", name, trial);
      std::ofstream(p) << fmt::format(
          "source s = tfrecord(\"{}\") {{\n  x: i64\n  {}\n}}\n"
          "pipeline p = s | shuffle({}, seed = {}) | repeat(3) | batch(13)\n",
          data.filename().string(), fields, buffer, seed);
      return p;
    };
    SCOPED_TRACE(fmt::format("n {} buffer {} chunk_rows {} seed {}", n, buffer, chunk_rows, seed));
    std::vector<int64_t> fixed = ids_of(spec("fixed", "d: bytes[5]"), chunk_rows, true);
    std::vector<int64_t> general = ids_of(spec("general", "name: bytes"), chunk_rows, false);
    ASSERT_EQ(fixed.size(), static_cast<size_t>(3 * n));
    EXPECT_EQ(fixed, general);
    // A shuffle, not the input order, and every epoch holds each record once.
    std::vector<int64_t> first(fixed.begin(), fixed.begin() + n);
    if (buffer > 1 && n > 2) {
      EXPECT_FALSE(std::is_sorted(first.begin(), first.end()));
    }
    std::sort(first.begin(), first.end());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(first[static_cast<size_t>(i)], i);
  }
}

}  // namespace
}  // namespace pipec
