// The optimizer's promise: a pipeline produces bit for bit the same elements at -O0 (the lowered plan)
// and optimized, including random ops, final short batches, epochs, filters and ragged fields. Each
// case also checks that the rewrite it is about really happened, so the comparison is not vacuous.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>

#include "compiler/passes/pass_pipeline.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/io/example_writer.h"
#include "runtime/io/npy.h"
#include "runtime/io/tfrecord_writer.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::ops_of;
using testing::plan_of;
using testing::ScratchDir;

// Every output element, field by field, as its own tensor.
std::vector<std::vector<Tensor>> run_all(const Plan& plan, const fs::path& dir, int threads, uint64_t seed) {
  RunOptions o;
  o.seed = seed;
  o.threads = threads;
  o.spec_dir = dir.string();
  PipelineRun run(plan, o);
  std::vector<std::vector<Tensor>> out;
  Chunk c;
  while (run.next(c)) {
    for (int64_t r = 0; r < c.rows; ++r) {
      std::vector<Tensor> row;
      for (const Column& col : c.columns) row.push_back(column_row(col, r));
      out.push_back(std::move(row));
    }
    if (out.size() > 100000) break;
  }
  return out;
}

// Runs `pipeline p` of `spec` at -O0 and optimized (with 1 and 3 threads) and compares every element.
// Returns the optimized plan's stage ops so the caller can check which rewrites happened.
std::string expect_same_output(const fs::path& dir, const std::string& spec, std::string* plan_text = nullptr) {
  Plan reference = plan_of(spec);
  Plan optimized = reference;
  run_passes(optimized, PassOptions{});
  auto want = run_all(reference, dir, 1, 11);
  EXPECT_FALSE(want.empty());
  for (int threads : {1, 3}) {
    auto got = run_all(optimized, dir, threads, 11);
    EXPECT_EQ(got.size(), want.size()) << print_plan(optimized);
    std::string first_difference;
    for (size_t e = 0; e < std::min(got.size(), want.size()) && first_difference.empty(); ++e) {
      if (got[e].size() != want[e].size()) first_difference = fmt::format("element {} has another field count", e);
      for (size_t f = 0; f < want[e].size() && first_difference.empty(); ++f)
        if (!got[e][f].equals(want[e][f])) first_difference = fmt::format("element {} field {} differs", e, f);
    }
    EXPECT_EQ(first_difference, "") << "threads " << threads << "\n" << print_plan(optimized);
  }
  if (plan_text) *plan_text = print_plan(optimized);
  return ops_of(optimized);
}

void write_records(const fs::path& path, int n) {
  TFRecordWriter w(path.string(), TFRecordWriterOptions{});
  for (int i = 0; i < n; ++i) {
    ExampleWriter ex;
    std::vector<int64_t> ids(static_cast<size_t>(i % 4), i);
    std::string name = "r" + std::to_string(i);
    std::string d = {static_cast<char>(i), static_cast<char>(i * 7), static_cast<char>(255 - i),
                     static_cast<char>(i * 3)};
    std::string_view nv = name, dv = d;
    ex.add_int64("a", {static_cast<int64_t>(i)});
    ex.add_float("b", {i * 0.5f, -1.0f * i, 3.25f});
    ex.add_int64("ids", std::span<const int64_t>(ids.data(), ids.size()));
    ex.add_bytes("name", std::span<const std::string_view>(&nv, 1));
    ex.add_bytes("d", std::span<const std::string_view>(&dv, 1));
    w.write(ex.serialize());
  }
  w.close();
}

TEST(PassEquivalence, VectorizedRandomMapWithShortBatchesAcrossEpochs) {
  ScratchDir d;
  std::string ops =
      expect_same_output(d.path(),
                         "pipeline p = range(103)\n"
                         "  | map(r => { x: f32(r.value) * 0.5 + random_uniform([3]), k: random_int([], 0, 1000) })\n"
                         "  | batch(8)\n"
                         "  | repeat(3)\n");
  EXPECT_EQ(ops, "range batch map repeat prefetch");
}

