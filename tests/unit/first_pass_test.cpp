// RunOptions::first_pass (runtime/exec/pipeline_run.h): a run started at pass k of its outermost repeat
// yields, bit for bit, what a run from the start yields from pass k on (its shuffles and random ops draw
// by pass), at -O0 and optimized, through a repeat and a fused shuffle_repeat; outermost_repeat finds the
// repeat only through stages that keep the passes.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/passes/pass_pipeline.h"
#include "runtime/exec/pipeline_run.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

using testing::ops_of;
using testing::plan_of;

// One pass's output: every element's fields, in order.
using Pass = std::vector<std::vector<Tensor>>;

// The run's output pass by pass (by the chunks' epoch), starting at `first_pass`.
std::map<int64_t, Pass> passes_of(const Plan& plan, int64_t first_pass, int threads) {
  RunOptions o;
  o.seed = 21;
  o.threads = threads;
  o.chunk_rows = 7;
  o.first_pass = first_pass;
  PipelineRun run(plan, o);
  std::map<int64_t, Pass> out;
  Chunk c;
  for (int chunks = 0; run.next(c) && chunks < 10000; ++chunks)
    for (int64_t r = 0; r < c.rows; ++r) {
      std::vector<Tensor> row;
      for (const Column& col : c.columns) row.push_back(column_row(col, r));
      out[c.epoch].push_back(std::move(row));
    }
  return out;
}

bool same_pass(const Pass& a, const Pass& b) {
  if (a.size() != b.size()) return false;
  for (size_t e = 0; e < a.size(); ++e) {
    if (a[e].size() != b[e].size()) return false;
    for (size_t f = 0; f < a[e].size(); ++f)
      if (a[e][f].byte_size() != b[e][f].byte_size() ||
          std::memcmp(a[e][f].raw(), b[e][f].raw(), a[e][f].byte_size()) != 0)
        return false;
  }
  return true;
}

// Started at each pass k of `count`, the run yields the passes k, k+1, ... of a run from the start,
// and nothing more; `ops` is the optimized plan's stages (the rewrite the case is about).
void expect_passes_from_the_start(const std::string& spec, int64_t count, const std::string& ops) {
  Plan lowered = plan_of(spec);
  Plan optimized = testing::copy_plan(lowered);
  run_passes(optimized, PassOptions{});
  EXPECT_EQ(ops_of(optimized), ops);
  for (const Plan* plan : {&lowered, &optimized}) {
    const std::map<int64_t, Pass> whole = passes_of(*plan, 0, 1);
    ASSERT_EQ(static_cast<int64_t>(whole.size()), count) << print_plan(*plan);
    // Each pass is another order of the data (the shuffles and the random ops draw by pass).
    EXPECT_FALSE(same_pass(whole.at(0), whole.at(1)));
    for (int64_t k = 1; k < count; ++k)
      for (int threads : {1, 3}) {
        const std::map<int64_t, Pass> from_k = passes_of(*plan, k, threads);
        ASSERT_EQ(static_cast<int64_t>(from_k.size()), count - k) << "started at pass " << k;
        for (int64_t p = k; p < count; ++p)
          EXPECT_TRUE(from_k.count(p) && same_pass(from_k.at(p), whole.at(p)))
              << "pass " << p << " of a run started at pass " << k << ", " << threads << " threads:\n"
              << print_plan(*plan);
      }
    // At or past the last pass there is nothing left.
    EXPECT_TRUE(passes_of(*plan, count, 1).empty());
  }
}

TEST(FirstPass, ARepeatStartedAtPassKYieldsTheWholeRunsPassesFromK) {
  // As a training run's data: shuffled, a random map, batched, then the repeat the run's length adds.
  expect_passes_from_the_start(
      "pipeline p = range(50)\n"
      "  | shuffle(16, seed = 3)\n"
      "  | map(r => { v: r.value, x: random_uniform([3]) })\n"
      "  | batch(4, drop_remainder = true)\n"
      "  | repeat(4)\n",
      4, "range shuffle batch map repeat prefetch");
}

TEST(FirstPass, AFusedShuffleRepeatStartedAtPassKYieldsTheWholeRunsPassesFromK) {
  expect_passes_from_the_start(
      "pipeline p = range(37)\n"
      "  | map(r => { v: r.value, n: random_normal([2]) })\n"
      "  | shuffle(10, seed = 4)\n"
      "  | repeat(3)\n",
      3, "range map shuffle_repeat prefetch");
}

TEST(FirstPass, AnEndlessRepeatStartsAtPassKToo) {
  const Plan plan = plan_of("pipeline p = range(20) | shuffle(8, seed = 1) | batch(5) | repeat()\n");
  RunOptions o;
  o.seed = 3;
  o.threads = 1;
  // The values of pass `pass` of a run started at `first_pass`.
  auto pass_values = [&](int64_t first_pass, int64_t pass) {
    o.first_pass = first_pass;
    PipelineRun run(plan, o);
    Chunk c;
    std::vector<int64_t> values;
    while (run.next(c) && c.epoch <= pass) {
      EXPECT_GE(c.epoch, first_pass);
      if (c.epoch < pass) continue;
      for (int64_t r = 0; r < c.rows; ++r) {
        const Tensor t = column_row(c.columns.at(0), r);
        for (int64_t i = 0; i < t.num_elements(); ++i) values.push_back(t.data<int64_t>()[i]);
      }
    }
    return values;
  };
  const std::vector<int64_t> fifth = pass_values(5, 5);
  EXPECT_EQ(fifth.size(), 20u);
  EXPECT_EQ(fifth, pass_values(0, 5));
  EXPECT_NE(fifth, pass_values(0, 0));
}

TEST(FirstPass, TheOutermostRepeatIsFoundThroughStagesThatKeepThePasses) {
  Plan p = plan_of("pipeline p = range(10) | repeat(2) | map(r => { v: r.value * 2 }) | batch(3) | prefetch(2)\n");
  EXPECT_EQ(ops_of(p), "range repeat map batch prefetch");
  EXPECT_EQ(outermost_repeat(p), 1);
  // A take counts across passes, a shuffle reorders across them, enumerate numbers across them.
  for (const char* tail : {"take(5)", "shuffle(4)", "enumerate()"}) {
    p = plan_of(fmt::format("pipeline p = range(10) | repeat(2) | {}\n", tail));
    EXPECT_EQ(outermost_repeat(p), -1) << tail;
  }
  p = plan_of("pipeline p = range(10) | batch(2)\n");
  EXPECT_EQ(outermost_repeat(p), -1);
  RunOptions o;
  o.first_pass = 1;
  EXPECT_THROW(PipelineRun(p, o), std::invalid_argument);
  o.first_pass = 0;
  EXPECT_NO_THROW(PipelineRun(p, o));
}

}  // namespace
}  // namespace pipec
