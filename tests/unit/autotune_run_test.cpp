// The autotuner and the memory budget in running pipelines: whatever values the `auto` parameters take
// while a run goes on (the tuner's, or random ones set from another thread), the run produces the same
// elements as a run that keeps the starting values; the bytes the stage buffers hold never pass the
// memory budget, in the budget's own count and in the process's resident memory; fixed buffers that
// cannot fit are refused with an error naming the stage and its place in the spec.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <random>
#include <thread>

#include "compiler/passes/pass_pipeline.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/io/example_writer.h"
#include "runtime/io/tfrecord_writer.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::plan_of;
using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;

// Five tfrecord files of 120 records {a: i64, v: f32[32]}.
void write_records(const fs::path& dir) {
  for (int file = 0; file < 5; ++file) {
    TFRecordWriter w((dir / fmt::format("x-{}.tfrecord", file)).string(), TFRecordWriterOptions{});
    for (int i = 0; i < 120; ++i) {
      ExampleWriter ex;
      int64_t a = file * 1000 + i;
      std::vector<float> v(32);
      for (int k = 0; k < 32; ++k) v[k] = static_cast<float>(a) + 0.5f * static_cast<float>(k);
      ex.add_int64("a", std::span<const int64_t>(&a, 1));
      ex.add_float("v", std::span<const float>(v));
      w.write(ex.serialize());
    }
    w.close();
  }
}

const std::string kSource = "source t = tfrecord(\"x-*.tfrecord\") { a: i64\n v: f32[32] }\n";

struct Case {
  std::string name;
  std::string pipeline;
};

// Between them: a map's window, map_batch's window (a repeat feeds a random map), a map moved after
// its batch, prefetch depths, files read ahead in order and in an interleave, a cache.
const std::vector<Case> kCases = {
    {"map", "range(3000) | map(r => { x: random_uniform([32]) + f32(r.value) }, parallel = auto) | prefetch(auto)"},
    {"map_batch",
     "range(700) | shuffle(100, seed = 1) | repeat(3) | map(r => { x: random_uniform([64]) * f32(r.value) }) | "
     "batch(7) | prefetch(auto)"},
    {"vectorized", "range(3000) | map(r => { y: f32(r.value) * 2.0 + 1.0 }) | batch(16) | prefetch(auto)"},
    {"sequential_reads", "t | map(r => { a: r.a, s: r.v * 3.0 }) | prefetch(auto)"},
    {"interleave",
     "t | interleave(cycle_length = 3, block_length = 2) | repeat(2) | map(r => { a: r.a, v: r.v + 1.0 }) | batch(5) | "
     "prefetch(auto)"},
    {"cache",
     "range(500) | map(r => { x: f32(r.value) * 2.0, y: random_uniform([8]) }) | cache() | repeat(3) | prefetch(auto)"},
    {"two_prefetches", "t | prefetch(auto) | map(r => { w: r.v * r.v }, parallel = auto) | batch(3) | prefetch(auto)"},
};

using Element = std::vector<Tensor>;

std::vector<Element> elements_of(const Chunk& c) {
  std::vector<Element> out;
  for (int64_t r = 0; r < c.rows; ++r) {
    Element e;
    for (const Column& col : c.columns) e.push_back(column_row(col, r));
    out.push_back(std::move(e));
  }
  return out;
}

void expect_same(const std::vector<Element>& got, const std::vector<Element>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t e = 0; e < got.size(); ++e) {
    ASSERT_EQ(got[e].size(), want[e].size()) << what;
    for (size_t f = 0; f < got[e].size(); ++f)
      ASSERT_TRUE(got[e][f].equals(want[e][f])) << what << ": element " << e << " field " << f;
  }
}