TEST(PassEquivalence, ShuffledDroppedRemainderAndMapAfterBatch) {
  ScratchDir d;
  std::string ops = expect_same_output(d.path(),
                                       "pipeline p = range(57)\n"
                                       "  | shuffle(16, seed = 3)\n"
                                       "  | map(r => { v: r.value, n: random_normal([2], seed = 5) })\n"
                                       "  | map(r => { v: r.v * 2, n: r.n })\n"
                                       "  | batch(5, drop_remainder = true)\n"
                                       "  | map(b => { s: sum(b.n) + random_uniform([]), v: b.v })\n"
                                       "  | repeat(2)\n");
  EXPECT_EQ(ops, "range shuffle batch map map repeat prefetch");
}

TEST(PassEquivalence, StagesBeforeAShuffleKeepTheirPlaces) {
  ScratchDir d;
  std::string ops = expect_same_output(d.path(),
                                       "pipeline p = range(40) | repeat(1)\n"
                                       "  | map(r => { v: r.value }) | map(r => { v: r.v + 1 })\n"
                                       "  | shuffle(8, seed = 2) | batch(3) | repeat(2)\n");
  EXPECT_EQ(ops, "range repeat map map shuffle batch repeat prefetch");
}

TEST(PassEquivalence, MapsFusedWithTheFiltersAfterThem) {
  ScratchDir d;
  std::string ops = expect_same_output(d.path(),
                                       "pipeline p = range(200)\n"
                                       "  | map(r => { v: r.value, u: random_uniform([]) })\n"
                                       "  | filter(r => r.u > 0.3)\n"
                                       "  | map(r => { v: r.v, w: random_uniform([2]) })\n"
                                       "  | filter(r => random_uniform([], seed = 2) > 0.5)\n"
                                       "  | batch(6)\n");
  EXPECT_EQ(ops, "range map_filter map_filter batch prefetch");
}

TEST(PassEquivalence, ShuffleFusedWithItsRepeatAndMapFusedWithItsBatch) {
  ScratchDir d;
  // The map cannot move after the batch (a batch spans two epochs), so it fuses with it instead.
  std::string ops = expect_same_output(d.path(),
                                       "pipeline p = range(37)\n"
                                       "  | shuffle(10, seed = 4)\n"
                                       "  | repeat(3)\n"
                                       "  | map(r => { v: r.value * 2, u: random_uniform([2]) + f32(r.value) })\n"
                                       "  | batch(4)\n");
  EXPECT_EQ(ops, "range shuffle_repeat map_batch prefetch");
  ops = expect_same_output(d.path(),
                           "pipeline p = range(23)\n"
                           "  | shuffle(50, seed = 1, reshuffle_each_iteration = false)\n"
                           "  | repeat()\n"
                           "  | map(r => { v: r.value, n: random_normal([], seed = 3) })\n"
                           "  | batch(6, drop_remainder = true)\n"
                           "  | take(20)\n");
  EXPECT_EQ(ops, "range shuffle_repeat map_batch take prefetch");
  // The last, short batch is dropped or kept as the batch would.
  ops = expect_same_output(d.path(),
                           "pipeline p = range(11) | repeat(2) | map(r => { v: f64(r.value) / 3.0 + "
                           "f64(random_uniform([])) }) | batch(5)\n");
  EXPECT_EQ(ops, "range repeat map_batch prefetch");
  ops = expect_same_output(d.path(),
                           "pipeline p = range(11) | repeat(2) | map(r => { v: r.value, u: random_uniform([]) }) | "
                           "batch(5, drop_remainder = true)\n");
  EXPECT_EQ(ops, "range repeat map_batch prefetch");
  // Rows of 1.2 MB: each chunk is cut into one task per batch (the other cases put many batches in a task).
  ops = expect_same_output(
      d.path(),
      "pipeline p = range(13) | repeat(2) | map(r => { big: random_uniform([512, 600]) + f32(r.value) }) | batch(3)\n");
  EXPECT_EQ(ops, "range repeat map_batch prefetch");
}

