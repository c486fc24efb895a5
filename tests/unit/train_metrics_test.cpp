// pipec run --metrics FILE: one JSON line per step with the step, its loss (the value --stats-json
// lists), the learning rate the schedule gave it, the loss scale, examples/s and the input wait so far.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/unit/cli_util.h"

using pipec::testing::read_all;
using pipec::testing::run_pipec;
using pipec::testing::ScratchDir;
using pipec::testing::write_file;

TEST(TrainMetrics, OneJsonLinePerStepWithTheScheduledLearningRate) {
  ScratchDir d;
  write_file(d / "w.pipe", R"(pipeline data = range(1024)
  | map(r => {
      x = random_uniform([4], -1.0, 1.0, seed = 1)
      { x, y: [sum(x)] }
    })
  | batch(32, drop_remainder = true)
model net(x: f32[4]) -> f32[1] { x | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = sgd(lr = linear_warmup(0.4, 4)), steps = 6 }
)");
  auto r = run_pipec({"run", (d / "w.pipe").string(), "--metrics", (d / "m.jsonl").string(), "--stats-json",
                      (d / "s.json").string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto stats = nlohmann::json::parse(read_all(d / "s.json"));
  std::istringstream lines(read_all(d / "m.jsonl"));
  std::string line;
  int n = 0;
  double wait = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    ++n;
    EXPECT_EQ(j["step"].get<int>(), n);
    EXPECT_EQ(j["loss"].get<double>(), stats["losses"][n - 1].get<double>()) << line;
    // linear_warmup(0.4, 4): 0, 0.1, 0.2, 0.3, then 0.4 (the schedule at the steps taken before).
    EXPECT_NEAR(j["lr"].get<double>(), 0.1 * std::min(n - 1, 4), 1e-15) << line;
    EXPECT_EQ(j["loss_scale"].get<double>(), 1.0);
    EXPECT_GT(j["examples_per_second"].get<double>(), 0.0);
    EXPECT_GE(j["input_wait_seconds"].get<double>(), wait);
    wait = j["input_wait_seconds"].get<double>();
  }
  EXPECT_EQ(n, 6);
}

TEST(TrainMetrics, AFileThatCannotBeWrittenStopsBeforeTraining) {
  ScratchDir d;
  write_file(d / "w.pipe",
             R"(pipeline data = range(64) | map(r => { x: random_uniform([1], seed = 2), y: [1.0] }) | batch(8)
model net(x: f32[1]) -> f32[1] { x | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = sgd(), steps = 2 }
)");
  auto r = run_pipec({"run", (d / "w.pipe").string(), "--metrics", (d / "no/such/dir/m.jsonl").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot write"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("m.jsonl"), std::string::npos) << r.err;
}