// Sets every tunable parameter of `run` to a random value in its range every ~100 us until stopped:
// the harshest tuner, moving values up and down between any two decisions of the stages.
class Shaker {
 public:
  // The first round of moves is made here, before the run starts, so that a run quicker than the
  // thread's first round still counts its moves (the test checks that something was tunable).
  Shaker(PipelineRun& run, uint32_t seed) : rng_(seed) {
    shake(run);
    thread_ = std::thread([this, &run] {
      while (!stop_.load()) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        shake(run);
      }
    });
  }
  ~Shaker() {
    stop_ = true;
    thread_.join();
  }
  int64_t moves() const { return moves_.load(); }

 private:
  void shake(PipelineRun& run) {
    for (Knob* k : run.autotuner().knobs()) {
      if (!k->tunable()) continue;
      k->set(std::uniform_int_distribution<int64_t>(k->min(), k->max())(rng_));
      ++moves_;
    }
    // The workers that take tasks too, as the tuner sets them (choose_workers).
    ThreadPool* pool = run.context().pool;
    if (pool && pool->size() > 1) pool->set_active_workers(std::uniform_int_distribution<int>(1, pool->size())(rng_));
  }

  std::mt19937 rng_;  // used by the constructor, then by the thread only
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> moves_{0};
  std::thread thread_;
};

class AutotuneRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    write_records(dir_->path());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static Plan optimized(const std::string& pipeline) {
    Plan plan = plan_of(kSource + "pipeline p = " + pipeline + "\n");
    if (plan.stages.empty()) throw std::runtime_error("the case does not check");
    run_passes(plan, PassOptions{});
    return plan;
  }
  static RunOptions options(int threads) {
    RunOptions o;
    o.seed = 11;
    o.threads = threads;
    o.chunk_rows = 16;
    o.spec_dir = dir_->path().string();
    return o;
  }
  static ScratchDir* dir_;
};
ScratchDir* AutotuneRun::dir_ = nullptr;

std::vector<Element> run_all(PipelineRun& run) {
  std::vector<Element> out;
  Chunk c;
  while (run.next(c))
    for (Element& e : elements_of(c)) out.push_back(std::move(e));
  return out;
}

// The tuner on, and every tunable value shaken at random while the run goes: the same elements as the
// starting values give, with 1 thread and with 3.
TEST_F(AutotuneRun, OutputDoesNotDependOnTheValuesChosen) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name + ": " + c.pipeline);
    const Plan plan = optimized(c.pipeline);
    for (int threads : {1, 3}) {
      RunOptions fixed = options(threads);
      fixed.autotune = false;
      std::vector<Element> want;
      {
        PipelineRun run(plan, fixed);
        want = run_all(run);
      }
      ASSERT_FALSE(want.empty());
      std::vector<Element> tuned;
      {
        PipelineRun run(plan, options(threads));
        tuned = run_all(run);
      }
      expect_same(tuned, want, fmt::format("tuned, {} threads", threads));
      int64_t moves = 0;
      std::vector<Element> shaken;
      {
        PipelineRun run(plan, options(threads));
        Shaker shaker(run, 5 + threads);
        shaken = run_all(run);
        moves = shaker.moves();
      }
      expect_same(shaken, want, fmt::format("shaken, {} threads", threads));
      // Every case has at least one value to move (with 1 thread, files are never read ahead).
      if (threads > 1 || c.name != "sequential_reads") {
        EXPECT_GT(moves, 0) << "nothing was tunable";
      }
    }
  }
}

// A tfrecord source's file is read on a thread of its own from three threads on (the tuner may move it
// inline); with one or two it is read on the thread that parses it, fixed, saying why (with two, the
// pulling thread and a pool worker fill them).
TEST_F(AutotuneRun, FilesAreReadAheadFromThreeThreads) {
  const Plan plan = optimized("t | map(r => { a: r.a, s: r.v * 3.0 }) | prefetch(auto)");
  for (int threads : {1, 2, 3, 4}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    PipelineRun run(plan, options(threads));
    const Knob* read_ahead = nullptr;
    for (const Knob* k : run.autotuner().knobs())
      if (k->kind() == KnobKind::ReadAhead) read_ahead = k;
    ASSERT_NE(read_ahead, nullptr);
    if (threads > 2) {
      EXPECT_TRUE(read_ahead->tunable());
      EXPECT_EQ(read_ahead->value(), 1);
      EXPECT_EQ(read_ahead->max(), 1);
    } else {
      EXPECT_FALSE(read_ahead->tunable());
      EXPECT_EQ(read_ahead->value(), 0);
      ASSERT_NE(read_ahead->fixed_reason(), nullptr);
      EXPECT_NE(std::string(read_ahead->fixed_reason()).find(threads == 1 ? "one thread" : "two threads"),
                std::string::npos);
    }
    EXPECT_FALSE(run_all(run).empty());
  }
}

