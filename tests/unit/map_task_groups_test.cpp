// A map on the pool computes its chunks in tasks of up to two (runtime/exec/stages/stage_map.cpp's
// refill_group: one wake-up of a worker for two chunks when there are two tasks per worker in its
// window), and a prefetch's consumer sleeps until half of its queue is ready
// (runtime/threads/bounded_queue.h's pop_when). Neither may change the stream or where an error
// surfaces: these runs compare every window, thread count and chunk size with the map on one thread.
#include <gtest/gtest.h>

#include "tests/unit/stage_run_util.h"

namespace pipec {
namespace {

using testing::Elements;

// The elements a run delivers before it stops, and the error it stops with ("" at the end).
struct Outcome {
  Elements elements;
  std::string error;
  bool operator==(const Outcome&) const = default;
};

Outcome run_until_error(const Plan& plan, int64_t chunk_rows, int threads) {
  Outcome out;
  PipelineRun run(plan, testing::run_options(chunk_rows, threads));
  try {
    Chunk c;
    while (run.next(c))
      for (int64_t r = 0; r < c.rows; ++r) out.elements.push_back(testing::row_text(c, r, plan.stages.back().element));
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

std::string pipeline(int parallel, const std::string& prefetch, int64_t n = 200) {
  return fmt::format("range({}) | map(r => {{ x: r.value * 3, y: f32(r.value) / 7.0 }}, parallel = {}) | prefetch({})",
                     n, parallel, prefetch);
}

TEST(MapTaskGroups, EveryWindowThreadCountAndChunkSizeGivesTheSameStream) {
  const Elements want = testing::run_plan_text(testing::optimized_plan(pipeline(1, "1")), 1, 1);
  ASSERT_EQ(want.size(), 200u);
  EXPECT_EQ(want[7], "x=21 y=1");
  for (int parallel : {2, 3, 4, 8})
    for (const char* prefetch : {"1", "2", "4", "auto"}) {
      const Plan plan = testing::optimized_plan(pipeline(parallel, prefetch));
      for (int threads = 1; threads <= 4; ++threads)
        for (int64_t rows : {1, 3, 64})
          EXPECT_EQ(testing::run_plan_text(plan, rows, threads), want)
              << "parallel " << parallel << ", prefetch " << prefetch << ", " << threads << " threads, chunks of "
              << rows;
    }
}

TEST(MapTaskGroups, AnErrorStopsTheRunAtItsElementWhateverTheTasks) {
  // Element 37 indexes past the list: the elements before it come out, then the error, as on one
  // thread; the chunk after it (computed in the same task when two share one) changes nothing.
  auto failing = [](int parallel) {
    return testing::optimized_plan(fmt::format(
        "range(100) | map(r => {{ x: [1, 2, 3][max(0, min(r.value, 37) - 34)] }}, parallel = {}) | prefetch(4)",
        parallel));
  };
  const Outcome want = run_until_error(failing(1), 1, 1);
  ASSERT_EQ(want.elements.size(), 37u);
  EXPECT_NE(want.error.find("out of range"), std::string::npos) << want.error;
  for (int parallel : {2, 4, 8})
    for (int threads = 1; threads <= 4; ++threads)
      EXPECT_EQ(run_until_error(failing(parallel), 1, threads), want) << "parallel " << parallel << ", " << threads;
}

}  // namespace
}  // namespace pipec
