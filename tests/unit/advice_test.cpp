// The advice rules (compiler/advice): each scenario is a plan with the measurements a run could have
// made, and the sentence one rule must say about it (or that it must say nothing); every rule of
// advice_rules.def has a scenario that triggers it. Then `pipec run` end to end: the summary and
// --stats-json carry the advice of a real run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <set>

#include "compiler/advice/advice.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

using testing::plan_of;
using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;

// What a run measured, per stage: work (s), of it on the pulling thread (s), elements out, bytes out.
struct Measured {
  double work = 0, thread = 0;
  uint64_t elements = 0, bytes = 0;
};

struct Scenario {
  std::string name;
  std::string pipeline;                  // `pipeline p = ...`; the lowered plan (no optimizer) is used
  std::map<int, Measured> stages;        // stages not listed did nothing
  std::map<int, int64_t> pass_elements;  // the rest unknown
  Bottleneck bottleneck;
  int threads = 2, cores = 2;
  uint64_t budget = 1'000'000'000;
  bool all_passes = true;
  std::string rule;                                           // the rule that must speak
  std::string expected;                                       // its sentence; empty: it must say nothing
  std::optional<RunFacts::Training> training = std::nullopt;  // the steps of a training run it fed
};

Bottleneck bottleneck(Bottleneck::Kind kind, int stage, double share, std::string why) {
  Bottleneck b;
  b.kind = kind;
  b.stage = stage;
  b.share = share;
  b.why = std::move(why);
  return b;
}

