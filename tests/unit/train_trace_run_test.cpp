// `pipec run` on a train block with the autotuner's parts: --trace has a span per step on the
// trainer's thread with its input wait, forward, loss, backward and optimizer spans inside it, beside
// the input pipeline's tracks; the summary and --stats-json say how the threads were split between
// the pipeline and the compute and why, and what each `auto` of the pipeline got; a model that waits
// for input gets the input_wait advice; the memory budget bounds the pipeline's buffers; and the
// losses are the same bit for bit whatever the split and the autotuner pick.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

using testing::read_all;
using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;
using Json = nlohmann::json;

const char* kFitSpec = R"(const W = [0.5, -1.0, 2.0, 0.0, 1.0, -0.5, 0.25, 3.0]
pipeline data = range(4096)
  | map(r => {
      x = random_uniform([8], -1.0, 1.0, seed = 1)
      { x, y: [sum(x * W) + 0.5] }
    }, parallel = auto)
  | shuffle(1024, seed = 3)
  | batch(64, drop_remainder = true)
  | prefetch(auto)
model net(x: f32[8]) -> f32[1] { x | dense(16) | relu | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = adam(lr = 0.01), epochs = 5 }
)";

// The same model fed by a map that draws 100,000 numbers per example: the model waits for input.
const char* kSlowInputSpec = R"(const W = [0.5, -1.0, 2.0, 0.0, 1.0, -0.5, 0.25, 3.0]
pipeline data = range(4096)
  | map(r => {
      x = random_uniform([8], -1.0, 1.0, seed = 1)
      n = random_uniform([100000], seed = 2)
      { x, y: [sum(x * W) + 0.5 + 0.0 * sum(n)] }
    }, parallel = auto)
  | batch(64, drop_remainder = true)
  | prefetch(auto)
model net(x: f32[8]) -> f32[1] { x | dense(16) | relu | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = adam(lr = 0.01), steps = 24 }
)";

std::vector<double> losses_of(const Json& stats) { return stats["losses"].get<std::vector<double>>(); }