// The pool's workers that take tasks: all the pipeline keeps until the tuner decides, never more than
// the trainer leaves it, never fewer than one.
TEST_F(AutotuneRun, TheWorkersStayWithinTheThreadsThePipelineKeeps) {
  const Plan plan = optimized(kCases.front().pipeline);
  RunOptions fixed = options(3);
  fixed.autotune = false;
  {
    PipelineRun run(plan, fixed);
    Autotuner::Workers w = run.autotuner().workers();
    EXPECT_EQ(w.value, 3);
    EXPECT_EQ(w.of, 3);
    EXPECT_EQ(w.reason, "");
    run.autotuner().set_compute_threads(1);
    w = run.autotuner().workers();
    EXPECT_EQ(w.value, 2);
    EXPECT_EQ(w.of, 2);
    EXPECT_EQ(run.context().pool->active_workers(), 2);
    EXPECT_FALSE(run_all(run).empty());
  }
  PipelineRun run(plan, options(3));
  EXPECT_FALSE(run_all(run).empty());
  const Autotuner::Workers w = run.autotuner().workers();
  EXPECT_EQ(w.of, 3);
  EXPECT_GE(w.value, 1);
  EXPECT_LE(w.value, 3);
}

// With every `auto` buffer pushed to its largest value, the bytes held stay within a budget that has
// room for a few items beyond the first ones, the budget is used (more than the first items were
// held at some point), and the elements are those of an unbounded run.
TEST_F(AutotuneRun, BuffersStayWithinTheMemoryBudget) {
  // 16 rows of f32[4096]: 256 KiB per chunk.
  const Plan plan = optimized(
      "range(600) | map(r => { x: random_uniform([4096]) + f32(r.value) }, parallel = auto) | prefetch(auto)");
  const uint64_t chunk = 16 * 4096 * 4;
  std::vector<Element> want;
  {
    RunOptions o = options(3);
    o.autotune = false;
    PipelineRun run(plan, o);
    want = run_all(run);
  }
  auto run_at_max = [&](uint64_t budget, uint64_t* peak, uint64_t* limit) {
    RunOptions o = options(3);
    o.memory_budget = budget;
    o.auto_values = {{KnobKind::MapParallelism, 12}, {KnobKind::PrefetchDepth, 64}};
    PipelineRun run(plan, o);
    std::vector<Element> got = run_all(run);
    *peak = run.memory().peak();
    *limit = run.memory().limit();
    return got;
  };
  uint64_t peak = 0, limit = 0;
  // Unbounded (the default budget, half of the machine's memory), the run holds far more than 5 chunks.
  expect_same(run_at_max(0, &peak, &limit), want, "unbounded");
  EXPECT_GT(peak, 5 * chunk);
  // Bounded to 5 chunks: the first chunk of each buffer and 3 more, at most.
  const uint64_t budget = 5 * chunk;
  expect_same(run_at_max(budget, &peak, &limit), want, "bounded");
  EXPECT_EQ(limit, budget);
  EXPECT_LE(peak, budget);
  EXPECT_GT(peak, 2 * chunk);  // more than the two first items: the room was used
}

// A map whose results have a fixed shape sizes its chunks from the plan before any result exists: the
// first pull puts its whole window on the pool, within the budget, instead of one chunk alone while the
// other threads wait for it to give the size (a short run of large images lost a tenth of its rate so).
TEST_F(AutotuneRun, AMapOfFixedShapeFillsItsWindowFromTheFirstPull) {
  const Plan plan = plan_of(kSource +
                            "pipeline p = range(600) | map(r => { x: random_uniform([4096]) + f32(r.value) }, "
                            "parallel = auto)\n");
  ASSERT_EQ(plan.stages.back().kind, StageKind::Map);
  RunOptions o = options(3);
  o.autotune = false;
  o.memory_budget = 64 << 20;
  PipelineRun run(plan, o);
  Chunk c;
  ASSERT_TRUE(run.next(c));
  Knob* map = nullptr;
  for (Knob* k : run.autotuner().knobs())
    if (k->kind() == KnobKind::MapParallelism) map = k;
  ASSERT_NE(map, nullptr);
  EXPECT_GE(map->value(), 3);
  EXPECT_EQ(map->held(), map->value() - 1);  // the window, less the chunk handed out
  EXPECT_LE(run.memory().peak(), o.memory_budget);
}