const std::vector<Scenario>& scenarios() {
  using K = Bottleneck::Kind;
  static const std::vector<Scenario> list = {
      // ---- input_wait ----
      {"a model that waits for input 40% of each step",
       "range(1000) | map(r => { x: f32(r.value) * 2.0 }, parallel = auto) | batch(10) | prefetch(auto)",
       {{0, {0.1, 0.1, 1000, 8000}}, {1, {3, 0.1, 1000, 4000}}, {2, {0.1, 0.1, 100, 4000}}},
       {},
       bottleneck(K::Cpu, 1, 0.94, "the CPU: the pipeline keeps 2 cores busy"),
       2,
       2,
       1'000'000'000,
       true,
       "input_wait",
       "the model waits for input 40% of each step (20 ms of 50 ms): the input pipeline limits training; #1 map "
       "limits the pipeline (94% of its work): make it faster",
       RunFacts::Training{100, 5.0, 2.0}},
      {"a model that waits on a pipeline faster than itself",
       "range(1000) | batch(10) | prefetch(auto)",
       {{0, {0.1, 0.1, 1000, 8000}}},
       {},
       bottleneck(K::Consumer, -1, 0, "the consumer: ..."),
       2,
       2,
       1'000'000'000,
       true,
       "input_wait",
       "the model waits for input 25% of each step (0.0125 ms of 0.05 ms): the pipeline makes batches faster than the "
       "model takes them, so the wait is the hand-off between their threads: larger batches, or a deeper prefetch(N) "
       "at "
       "the end of the pipeline, hide it",
       RunFacts::Training{100'000, 5.0, 1.25}},
      {"a model that hardly waits",
       "range(1000) | batch(10) | prefetch(auto)",
       {{0, {0.1, 0.1, 1000, 8000}}},
       {},
       bottleneck(K::Consumer, -1, 0, "the consumer: ..."),
       2,
       2,
       1'000'000'000,
       true,
       "input_wait",
       "",
       RunFacts::Training{100, 5.0, 0.05}},
      {"a pipeline run without training",
       "range(1000) | batch(10) | prefetch(auto)",
       {{0, {0.1, 0.1, 1000, 8000}}},
       {},
       bottleneck(K::Segment, 0, 1, "runs on the thread of #2 prefetch"),
       2,
       2,
       1'000'000'000,
       true,
       "input_wait",
       ""},
      // ---- bottleneck ----
      {"a thread shared with the stages before it",
       "range(1000) | map(r => { x: r.value * 2 }, parallel = auto) | batch(4) | prefetch(auto)",
       {{0, {1, 1, 1000, 8000}}, {1, {2, 2, 1000, 8000}}, {2, {3, 3, 250, 8000}}},
       {},
       bottleneck(K::Segment, 2, 0.5, "runs on the thread of #3 prefetch with #0 range and #1 map"),
       2,
       2,
       1'000'000'000,
       true,
       "bottleneck",
       "#2 batch limits the run (50% of the work; runs on the thread of #3 prefetch with #0 range and #1 map): add "
       "prefetch(auto) before it (after #1 map), so the stages before it run on a thread of their own"},
      {"a thread shared with the stages after it",
       "range(1000) | map(r => { x: r.value * 2 }, parallel = auto) | batch(4) | prefetch(auto)",
       {{0, {3, 3, 1000, 8000}}, {1, {1, 1, 1000, 8000}}, {2, {1, 1, 250, 8000}}},
       {},
       bottleneck(K::Segment, 0, 0.6, "runs on the thread of #3 prefetch with #1 map and #2 batch"),
       2,
       2,
       1'000'000'000,
       true,
       "bottleneck",
       "#0 range limits the run (60% of the work; runs on the thread of #3 prefetch with #1 map and #2 batch): add "
       "prefetch(auto) after it, so it runs on a thread of its own"},
      {"the CPU, with cores the run does not use",
       "range(1000) | map(r => { x: r.value * 2 }) | prefetch(auto)",
       {{1, {5, 0, 1000, 8000}}},
       {},
       bottleneck(K::Cpu, 1, 0.9, "the CPU: the pipeline keeps 2 cores busy"),
       1,
       4,
       1'000'000'000,
       true,
       "bottleneck",
       "#1 map limits the run (90% of the work; the CPU: the pipeline keeps 2 cores busy): the run has 1 of the "
       "machine's 4 cores: run it with --threads 4"},
      {"the CPU, every core",
       "range(1000) | map(r => { x: r.value * 2 }) | prefetch(auto)",
       {{1, {5, 0, 1000, 8000}}},
       {},
       bottleneck(K::Cpu, 1, 0.9, "the CPU: the pipeline keeps 2 cores busy"),
       2,
       2,
       1'000'000'000,
       true,
       "bottleneck",
       "#1 map limits the run (90% of the work; the CPU: the pipeline keeps 2 cores busy): every core is busy: only "
       "less work helps (cache what repeats, or move maps to the GPU with to(gpu))"},
      {"the CPU, after to(gpu) on a machine without a GPU",
       "range(1000) | to(gpu) | map(r => { x: f32(r.value) * 2.0 }) | prefetch(auto)",
       {{2, {5, 0, 1000, 4000}}},
       {},
       bottleneck(K::Cpu, 2, 0.9, "the CPU: the pipeline keeps 2 cores busy"),
       2,
       2,
       1'000'000'000,
       true,
       "bottleneck",
       "#2 map limits the run (90% of the work; the CPU: the pipeline keeps 2 cores busy): every core is busy, and it "
       "comes "
       "after to(gpu) but ran on the CPU for want of a GPU: on a machine with one it moves there"},
      {"the consumer",
       "range(1000) | prefetch(auto)",
       {{0, {1, 1, 1000, 8000}}},
       {},
       bottleneck(K::Consumer, -1, 0, "the consumer: ..."),
       2,
       2,
       1'000'000'000,
       true,
       "bottleneck",
       "the consumer takes longer per element than the pipeline makes one: nothing in the pipeline limits the run"},
      {"a map the spec keeps on one thread is parallel_map's, not bottleneck's",
       "range(1000) | map(r => { x: r.value * 2 }, parallel = 1) | prefetch(auto)",
       {{1, {5, 5, 1000, 8000}}},
       {},
       bottleneck(K::Segment, 1, 0.9, "runs on the thread of #2 prefetch"),
       4,
       4,
       1'000'000'000,
       true,
       "bottleneck",
       ""},
      // ---- parallel_map ----
      {"parallel = 1 on the limiting map",
       "range(1000) | map(r => { x: r.value * 2 }, parallel = 1) | prefetch(auto)",
       {{0, {0.5, 0.5, 1000, 8000}}, {1, {4.5, 4.5, 1000, 8000}}},
       {},
       bottleneck(K::Segment, 1, 0.9, "runs on the thread of #2 prefetch with #0 range"),
       4,
       4,
       1'000'000'000,
       true,
       "parallel_map",
       "#1 map limits the run (90% of the work) and its parallel = 1 runs on the thread that pulls from it: write "
       "parallel = auto, and the autotuner runs it on up to 4 threads"},
      {"parallel = 2 of 8 threads",
       "range(1000) | map(r => { x: r.value * 2 }, parallel = 2) | prefetch(auto)",
       {{1, {5, 0.1, 1000, 8000}}},
       {},
       bottleneck(K::Map, 1, 1.0, "2 chunks in flight keep 2 of 8 threads on it"),
       8,
       8,
       1'000'000'000,
       true,
       "parallel_map",
       "#1 map limits the run (100% of the work) and its parallel = 2 keeps 2 of the run's 8 threads on it: write "
       "parallel = auto, and the autotuner runs it on up to 8 threads"},
      {"parallel = auto says nothing",
       "range(1000) | map(r => { x: r.value * 2 }, parallel = auto) | prefetch(auto)",
       {{1, {5, 0.1, 1000, 8000}}},
       {},
       bottleneck(K::Map, 1, 1.0, "2 chunks in flight keep 2 of 8 threads on it"),
       8,
       8,
       1'000'000'000,
       true,
       "parallel_map",
       ""},
      // ---- cache_after_expensive ----
      {"a deterministic map before a random one, then a repeat",
       "range(1000) | map(r => { x: f32(r.value) * 2.0 }) | map(r => { y: r.x + random_uniform([]) }) | repeat(5) | "
       "prefetch(auto)",
       {{0, {0.1, 0.1, 5000, 40000}}, {1, {8, 0, 5000, 20'000'000}}, {2, {1.9, 0, 5000, 20000}}},
       {{0, 1000}, {1, 1000}},
       bottleneck(K::Cpu, 1, 0.8, "the CPU"),
       2,
       2,
       1'000'000'000,
       true,
       "cache_after_expensive",
       "#1 map is 80% of the work and gives the same elements every epoch: add cache() after it (needs 4.0 MB; budget "
       "1.0 GB)"},
      {"the same over the budget",
       "range(1000) | map(r => { x: f32(r.value) * 2.0 }) | map(r => { y: r.x + random_uniform([]) }) | repeat(5) | "
       "prefetch(auto)",
       {{0, {0.1, 0.1, 5000, 40000}}, {1, {8, 0, 5000, 20'000'000}}, {2, {1.9, 0, 5000, 20000}}},
       {{0, 1000}, {1, 1000}},
       bottleneck(K::Cpu, 1, 0.8, "the CPU"),
       2,
       2,
       1'000'000,
       true,
       "cache_after_expensive",
       "#1 map is 80% of the work and gives the same elements every epoch: caching its output in memory would need 4.0 "
       "MB, "
       "over the memory budget of 1.0 MB: cache it in a file (cache(\"PATH\")) or write it once and read that instead"},
      {"a shuffle before it moves after the cache",
       "range(1000) | shuffle(100, seed = 1) | map(r => { x: f32(r.value) * 2.0 }) | repeat() | prefetch(auto)",
       {{0, {0.5, 0.5, 3000, 24000}}, {1, {0.5, 0.5, 3000, 24000}}, {2, {9, 9, 3000, 12000}}},
       {{0, 1000}, {1, 1000}, {2, 1000}},
       bottleneck(K::Segment, 2, 0.9, "runs on the thread of #4 prefetch"),
       2,
       2,
       1'000'000'000,
       true,
       "cache_after_expensive",
       "#2 map is 90% of the work and gives the same elements every epoch: add cache() after "
       "it and move #1 shuffle after the cache (it then shuffles the cached elements every epoch) (needs 4.0 KB; "
       "budget 1.0 GB)"},
      {"a repeat before it moves after it",
       "range(1000) | repeat(3) | map(r => { x: f32(r.value) * 2.0 }) | batch(10) | prefetch(auto)",
       {{0, {0.2, 0.2, 3000, 24000}}, {1, {0, 0, 3000, 24000}}, {2, {9, 9, 3000, 12000}}, {3, {0.8, 0.8, 300, 12000}}},
       {{0, 1000}},
       bottleneck(K::Segment, 2, 0.9, "runs on the thread of #4 prefetch"),
       2,
       2,
       1'000'000'000,
       true,
       "cache_after_expensive",
       "#3 batch and the stages before it are 100% of the work and give the same elements every epoch: move #1 repeat "
       "after it and add cache() between them (needs 4.0 KB; budget 1.0 GB)"},
      {"a map that draws random numbers is not cached",
       "range(1000) | map(r => { x: random_uniform([4]) }) | repeat(3) | prefetch(auto)",
       {{0, {0.1, 0.1, 3000, 24000}}, {1, {9, 9, 3000, 48000}}},
       {{0, 1000}, {1, 1000}},
       bottleneck(K::Segment, 1, 0.9, "runs on the thread of #3 prefetch"),
       2,
       2,
       1'000'000'000,
       true,
       "cache_after_expensive",
       ""},
      {"without a repeat nothing runs twice",
       "range(1000) | map(r => { x: f32(r.value) * 2.0 }) | prefetch(auto)",
       {{0, {0.1, 0.1, 1000, 8000}}, {1, {9, 9, 1000, 4000}}},
       {{0, 1000}, {1, 1000}},
       bottleneck(K::Segment, 1, 0.9, "runs on the thread of #2 prefetch"),
       2,
       2,
       1'000'000'000,
       true,
       "cache_after_expensive",
       ""},
      {"a cache already there",
       "range(1000) | map(r => { x: f32(r.value) * 2.0 }) | cache() | repeat(4) | prefetch(auto)",
       {{0, {0.1, 0.1, 1000, 8000}}, {1, {9, 9, 1000, 4000}}},
       {{0, 1000}, {1, 1000}},
       bottleneck(K::Segment, 1, 0.9, "runs on the thread of #4 prefetch"),
       2,
       2,
       1'000'000'000,
       true,
       "cache_after_expensive",
       ""},
      // ---- shuffle_before_decode ----
      {"a shuffle of large elements made by an order-free map",
       "range(100) | map(r => { x: one_hot(r.value, 250000) }) | shuffle(1000, seed = 1) | prefetch(auto)",
       {{0, {0.01, 0.01, 100, 800}}, {1, {2, 2, 100, 100'000'000}}, {2, {0.1, 0.1, 100, 100'000'000}}},
       {},
       bottleneck(K::Segment, 1, 0.9, "runs on the thread of #3 prefetch"),
       2,
       2,
       1'000'000'000,
       true,
       "shuffle_before_decode",
       "#2 shuffle's buffer holds 1000 elements of 1.0 MB (1.0 GB); before #1 map an element is 8 B: shuffle there, "
       "right after #0 range, and the buffer takes 8.0 KB (the maps in between do not depend on the order)"},
      {"a random map keeps the shuffle where it is",
       "range(100) | map(r => { x: random_uniform([250000]) }) | shuffle(1000, seed = 1) | prefetch(auto)",
       {{0, {0.01, 0.01, 100, 800}}, {1, {2, 2, 100, 100'000'000}}, {2, {0.1, 0.1, 100, 100'000'000}}},
       {},
       bottleneck(K::Segment, 1, 0.9, "runs on the thread of #3 prefetch"),
       2,
       2,
       1'000'000'000,
       true,
       "shuffle_before_decode",
       ""},
      {"a small buffer is left alone",
       "range(100) | map(r => { x: one_hot(r.value, 250) }) | shuffle(100, seed = 1) | prefetch(auto)",
       {{0, {0.01, 0.01, 100, 800}}, {1, {2, 2, 100, 100'000}}, {2, {0.1, 0.1, 100, 100'000}}},
       {},
       bottleneck(K::Segment, 1, 0.9, "runs on the thread of #3 prefetch"),
       2,
       2,
       1'000'000'000,
       true,
       "shuffle_before_decode",
       ""},
      // ---- map_after_batch ----
      {"a map before batch in a plan run without every pass",
       "range(1000) | map(r => { x: f32(r.value) * 2.0 }) | batch(8) | prefetch(auto)",
       {{0, {0.2, 0.2, 1000, 8000}}, {1, {0.6, 0.6, 1000, 4000}}, {2, {0.2, 0.2, 125, 4000}}},
       {},
       bottleneck(K::Segment, 1, 0.6, "runs on the thread of #3 prefetch with #0 range and #2 batch"),
       2,
       2,
       1'000'000'000,
       false,
       "map_after_batch",
       "#1 map runs on elements before #2 batch and is 60% of the work; after the batch it would run on whole batches "
       "of 8 (batch | map): run with every optimizer pass (no -O0 or --disable-pass) and it moves"},
      {"a repeat before a random map keeps it before the batch",
       "range(1000) | repeat(2) | map(r => { x: random_uniform([3]) }) | batch(8) | prefetch(auto)",
       {{0, {0.2, 0.2, 2000, 16000}}, {2, {0.6, 0.6, 2000, 24000}}, {3, {0.2, 0.2, 250, 24000}}},
       {},
       bottleneck(K::Segment, 2, 0.6, "runs on the thread of #4 prefetch"),
       2,
       2,
       1'000'000'000,
       true,
       "map_after_batch",
       "#2 map runs on elements before #3 batch and is 60% of the work; after the batch it would run on whole batches "
       "of 8 (batch | map): it stays because a repeat feeds it and it draws random numbers, so one batch could hold "
       "two epochs: put the repeat after the batch and the optimizer moves it"},
      {"a cheap map before batch is left alone",
       "range(1000) | map(r => { x: f32(r.value) * 2.0 }) | batch(8) | prefetch(auto)",
       {{0, {0.6, 0.6, 1000, 8000}}, {1, {0.1, 0.1, 1000, 4000}}, {2, {0.3, 0.3, 125, 4000}}},
       {},
       bottleneck(K::Segment, 0, 0.6, "runs on the thread of #3 prefetch"),
       2,
       2,
       1'000'000'000,
       false,
       "map_after_batch",
       ""},
  };
  return list;
}

RunFacts facts_of(const Scenario& s, const Plan& plan) {
  RunFacts f;
  f.plan = &plan;
  f.stages.resize(plan.stages.size());
  f.pass_elements.resize(plan.stages.size());
  for (const auto& [i, m] : s.stages) f.stages.at(i) = {m.work, m.thread, m.elements, m.bytes};
  for (const auto& [i, n] : s.pass_elements) f.pass_elements.at(i) = n;
  f.bottleneck = s.bottleneck;
  f.threads = s.threads;
  f.cores = s.cores;
  f.memory_budget = s.budget;
  f.all_passes = s.all_passes;
  f.training = s.training;
  return f;
}

TEST(Advice, EachScenarioGetsItsSentence) {
  for (const Scenario& s : scenarios()) {
    SCOPED_TRACE(s.name + ": " + s.pipeline);
    const Plan plan = plan_of("pipeline p = " + s.pipeline + "\n");
    ASSERT_FALSE(plan.stages.empty());
    std::vector<std::string> said;
    for (const Advice& a : advise(facts_of(s, plan)))
      if (a.rule == s.rule) said.push_back(a.text);
    if (s.expected.empty()) {
      EXPECT_TRUE(said.empty()) << said.front();
    } else {
      ASSERT_EQ(said.size(), 1u);
      EXPECT_EQ(said[0], s.expected);
    }
  }
}

// Every rule of advice_rules.def is triggered by a scenario above (and the rules are named once).
TEST(Advice, EveryRuleHasAScenarioThatTriggersIt) {
  std::set<std::string> triggered, names;
  for (const Scenario& s : scenarios())
    if (!s.expected.empty()) triggered.insert(s.rule);
  for (const AdviceRuleInfo& r : advice_rules()) {
    EXPECT_TRUE(names.insert(r.name).second) << r.name << " is listed twice";
    EXPECT_TRUE(triggered.count(r.name)) << "no scenario triggers rule " << r.name;
    EXPECT_NE(std::string(r.lesson).find("seed"), std::string::npos) << r.name << ": its lesson names no seed";
  }
}

// A real run: a deterministic map that is most of the work, repeated, gets the cache advice with the
// size of one pass (2000 f32 results: 8 KB), in the summary and in --stats-json.
TEST(Advice, PipecRunPrintsTheAdviceOfARealRun) {
  ScratchDir d;
  write_file(d / "p.pipe",
             "pipeline p = range(2000)\n"
             "  | map(r => { x: sum(sqrt(one_hot(r.value % 97, 20000) + f32(r.value))) })\n"
             "  | repeat(3)\n");
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--threads", "2", "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("  advice:\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("and gives the same elements every epoch: add cache() after it (needs 8.0 KB; budget"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("[cache_after_expensive]"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(testing::read_all(d / "s.json"));
  bool found = false;
  for (const auto& a : j["advice"])
    if (a["rule"] == "cache_after_expensive") {
      found = true;
      EXPECT_EQ(a["stage"], 1);
    }
  EXPECT_TRUE(found) << j["advice"].dump();
}

}  // namespace
}  // namespace pipec