TEST(TrainTraceRun, EachStepIsASpanWithItsPhasesInsideBesideThePipelinesTracks) {
  ScratchDir d;
  write_file(d / "fit.pipe", kFitSpec);
  auto r = run_pipec(
      {"run", (d / "fit.pipe").string(), "--steps", "20", "--threads", "2", "--trace", (d / "t.json").string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(read_all(d / "t.json"));
  std::map<int, std::string> thread;
  for (const Json& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 1) thread[e["tid"]] = e["args"]["name"];
  struct Span {
    double start, end;
  };
  std::vector<Span> steps;
  std::vector<double> step_numbers;
  std::map<std::string, std::vector<Span>> phases;
  std::set<std::string> phase_threads, stage_threads;
  for (const Json& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const Span s{e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()};
    if (e["cat"] == "train" && e["name"] == "step") {
      steps.push_back(s);
      step_numbers.push_back(e["args"]["step"].get<double>());
    } else if (e["cat"] == "train") {
      phases[e["name"].get<std::string>()].push_back(s);
      phase_threads.insert(thread.at(e["tid"].get<int>()));
    } else if (e["cat"] == "stage") {
      stage_threads.insert(thread.at(e["tid"].get<int>()));
    }
  }
  ASSERT_EQ(steps.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(step_numbers[i], i + 1);
  for (const char* p : {"forward", "loss", "backward", "optimizer"}) EXPECT_EQ(phases[p].size(), 20u) << p;
  // A chunk holds batches: the trainer waits for input at the steps that start a chunk, at least the first.
  EXPECT_GE(phases["input wait"].size(), 1u);
  EXPECT_LE(phases["input wait"].size(), 20u);
  EXPECT_EQ(phase_threads, (std::set<std::string>{"main (trainer)"}));
  // Every phase lies inside one step's span (the trace's microseconds are rounded to 0.001).
  for (const auto& [name, spans] : phases)
    for (const Span& p : spans) {
      bool inside = false;
      for (const Span& s : steps) inside |= p.start >= s.start - 0.002 && p.end <= s.end + 0.002;
      EXPECT_TRUE(inside) << name << " at " << p.start;
    }
  // The pipeline's stages run on its own threads (the prefetch's, the pool's), traced too.
  EXPECT_FALSE(stage_threads.empty());
  EXPECT_TRUE(std::any_of(stage_threads.begin(), stage_threads.end(),
                          [](const std::string& t) { return t.rfind("prefetch", 0) == 0; }));
}

TEST(TrainTraceRun, TheSummarySaysHowTheThreadsWereSplitAndWhatEachAutoGot) {
  ScratchDir d;
  write_file(d / "fit.pipe", kFitSpec);
  auto r = run_pipec(
      {"run", (d / "fit.pipe").string(), "--steps", "200", "--threads", "2", "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex threads_line(
      R"(\n  threads     the pipeline (may use all 2 workers|uses 1 of the 2 workers, the trainer's compute the other 1): [^\n]+\n)");
  EXPECT_TRUE(std::regex_search(r.err, threads_line)) << r.err;
  EXPECT_NE(r.err.find("  input pipeline:\n"), std::string::npos) << r.err;
  const std::regex map_line(R"(\n +#\d+ map +parallel = \d+: [^\n]+\n)");
  EXPECT_TRUE(std::regex_search(r.err, map_line)) << r.err;
  const Json s = Json::parse(read_all(d / "s.json"));
  EXPECT_EQ(s["threads"]["workers"], 2);
  EXPECT_GE(s["threads"]["compute"].get<int>(), 0);
  EXPECT_LE(s["threads"]["compute"].get<int>(), 1);
  // Which sentence depends on how fast the machine runs the steps (a window is 0.2 s at least).
  const std::string reason = s["threads"]["reason"];
  EXPECT_TRUE(reason.find("the model waited for input") != std::string::npos ||
              reason.find("the run ended before a window of steps was measured") != std::string::npos)
      << reason;
  EXPECT_FALSE(s["input_pipeline"]["autotune"]["picks"].empty());
}

TEST(TrainTraceRun, AModelThatWaitsForInputIsToldSoWithTheShareOfEachStep) {
  ScratchDir d;
  write_file(d / "slow.pipe", kSlowInputSpec);
  auto r = run_pipec({"run", (d / "slow.pipe").string(), "--threads", "2", "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex advice(
      R"(- the model waits for input \d+% of each step \([0-9.e-]+ ms of [0-9.e-]+ ms\): the input pipeline limits training[^\n]+ \[input_wait\]\n)");
  EXPECT_TRUE(std::regex_search(r.err, advice)) << r.err;
  const Json s = Json::parse(read_all(d / "s.json"));
  bool said = false;
  for (const Json& a : s["input_pipeline"]["advice"]) said |= a["rule"] == "input_wait";
  EXPECT_TRUE(said) << s["input_pipeline"].dump();
  // The model waits, so the pipeline keeps every worker: 24 steps of milliseconds each make windows.
  EXPECT_EQ(s["threads"]["compute"], 0) << s["threads"].dump();
  const std::string reason = s["threads"]["reason"];
  EXPECT_NE(reason.find("so the pipeline limits training and has every worker"), std::string::npos) << reason;
}

TEST(TrainTraceRun, TheMemoryBudgetBoundsThePipelinesBuffers) {
  ScratchDir d;
  write_file(d / "fit.pipe", kFitSpec);
  auto r = run_pipec({"run", (d / "fit.pipe").string(), "--steps", "40", "--memory-budget", "1M", "--stats-json",
                      (d / "s.json").string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json m = Json::parse(read_all(d / "s.json"))["input_pipeline"]["memory"];
  EXPECT_EQ(m["budget_bytes"], 1 << 20);
  EXPECT_GT(m["peak_bytes"].get<uint64_t>(), 0u);
  EXPECT_LE(m["peak_bytes"].get<uint64_t>(), 1u << 20);
}

TEST(TrainTraceRun, LossesAreTheSameBitForBitWhateverTheSplitAndTheTunerPick) {
  ScratchDir d;
  write_file(d / "fit.pipe", kFitSpec);
  std::vector<std::vector<double>> runs;
  const std::vector<std::vector<std::string>> variants = {
      {"--threads", "2"},
      {"--threads", "2", "--no-autotune"},
      {"--threads", "2", "--auto-value", "parallel=1", "--auto-value", "prefetch=1"},
      {"--threads", "1"}};
  for (const auto& v : variants) {
    const std::string json = (d / ("s" + std::to_string(runs.size()) + ".json")).string();
    std::vector<std::string> args = {
        "run", (d / "fit.pipe").string(), "--steps", "80", "--seed", "4", "--stats-json", json, "-q"};
    args.insert(args.end(), v.begin(), v.end());
    auto r = run_pipec(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    runs.push_back(losses_of(Json::parse(read_all(json))));
    ASSERT_EQ(runs.back().size(), 80u);
  }
  for (size_t i = 1; i < runs.size(); ++i) EXPECT_EQ(runs[i], runs[0]) << "variant " << i;
}

}  // namespace
}  // namespace pipec