// A cache whose pass is known from the plan keeps the room it will need: the buffers before it get
// nothing beyond their first items while it fills, and the bytes held stay within the budget.
TEST_F(AutotuneRun, ACacheKeepsItsRoomFromTheOtherBuffers) {
  // The pass: 300 elements of f32[1024], 1.2 MB.
  const Plan plan = optimized(
      "range(300) | map(r => { x: f32(r.value) + random_uniform([1024]) }, parallel = auto) | cache() | repeat(2) | "
      "prefetch(auto)");
  RunOptions o = options(3);
  o.memory_budget = 1'600'000;
  o.auto_values = {{KnobKind::MapParallelism, 12}, {KnobKind::PrefetchDepth, 64}};
  PipelineRun run(plan, o);
  std::vector<Element> got = run_all(run);
  EXPECT_EQ(got.size(), 600u);
  EXPECT_LE(run.memory().peak(), o.memory_budget);
  int cache = -1;
  for (size_t i = 0; i < plan.stages.size(); ++i)
    if (plan.stages[i].kind == StageKind::Cache) cache = static_cast<int>(i);
  ASSERT_GE(cache, 0);
  EXPECT_EQ(run.memory().stage_use(cache).peak, 300u * 1024 * 4);
}

// Fixed buffers that cannot fit are refused before the run starts, naming the stage and its bytes.
TEST_F(AutotuneRun, FixedBuffersOverTheBudgetAreRefusedNamingTheStage) {
  const Plan plan = optimized("range(100000) | map(r => { x: random_uniform([1024]) }) | shuffle(10000, seed = 1)");
  RunOptions o = options(2);
  o.memory_budget = 1 << 20;
  try {
    PipelineRun run(plan, o);
    FAIL() << "the run started";
  } catch (const StageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("shuffle"), std::string::npos) << what;
    EXPECT_NE(what.find("its buffer of 10,000 elements of 4.1 KB needs 41.0 MB, over the memory budget of 1.0 MB"),
              std::string::npos)
        << what;
  }
}

