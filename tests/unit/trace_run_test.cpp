// `pipec run --trace FILE.json` and `--explain-autotune` end to end: the trace is valid JSON with a
// track per thread (the consumer, the prefetch thread, the pool's workers), a span per chunk per stage
// on the thread that pulled it, task spans and the prefetch queue's depth as a counter; the summary says what the
// autotuner picked for every `auto` parameter and why, and --explain-autotune adds its model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <regex>
#include <set>

#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;
using Json = nlohmann::json;

// The map after the prefetch is the consumer's work between chunks (a sum of 2,000 draws per row), far
// more than the stages before the prefetch cost, so the prefetch's thread starts after its first
// window of chunks pulled inline (runtime/exec/stages/stage_prefetch.cpp).
const char* kSpec =
    "pipeline p = range(20000)\n"
    "  | map(r => { x: f32(r.value) * 2.0, y: sqrt(f32(r.value)) }, parallel = auto)\n"
    "  | batch(100)\n"
    "  | prefetch(auto)\n"
    "  | map(r => { x: r.x, z: sum(random_uniform([100, 2000])) + r.y[0] }, parallel = 1)\n";

TEST(TraceRun, TheFileHasATrackPerThreadASpanPerChunkPerStageAndQueueCounters) {
  ScratchDir d;
  write_file(d / "p.pipe", kSpec);
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--threads", "2", "--trace", (d / "t.json").string(), "--quiet",
                      "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(testing::read_all(d / "t.json"));  // throws (fails the test) when not JSON
  const Json stats = Json::parse(testing::read_all(d / "s.json"));
  std::map<int, std::string> thread;  // tid -> name, for the CPU threads (pid 1)
  for (const Json& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 1) thread[e["tid"]] = e["args"]["name"];
  std::set<std::string> names;
  for (const auto& [tid, name] : thread) names.insert(name);
  EXPECT_TRUE(names.count("main (consumer)"));
  // The plan's stages, as the summary numbers them.
  std::map<std::string, uint64_t> chunks_out;  // "#1 map" -> chunks the stage produced
  std::string prefetch_label, input_label;     // the prefetch, the stage before it
  int prefetch_index = -1;
  for (const Json& s : stats["stages"]) {
    const std::string label = "#" + std::to_string(s["index"].get<int>()) + " " + s["op"].get<std::string>();
    chunks_out[label] = 0;
    // The spec's own (the optimizer adds one at the end too).
    if (s["op"] == "prefetch" && prefetch_index < 0) prefetch_label = label, prefetch_index = s["index"].get<int>();
    if (prefetch_index < 0) input_label = label;
  }
  ASSERT_FALSE(prefetch_label.empty());
  EXPECT_TRUE(names.count("prefetch " + prefetch_label.substr(0, prefetch_label.find(' '))));
  EXPECT_TRUE(names.count("pool worker 0") || names.count("pool worker 1"));
  std::map<std::string, std::set<std::string>> span_threads;  // span name -> threads it ran on
  std::map<std::string, uint64_t> chunks_pulled_by_consumer;  // span name -> its chunks on the consumer's thread
  int counters = 0, queue_counters = 0, tasks = 0;
  const std::string prefetch_thread = "prefetch " + prefetch_label.substr(0, prefetch_label.find(' '));
  for (const Json& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "stage") {
      const std::string name = e["name"];
      ASSERT_TRUE(chunks_out.count(name)) << name;
      if (e["args"]["rows"].get<int64_t>() > 0) ++chunks_out[name];
      span_threads[name].insert(thread.at(e["tid"].get<int>()));
      if (e["args"]["rows"].get<int64_t>() > 0 && thread.at(e["tid"].get<int>()) == "main (consumer)")
        ++chunks_pulled_by_consumer[name];
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
    if (e["ph"] == "X" && e["cat"] == "task") {
      // On a pool worker, or on the thread that pulls from the map: when the tuner has made it run
      // inline (parallel = 1: a slow machine, or a sanitizer build, can make it choose that), or while
      // that thread waits for a result (ThreadPool::wait_helping). That is the prefetch's thread, or
      // the consumer's once the prefetch pulls through on it.
      ++tasks;
      const std::string& t = thread.at(e["tid"].get<int>());
      EXPECT_TRUE(t.rfind("pool worker", 0) == 0 || t == prefetch_thread || t == "main (consumer)") << e.dump();
    }
    if (e["ph"] == "C") {
      // The prefetches' queue depths, and the memory the stages hold once the tuner has sampled it.
      ++counters;
      queue_counters += e["name"] == prefetch_label + " queue";
      const std::string name = e["name"];
      EXPECT_TRUE(name.ends_with("prefetch queue") || name == "memory held (MB)") << e.dump();
    }
  }
  // Every stage has a span per chunk it produced: the prefetch 200 batches, one per chunk.
  for (const auto& [label, n] : chunks_out) EXPECT_GT(n, 0u) << label << " has no span";
  EXPECT_EQ(chunks_out[prefetch_label], 200u);
  // The prefetch's spans are on the consumer's thread; the stages before it on the prefetch's, but for
  // the chunks the consumer pulled through itself (the first window: a run starts inline, and this
  // consumer works between chunks, so the thread then starts). Its input's spans on the consumer's
  // thread are those chunks.
  EXPECT_EQ(span_threads[prefetch_label], (std::set<std::string>{"main (consumer)"}));
  EXPECT_TRUE(span_threads["#0 range"].count(prefetch_thread));
  for (const std::string& t : span_threads["#0 range"])
    EXPECT_TRUE(t == prefetch_thread || t == "main (consumer)") << t;
  const uint64_t inlined = stats["stages"][prefetch_index]["inline_chunks"].get<uint64_t>();
  EXPECT_EQ(chunks_pulled_by_consumer[input_label], inlined);
  EXPECT_GT(inlined, 0u);
  EXPECT_LT(inlined, 100u) << "the consumer works: the thread should pull most chunks";
  EXPECT_GT(tasks, 0);
  EXPECT_GT(counters, 0);
  EXPECT_GT(queue_counters, 0);
}

