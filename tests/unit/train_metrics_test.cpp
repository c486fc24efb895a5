// pipec run --metrics FILE: one JSON line per step with the step, its loss (the value --stats-json
// lists), the learning rate the schedule gave it, the loss scale, examples/s and the input wait so far;
// and --logdir DIR's event files and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/io/tfrecord_reader.h"
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

// --logdir on a training run: DIR/train holds one event file, the file version first, then an event per
// step and per epoch (the records checked by the runtime's TFRecord reader; their content by
// train_tensorboard_python with TensorBoard's own reader).
TEST(TrainMetrics, LogdirHasAnEventPerStepAndEpoch) {
  ScratchDir d;
  write_file(d / "w.pipe",
             R"(pipeline data = range(64) | map(r => { x: random_uniform([1], seed = 2), y: [1.0] }) | batch(8)
model net(x: f32[1]) -> f32[1] { x | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = sgd(), epochs = 2 }
)");
  auto r = run_pipec({"run", (d / "w.pipe").string(), "--logdir", (d / "logs").string(), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(d / "logs" / "train")) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].filename().string().rfind("events.out.tfevents.", 0), 0u) << files[0];
  EXPECT_FALSE(std::filesystem::exists(d / "logs" / "validation"));  // no validation, no folder
  pipec::TFRecordReader reader(files[0].string());
  std::string_view record;
  std::vector<std::string> records;
  while (reader.next(record)) records.emplace_back(record);
  ASSERT_EQ(records.size(), 1u + 16u + 2u);  // the file version, 8 steps an epoch, 2 epoch ends
  EXPECT_NE(records[0].find("brain.Event:2"), std::string::npos);
  EXPECT_NE(records[1].find("batch_loss"), std::string::npos);
  EXPECT_NE(records[9].find("epoch_loss"), std::string::npos);  // after step 8
}

TEST(TrainMetrics, ALogdirThatCannotBeMadeStopsBeforeTheRun) {
  ScratchDir d;
  write_file(d / "w.pipe",
             R"(pipeline data = range(64) | map(r => { x: random_uniform([1], seed = 2), y: [1.0] }) | batch(8)
model net(x: f32[1]) -> f32[1] { x | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = sgd(), steps = 2 }
)");
  write_file(d / "plain", "a file, not a folder");
  for (const char* what : {"--train", "--pipeline"}) {
    std::vector<std::string> args = {"run", (d / "w.pipe").string(), "--logdir", (d / "plain" / "logs").string()};
    if (std::string(what) == "--pipeline") args.insert(args.end(), {"--pipeline", "data"});
    auto r = run_pipec(args);
    EXPECT_EQ(r.exit_code, 2) << what << "\n" << r.err;
    EXPECT_NE(r.err.find("--logdir"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find((d / "plain" / "logs").string()), std::string::npos) << r.err;
  }
}