// tf.data's usual order, shuffle | repeat | map | batch, with a map that draws nothing: the map moves
// after the batch although batches span epochs (nothing it computes depends on the epoch).
TEST(PassEquivalence, MapWithoutRandomOpsVectorizedAfterARepeat) {
  ScratchDir d;
  std::string ops = expect_same_output(d.path(),
                                       "pipeline p = range(37) | shuffle(8, seed = 2) | repeat(3)\n"
                                       "  | map(r => { v: r.value * 3, w: f32(r.value) / 7.0 }) | batch(5)\n");
  EXPECT_EQ(ops, "range shuffle_repeat batch map prefetch");
  ops = expect_same_output(
      d.path(),
      "pipeline p = range(13) | repeat(2) | map(r => { v: r.value - 4 }) | batch(4, drop_remainder = true)\n");
  EXPECT_EQ(ops, "range repeat batch map prefetch");
}

// A checkpoint taken inside the fused stages (a shuffle buffer part-way through its second epoch,
// batches half filled) resumes into exactly the rest of the unfused run's stream.
TEST(PassEquivalence, FusedStagesResumeFromACheckpoint) {
  ScratchDir d;
  const std::string spec =
      "pipeline p = range(29) | shuffle(7, seed = 2) | repeat(3)\n"
      "  | map(r => { v: r.value, u: random_uniform([]) }) | batch(4)\n";
  Plan reference = plan_of(spec);
  Plan optimized = reference;
  run_passes(optimized, PassOptions{});
  ASSERT_EQ(ops_of(optimized), "range shuffle_repeat map_batch prefetch");
  auto want = run_all(reference, d.path(), 1, 5);
  ASSERT_EQ(want.size(), 22u);  // ceil(87 / 4)
  for (int threads : {1, 3}) {
    for (size_t stop : {1u, 9u, 15u}) {
      RunOptions o;
      o.seed = 5;
      o.threads = threads;
      o.spec_dir = d.path().string();
      std::string state;
      {
        PipelineRun first(optimized, o);
        Chunk c;
        for (size_t k = 0; k < stop; ++k) ASSERT_TRUE(first.next(c));
        state = first.save_state();
      }
      PipelineRun resumed(optimized, o);
      resumed.restore_state(state, "test");
      Chunk c;
      size_t e = stop;
      while (resumed.next(c)) {
        for (int64_t r = 0; r < c.rows; ++r, ++e) {
          ASSERT_LT(e, want.size());
          for (size_t f = 0; f < want[e].size(); ++f)
            EXPECT_TRUE(column_row(c.columns[f], r).equals(want[e][f]))
                << "threads " << threads << " stop " << stop << " element " << e;
        }
      }
      EXPECT_EQ(e, want.size()) << "threads " << threads << " stop " << stop;
    }
  }
}

TEST(PassEquivalence, TFRecordProjectionRaggedAndFixedBytes) {
  ScratchDir d;
  write_records(d / "x.tfrecord", 41);
  const std::string source =
      "source s = tfrecord(\"x.tfrecord\") { a: i64\n b: f32[3]\n ids: i64[?]\n name: bytes\n d: bytes[4] }\n";
  // Only b and d are read: the ragged ids no longer keep the map before the batch.
  std::string ops = expect_same_output(
      d.path(),
      source +
          "pipeline p = s | map(r => { x: r.b * 2.0 + random_uniform([3]), d: f32(r.d) }) | batch(4) | repeat(2)\n");
  EXPECT_EQ(ops, "tfrecord batch map repeat prefetch");
  Plan p = plan_of(source + "pipeline p = s | map(r => { x: r.b * 2.0, d: f32(r.d) }) | batch(4)\n");
  run_passes(p, PassOptions{});
  EXPECT_EQ(p.stages[0].schema.size(), 2u);
  // A ragged result must be padded: the map stays before the batch.
  ops = expect_same_output(
      d.path(), source + "pipeline p = s | map(r => { ids: r.ids * 2, a: r.a }) | padded_batch(3) | repeat(2)\n");
  EXPECT_EQ(ops, "tfrecord map padded_batch repeat prefetch");
  // Every field reaches the output: nothing may be pruned.
  ops = expect_same_output(d.path(), source + "pipeline p = s | filter(r => r.a % 3 != 0) | take(20)\n");
  EXPECT_EQ(ops, "tfrecord filter take prefetch");
}

