// A prefetch whose consumer does nothing between chunks pulls its input through on the consumer's own
// thread, and goes back to its thread once the consumer works (runtime/exec/stages/stage_prefetch.cpp).
// Which thread pulls never changes what comes out: the elements, an error and where it is reported,
// and a run resumed from a checkpoint saved while it pulled inline.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "runtime/exec/pipeline_run.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

using testing::plan_of;
using testing::ScratchDir;
using testing::write_file;

// Shuffled and mapped with a random op, so an element out of place or drawn from another stream shows;
// a chunk costs its producer far more than the tests' consumers spend on it between chunks when idle
// (they keep a reference to its tensors).
const char* kSpec =
    "pipeline p = range(1000000)\n"
    "  | shuffle(500, seed = 3)\n"
    "  | map(r => { x: r.value * 3, u: sqrt(random_uniform([256]) + f32(r.value)) })\n"
    "  | batch(32)\n"
    "  | prefetch(4)\n";

RunOptions options(bool inline_when_idle) {
  RunOptions o;
  o.seed = 11;
  o.threads = 2;
  o.chunk_rows = 16;
  o.prefetch_inline_when_idle = inline_when_idle;
  return o;
}

uint64_t inline_chunks(const PipelineRun& run) {
  const Plan& plan = run.plan();
  for (size_t i = 0; i < plan.stages.size(); ++i)
    if (plan.stages[i].kind == StageKind::Prefetch) return run.context().stats[i]->snapshot().inline_chunks;
  ADD_FAILURE() << "the plan has no prefetch";
  return 0;
}

// A consumer's view of the run: what each chunk held, in order.
struct Taken {
  std::vector<std::vector<Tensor>> chunks;
  void add(const Chunk& c) {
    std::vector<Tensor> cols;
    for (const Column& col : c.columns) cols.push_back(col.dense);
    chunks.push_back(std::move(cols));
  }
};

void expect_same(const Taken& got, const Taken& want, size_t first, const std::string& what) {
  ASSERT_LE(first + got.chunks.size(), want.chunks.size()) << what;
  for (size_t c = 0; c < got.chunks.size(); ++c)
    for (size_t f = 0; f < got.chunks[c].size(); ++f)
      ASSERT_TRUE(got.chunks[c][f].equals(want.chunks[first + c][f]))
          << what << ": chunk " << first + c << " field " << f;
}

// Takes up to n chunks into `into`, the consumer working `work_ms` after each.
void take(PipelineRun& run, Taken& into, int n, int work_ms = 0) {
  Chunk c;
  for (int k = 0; k < n && run.next(c); ++k) {
    into.add(c);
    if (work_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(work_ms));
  }
}

Taken reference(const Plan& plan, int chunks) {
  PipelineRun run(plan, options(false));
  Taken t;
  take(run, t, chunks);
  EXPECT_EQ(inline_chunks(run), 0u) << "turned off, the prefetch always pulls on its own thread";
  return t;
}

TEST(PrefetchInline, AnIdleConsumerPullsThroughItselfAndGetsTheSameElements) {
  const Plan plan = plan_of(kSpec);
  const Taken want = reference(plan, 400);
  PipelineRun run(plan, options(true));
  Taken got;
  take(run, got, 400);
  expect_same(got, want, 0, "idle consumer");
  // The run starts inline, and a consumer seen to do nothing keeps pulling on its own thread: the
  // thread never started, so no chunk came from it.
  EXPECT_EQ(inline_chunks(run), 400u);
}

TEST(PrefetchInline, ABusyConsumerKeepsTheThreadAndOneThatGoesIdleAndBackSwitchesBothWays) {
  const Plan plan = plan_of(kSpec);
  const Taken want = reference(plan, 420);
  PipelineRun run(plan, options(true));
  Taken got;
  // Busy: 2 ms of the consumer's own per chunk of 8 small elements, far more than the chunk costs. The
  // run starts inline and starts the thread after its first window of 4 chunks.
  take(run, got, 100, 2);
  EXPECT_EQ(inline_chunks(run), 4u) << "a consumer that works gets the prefetch's thread after 4 chunks";
  take(run, got, 200);
  const uint64_t after_idle = inline_chunks(run);
  EXPECT_GT(after_idle, 100u) << "idle, the consumer pulls through itself";
  // Busy again: within a window or two the thread takes over.
  take(run, got, 100, 2);
  const uint64_t after_busy = inline_chunks(run);
  EXPECT_LE(after_busy - after_idle, 64u) << "the thread should have started again";
  take(run, got, 20, 2);
  EXPECT_EQ(inline_chunks(run), after_busy) << "busy for long, every chunk comes from the thread";
  expect_same(got, want, 0, "busy, idle, busy");
}

// A caller that says it works between chunks (the trainer) gets the thread from the first chunk.
TEST(PrefetchInline, AConsumerKnownToWorkGetsTheThreadAtOnce) {
  const Plan plan = plan_of(kSpec);
  const Taken want = reference(plan, 20);
  RunOptions o = options(true);
  o.consumer_works = true;
  PipelineRun run(plan, o);
  Taken got;
  take(run, got, 20, 1);
  EXPECT_EQ(inline_chunks(run), 0u);
  expect_same(got, want, 0, "known to work");
}

TEST(PrefetchInline, ACheckpointSavedWhileInlineResumesExactly) {
  const Plan plan = plan_of(kSpec);
  const Taken want = reference(plan, 300);
  std::string state;
  size_t saved_at = 0;
  {
    PipelineRun run(plan, options(true));
    Taken before;
    take(run, before, 150);
    saved_at = before.chunks.size();
    ASSERT_GT(inline_chunks(run), 50u) << "the save should happen while the consumer pulls inline";
    state = run.save_state();
    // The run goes on after its save, still the same stream.
    Taken after;
    take(run, after, 50);
    expect_same(after, want, saved_at, "after the save, same run");
  }
  PipelineRun resumed(plan, options(true));
  resumed.restore_state(state, "test");
  Taken rest;
  take(resumed, rest, 150);
  expect_same(rest, want, saved_at, "resumed");
}

// A bad row well after the switch: the same error, after the same elements, as from the thread.
TEST(PrefetchInline, AnErrorPulledInlineIsTheThreadsError) {
  ScratchDir d;
  std::string csv = "a\n";
  for (int i = 0; i < 3000; ++i) csv += fmt::format("{}\n", i);
  csv += "not a number\n";
  for (int i = 0; i < 10; ++i) csv += "1\n";
  write_file(d / "x.csv", csv);
  const Plan plan = plan_of("source c = csv(\"x.csv\") { a: i64 }\npipeline p = c | batch(4) | prefetch(2)\n");
  auto run_to_error = [&](bool inline_when_idle, uint64_t* inlined) {
    RunOptions o = options(inline_when_idle);
    o.spec_dir = d.path().string();
    PipelineRun run(plan, o);
    int64_t rows = 0;
    std::string error;
    Chunk c;
    try {
      while (run.next(c)) rows += c.rows;
    } catch (const std::exception& e) {
      error = e.what();
    }
    *inlined = inline_chunks(run);
    return std::make_pair(rows, error);
  };
  uint64_t from_thread = 0, inlined = 0;
  const auto want = run_to_error(false, &from_thread);
  const auto got = run_to_error(true, &inlined);
  EXPECT_NE(want.second.find("x.csv"), std::string::npos) << want.second;
  EXPECT_EQ(got.second, want.second);
  EXPECT_EQ(got.first, want.first);
  EXPECT_GT(inlined, 0u) << "the bad row should be met inline";
}

}  // namespace
}  // namespace pipec