// A cache whose size only the run learns (byte strings) stops the run when its pass outgrows the
// budget, with an error naming the cache; the command line reports it with the spec's location.
TEST(AutotuneCommandLine, ACacheThatOutgrowsTheBudgetStopsTheRunNamingIt) {
  ScratchDir d;
  {
    TFRecordWriter w((d / "s.tfrecord").string(), TFRecordWriterOptions{});
    for (int i = 0; i < 4000; ++i) {
      ExampleWriter ex;
      const std::string text(200, static_cast<char>('a' + i % 26));
      std::string_view tv = text;
      ex.add_bytes("s", std::span<const std::string_view>(&tv, 1));
      w.write(ex.serialize());
    }
    w.close();
  }
  write_file(d / "p.pipe",
             "source s = tfrecord(\"s.tfrecord\") { s: bytes }\n"
             "pipeline p = s\n"
             "  | cache()\n"
             "  | repeat(2)\n");
  // 4000 strings of 200 bytes: a pass of 800 KB, and a prefetch whose first chunk holds 205 KB.
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--memory-budget", "600K", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("p.pipe:3:5: cache: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("holds"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no longer fit in the memory budget of 614.4 KB (raise --memory-budget"), std::string::npos)
      << r.err;
  auto ok = run_pipec({"run", (d / "p.pipe").string(), "--memory-budget", "64M", "--quiet"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// The peak resident memory `pipec run` reports for itself (VmHWM) in --stats-json.
uint64_t peak_rss_of(const std::vector<std::string>& args, const fs::path& json) {
  std::vector<std::string> a = args;
  a.insert(a.end(), {"--quiet", "--stats-json", json.string()});
  auto r = run_pipec(a);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(testing::read_all(json))["peak_rss_bytes"].get<uint64_t>();
}

// The process, not just the budget's count: batches of 16 MB, with maps asked to keep 16 in flight and
// a prefetch 64. Unbounded, the run's resident memory passes that of a run keeping one of each by more
// than 150 MB; with --memory-budget 48M (the first batch of each buffer, 32 MB, and one more) it stays
// within 48 MB of it.
TEST(AutotuneCommandLine, ResidentMemoryFollowsTheBudget) {
  ScratchDir d;
  write_file(d / "p.pipe",
             "pipeline p = range(1200)\n"
             "  | map(r => { x: one_hot(r.value % 1000, 262144) }, parallel = auto)\n"
             "  | batch(16)\n"
             "  | prefetch(auto)\n");
  const std::string spec = (d / "p.pipe").string();
  // Every parameter fixed, and --no-autotune so that both workers take the map's tasks (the tuner
  // would keep the one the model's capacity needs, and the producers would get less far ahead).
  const std::vector<std::string> wide = {
      "run", spec, "--threads", "2", "--auto-value", "parallel=16", "--auto-value", "prefetch=64", "--no-autotune"};
  const uint64_t small = peak_rss_of(
      {"run", spec, "--threads", "2", "--auto-value", "parallel=1", "--auto-value", "prefetch=1"}, d / "s.json");
  const uint64_t unbounded = peak_rss_of(wide, d / "w.json");
  std::vector<std::string> bounded_args = wide;
  bounded_args.insert(bounded_args.end(), {"--memory-budget", "48M"});
  const uint64_t bounded = peak_rss_of(bounded_args, d / "b.json");
  // The unbounded run must hold more than the budget would allow, or the bounded check below proves
  // nothing. How much more depends on how far the producers get ahead of the consumer (70-150 MB over
  // the small run here), so the bar is the budget itself.
  EXPECT_GT(unbounded, small + 48u * 1024 * 1024) << "the unbounded run did not hold more than the budget allows";
  EXPECT_LT(bounded, small + 48u * 1024 * 1024) << "one of each " << small << " B, bounded " << bounded << " B";
  const auto stats = nlohmann::json::parse(testing::read_all(d / "b.json"));
  EXPECT_LE(stats["memory"]["peak_bytes"].get<uint64_t>(), 48u * 1024 * 1024);
}

// The JPEG window index (repeated_jpeg_index) is a cache the run fills: it is kept only as far as the
// memory budget grants it. With room for about half of the files' indexes, fewer files are indexed
// than with a large budget, and the bytes held stay within the budget.
TEST(AutotuneCommandLine, TheJpegWindowIndexCountsInTheBudget) {
  ScratchDir d;
  const std::string jpegs = std::string(PIPEC_SHARED_DIR) + "/testdata/external/jpeg/";
  for (const char* name : {"libjpeg-turbo_testorig.jpg", "libjpeg-turbo_testimgint.jpg", "libjpeg-turbo_testimgari.jpg",
                           "wuffs_bricks-color.jpeg", "wuffs_bricks-gray.jpeg", "wuffs_peacock.default.jpeg"})
    fs::copy_file(jpegs + name, d / name);
  write_file(d / "p.pipe",
             "pipeline p = files(\"*.jp*g\")\n"
             "  | repeat(4)\n"
             "  | map(r => { img: random_crop(decode_jpeg(read_file(r.path)), 16, 16) })\n");
  auto run = [&](const char* budget, const std::string& json) {
    auto r = run_pipec({"run", (d / "p.pipe").string(), "--threads", "1", "--quiet", "--memory-budget", budget,
                        "--stats-json", (d / json).string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(testing::read_all(d / json));
  };
  const auto large = run("1G", "large.json");
  const auto small = run("40K", "small.json");
  EXPECT_EQ(large["jpeg_index"]["indexed"], 6);
  EXPECT_LT(small["jpeg_index"]["indexed"].get<int>(), 6);
  EXPECT_GT(small["jpeg_index"]["indexed"].get<int>(), 0);
  EXPECT_LE(small["memory"]["peak_bytes"].get<uint64_t>(), 40u * 1024);
  EXPECT_EQ(small["elements"], large["elements"]);
}

}  // namespace
}  // namespace pipec