TEST(TraceRun, AFileThatCannotBeWrittenIsAnIoError) {
  ScratchDir d;
  write_file(d / "p.pipe", kSpec);
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--trace", (d / "no/such/dir/t.json").string(), "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot write"), std::string::npos) << r.err;
}

// Long enough for the autotuner to decide at least once (it decides every 40 ms or so): some 0.2 s a run
// on a fast 2-core machine, where 400,000 elements had sometimes ended before the first decision.
const char* kLongSpec =
    "pipeline p = range(2_000_000)\n"
    "  | map(r => { x: f32(r.value) * 2.0, y: sqrt(one_hot(r.value % 10, 64) + f32(r.value)) }, parallel = auto)\n"
    "  | batch(100)\n"
    "  | prefetch(auto)\n";

TEST(ExplainAutotune, TheSummarySaysWhatEachAutoParameterGotAndWhy) {
  ScratchDir d;
  write_file(d / "p.pipe", kLongSpec);
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // One line per `auto`: the value, then a sentence with a reason after the semicolon.
  const std::regex map_line(R"(\n    #\d+ map +parallel = \d+: [^\n]+; [^\n]+\n)");
  const std::regex prefetch_line(R"(\n    #\d+ prefetch +size = \d+: the stages before it make [^\n]+; [^\n]+\n)");
  EXPECT_TRUE(std::regex_search(r.err, map_line)) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, prefetch_line)) << r.err;
  EXPECT_EQ(r.err.find("the model over the whole run"), std::string::npos);
  auto e = run_pipec({"run", (d / "p.pipe").string(), "--threads", "2", "--explain-autotune"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  // The pool's workers that take tasks: all of them, or as many as the tuner keeps (choose_workers).
  EXPECT_TRUE(std::regex_search(
      e.err,
      std::regex(
          R"(the model over the whole run \(2 threads for the pipeline(, 1 taking its tasks)?; per output element\):)")))
      << e.err;
  const std::regex pool_line(
      R"(\n    pool +workers = [12]: ([12] of 2 take its tasks; one more would add [0-9.]+% to what the pipeline can make|all 2 take its tasks)\n)");
  EXPECT_TRUE(std::regex_search(r.err, pool_line)) << r.err;
  EXPECT_TRUE(e.err.find("  changes:\n") != std::string::npos ||
              e.err.find("no parameter changed") != std::string::npos)
      << e.err;
  // --stats-json has the workers too: of the 2 threads, at least one takes tasks.
  auto j = run_pipec({"run", (d / "p.pipe").string(), "--threads", "2", "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const Json workers = Json::parse(testing::read_all(d / "s.json"))["autotune"]["workers"];
  EXPECT_EQ(workers["of"], 2) << workers.dump();
  EXPECT_GE(workers["value"].get<int>(), 1) << workers.dump();
  EXPECT_LE(workers["value"].get<int>(), 2) << workers.dump();
  EXPECT_TRUE(workers["reason"].is_string()) << workers.dump();
  // --no-autotune keeps the starting values and says so; --auto-value fixes them.
  auto off = run_pipec({"run", (d / "p.pipe").string(), "--threads", "2", "--no-autotune"});
  EXPECT_NE(off.err.find("parallel = 4: autotuning is off: the starting value"), std::string::npos) << off.err;
  auto fixed = run_pipec({"run", (d / "p.pipe").string(), "--threads", "2", "--auto-value", "prefetch=7"});
  EXPECT_NE(fixed.err.find("size = 7: set by --auto-value"), std::string::npos) << fixed.err;
  auto bad = run_pipec({"run", (d / "p.pipe").string(), "--auto-value", "prefetch=0"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("must be parallel=N, prefetch=N or read_ahead=N, not `prefetch=0`"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace pipec