TEST(PassEquivalence, NpySourceAndNoops) {
  ScratchDir d;
  Tensor x = Tensor::empty(DType::F32, {23, 4});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(i) * 0.25f - 3.0f;
  write_npy((d / "x.npy").string(), x);
  std::string ops =
      expect_same_output(d.path(),
                         "source s = npy(\"x.npy\") { x: f32[4] }\n"
                         "pipeline p = s | repeat(1) | skip(0)\n"
                         "  | map(r => { y: tanh(r.x) * 1.0 - 0.0, z: r.x + random_normal([4], seed = 4) })\n"
                         "  | batch(3, drop_remainder = true) | repeat(2)\n");
  EXPECT_EQ(ops, "npy batch map repeat prefetch");
}

// Random chains of stages (seeded, so a failure reproduces): maps with random ops, filters, shuffles,
// repeats, noops, take/skip, and batches at the end, each optimized and compared with -O0.
TEST(PassEquivalence, RandomPipelines) {
  const std::vector<std::string> middle = {
      "map(r => { v: r.v + 1, u: r.u * 2.0 + random_uniform([]) })",
      "map(r => { v: r.v * 3, u: r.u })",
      "map(r => { v: r.v, u: r.u * 1.0 - 0.0 })",
      "filter(r => r.v % 3 != 1)",
      "filter(r => r.u < 0.7)",
      "filter(r => random_uniform([], seed = 9) < 0.8)",
      "shuffle(7, seed = 1)",
      "shuffle(5, seed = 2) | repeat(2)",
      "repeat(2)",
      "repeat(1)",
      "skip(0)",
      "take(-1)",
      "skip(2)",
      "take(50)",
      "prefetch(2)",
  };
  const std::vector<std::string> ends = {
      "",
      " | batch(4)",
      " | batch(5, drop_remainder = true)",
      " | batch(3) | map(b => { s: b.v * 2, t: b.u })",
      " | map(r => { w: r.u + random_normal([2]) }) | batch(4) | repeat(2)",
  };
  std::mt19937 rng(1234);
  ScratchDir d;
  int vectorized = 0, fused = 0, shuffle_repeat = 0, map_batch = 0;
  for (int c = 0; c < 60; ++c) {
    std::string spec =
        "pipeline p = range(" + std::to_string(20 + rng() % 40) + ") | map(r => { v: r.value, u: random_uniform([]) })";
    int n = 2 + static_cast<int>(rng() % 5);
    for (int k = 0; k < n; ++k) spec += " | " + middle[rng() % middle.size()];
    spec += ends[rng() % ends.size()] + "\n";
    SCOPED_TRACE(spec);
    std::string text;
    std::string ops = expect_same_output(d.path(), spec, &text);
    if (text.find("per_row") != std::string::npos) ++vectorized;
    if (ops.find("map_filter") != std::string::npos) ++fused;
    if (ops.find("shuffle_repeat") != std::string::npos) ++shuffle_repeat;
    if (ops.find("map_batch") != std::string::npos) ++map_batch;
  }
  // The generator does reach the rewrites it is meant to check.
  EXPECT_GT(vectorized, 3);
  EXPECT_GT(fused, 3);
  EXPECT_GT(shuffle_repeat, 1);
  EXPECT_GT(map_batch, 1);
}

}  // namespace
}  // namespace pipec
