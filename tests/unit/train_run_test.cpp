// `pipec run` on specs with a train block, end to end: the loss of a model fitting a known function goes
// down, runs are deterministic (same seed, any thread count), --steps/--epochs, --save/--init round
// trips, bad data and a diverging loss stop with errors that name the step, and `--pipeline` / `--take`
// still run the pipeline.
#include <gtest/gtest.h>

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>

#include <nlohmann/json.hpp>

#include "runtime/train/dnnl/cpu_kernels.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

using testing::read_all;
using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;
namespace fs = std::filesystem;

// y = x . W + 0.5 for x uniform in [-1, 1]^8: 64 batches of 64 per epoch.
const char* kFitSpec = R"(const W = [0.5, -1.0, 2.0, 0.0, 1.0, -0.5, 0.25, 3.0]
pipeline data = range(4096)
  | map(r => {
      x = random_uniform([8], -1.0, 1.0, seed = 1)
      { x, y: [sum(x * W) + 0.5] }
    })
  | shuffle(1024, seed = 3)
  | batch(64, drop_remainder = true)
model net(x: f32[8]) -> f32[1] { x | dense(16) | relu | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = adam(lr = 0.01), epochs = 5 }
)";

// The losses a run wrote with --stats-json, as their exact text (17 significant digits).
std::vector<std::string> losses_of(const fs::path& json) {
  std::string text = read_all(json);
  std::smatch m;
  std::regex list(R"("losses": \[([^\]]*)\])");
  EXPECT_TRUE(std::regex_search(text, m, list)) << text;
  std::vector<std::string> out;
  std::string body = m[1];
  std::regex number(R"([-0-9.eE+]+|nan|inf)");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), number); it != std::sregex_iterator(); ++it)
    out.push_back(it->str());
  return out;
}

TEST(TrainRun, LossOfAKnownFunctionGoesDown) {
  ScratchDir d;
  write_file(d / "fit.pipe", kFitSpec);
  auto r = run_pipec({"run", (d / "fit.pipe").string(), "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto losses = losses_of(d / "s.json");
  ASSERT_EQ(losses.size(), 320u);  // 64 batches an epoch, 5 epochs
  double first = std::stod(losses.front());
  double mean_last = 0;
  for (size_t i = losses.size() - 20; i < losses.size(); ++i) mean_last += std::stod(losses[i]) / 20;
  // The target has variance ~7.4 around its mean; after 320 Adam steps the fit is within a few percent.
  EXPECT_GT(first, 2.0);
  EXPECT_LT(mean_last, 0.05 * first) << "first " << first << ", mean of the last 20 " << mean_last;
  EXPECT_NE(r.err.find("train fit: 320 steps (20,480 examples)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("input wait"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("backward"), std::string::npos) << r.err;
}

TEST(TrainRun, SameSeedSameLossesBitForBitOnAnyThreadCount) {
  ScratchDir d;
  write_file(d / "fit.pipe", kFitSpec);
  std::vector<std::vector<std::string>> runs;
  for (const char* threads : {"1", "2", "1"}) {
    fs::path json = d / (std::string("s") + std::to_string(runs.size()) + ".json");
    auto r = run_pipec({"run", (d / "fit.pipe").string(), "--steps", "40", "--seed", "9", "--threads", threads,
                        "--stats-json", json.string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    runs.push_back(losses_of(json));
    ASSERT_EQ(runs.back().size(), 40u);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
  auto other = run_pipec({"run", (d / "fit.pipe").string(), "--steps", "40", "--seed", "10", "--stats-json",
                          (d / "o.json").string(), "-q"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(losses_of(d / "o.json"), runs[0]) << "the seed keys the initial weights";
}

TEST(TrainRun, StepsAndEpochsOverrideTheBlock) {
  ScratchDir d;
  write_file(d / "fit.pipe", kFitSpec);
  auto steps =
      run_pipec({"run", (d / "fit.pipe").string(), "--steps", "100", "--stats-json", (d / "a.json").string(), "-q"});
  ASSERT_EQ(steps.exit_code, 0) << steps.err;
  EXPECT_EQ(losses_of(d / "a.json").size(), 100u);  // more than one epoch: the data starts over
  auto epochs =
      run_pipec({"run", (d / "fit.pipe").string(), "--epochs", "2", "--stats-json", (d / "b.json").string(), "-q"});
  ASSERT_EQ(epochs.exit_code, 0) << epochs.err;
  EXPECT_EQ(losses_of(d / "b.json").size(), 128u);
  auto both = run_pipec({"run", (d / "fit.pipe").string(), "--epochs", "3", "--steps", "5", "--stats-json",
                         (d / "c.json").string(), "-q"});
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_EQ(losses_of(d / "c.json").size(), 15u);  // steps per epoch
}

// With plain SGD (no optimizer state) and unshuffled data of exactly 10 batches that are the same in
// every epoch (no random ops: those draw anew each epoch), training 10 steps,
// saving, and training 10 more from the saved weights gives the same losses as 20 steps in one run.
TEST(TrainRun, SaveAndInitContinueExactly) {
  ScratchDir d;
  write_file(d / "fit.pipe", R"(pipeline data = range(640)
  | map(r => {
      v = f32(r.value)
      x = [sin(v), cos(0.7 * v), sin(1.3 * v), cos(0.1 * v)]
      { x, y: [x[0] - 2.0 * x[3]] }
    })
  | batch(64)
model net(x: f32[4]) -> f32[1] { x | dense(8) | tanh | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = sgd(lr = 0.1), steps = 20 }
)");
  auto whole = run_pipec({"run", (d / "fit.pipe").string(), "--stats-json", (d / "whole.json").string(), "-q"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  auto first =
      run_pipec({"run", (d / "fit.pipe").string(), "--steps", "10", "--save", (d / "w.safetensors").string(), "-q"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(fs::exists(d / "w.safetensors"));
  auto second = run_pipec({"run", (d / "fit.pipe").string(), "--steps", "10", "--init", (d / "w.safetensors").string(),
                           "--stats-json", (d / "second.json").string()});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("started from"), std::string::npos) << second.err;
  auto all = losses_of(d / "whole.json");
  ASSERT_EQ(all.size(), 20u);
  EXPECT_EQ(losses_of(d / "second.json"), std::vector<std::string>(all.begin() + 10, all.end()));
}

TEST(TrainRun, InitFromWeightsOfAnotherModelIsAClearError) {
  ScratchDir d;
  write_file(d / "fit.pipe", kFitSpec);
  std::string other = std::regex_replace(std::string(kFitSpec), std::regex("dense\\(16\\)"), "dense(12)");
  write_file(d / "other.pipe", other);
  ASSERT_EQ(
      run_pipec({"run", (d / "other.pipe").string(), "--steps", "1", "--save", (d / "w.safetensors").string(), "-q"})
          .exit_code,
      0);
  auto r =
      run_pipec({"run", (d / "fit.pipe").string(), "--steps", "1", "--init", (d / "w.safetensors").string(), "-q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("`dense/kernel` is [8, 12] in the file but [8, 16] in the model"), std::string::npos) << r.err;
  write_file(d / "junk.safetensors", "not weights");
  auto junk =
      run_pipec({"run", (d / "fit.pipe").string(), "--steps", "1", "--init", (d / "junk.safetensors").string(), "-q"});
  EXPECT_EQ(junk.exit_code, 2);
  EXPECT_NE(junk.err.find("not a safetensors file"), std::string::npos) << junk.err;
}

// --save into a directory that does not exist: said before the first step (--stats-json, which is
// written at the end of a run, stays unwritten), and no directory is made.
TEST(TrainRun, SaveIntoAMissingDirectoryStopsBeforeTraining) {
  ScratchDir d;
  write_file(d / "fit.pipe", kFitSpec);
  auto r = run_pipec({"run", (d / "fit.pipe").string(), "--steps", "2", "--save",
                      (d / "no/such/w.safetensors").string(), "--stats-json", (d / "s.json").string(), "-q"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--save: cannot write"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no such directory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "s.json"));
  EXPECT_FALSE(fs::exists(d / "no"));
  auto ok =
      run_pipec({"run", (d / "fit.pipe").string(), "--steps", "2", "--save", (d / "w.safetensors").string(), "-q"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(fs::exists(d / "w.safetensors"));
}

TEST(TrainRun, NonFiniteInputNamesTheFieldAndElement) {
  ScratchDir d;
  write_file(d / "p.pipe", R"(pipeline data = range(256)
  | map(r => { x: [1.0, 2.0, where(r.value == 100, log(0.0 * f32(r.value)), 1.0)], y: [1.0] })
  | batch(16)
model net(x: f32[3]) -> f32[1] { x | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd() }
)");
  auto r = run_pipec({"run", (d / "p.pipe").string(), "-q"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("step 7: field `x` is -inf at example 4 of the batch, element [2]"), std::string::npos) << r.err;
}

TEST(TrainRun, DivergingLossStopsNamingTheStep) {
  ScratchDir d;
  write_file(d / "p.pipe", R"(pipeline data = range(4096)
  | map(r => { x: random_uniform([4], -1.0, 1.0), y: [10.0] })
  | batch(32)
model net(x: f32[4]) -> f32[1] { x | dense(4) | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(lr = 1e18) }
)");
  auto r = run_pipec({"run", (d / "p.pipe").string(), "-q"});
  EXPECT_EQ(r.exit_code, 1);
  std::smatch m;
  EXPECT_TRUE(std::regex_search(r.err, m, std::regex("step ([0-9]+): the loss is (NaN|infinite)"))) << r.err;
}

TEST(TrainRun, PipelineFlagsStillRunThePipeline) {
  ScratchDir d;
  write_file(d / "fit.pipe", kFitSpec);
  auto take = run_pipec({"run", (d / "fit.pipe").string(), "--take", "3"});
  ASSERT_EQ(take.exit_code, 0) << take.err;
  EXPECT_NE(take.err.find("pipeline data: 3 batches"), std::string::npos) << take.err;
  auto named = run_pipec({"run", (d / "fit.pipe").string(), "--pipeline", "data"});
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_NE(named.err.find("pipeline data: 64 batches"), std::string::npos) << named.err;
  auto mixed = run_pipec({"run", (d / "fit.pipe").string(), "--take", "3", "--train", "fit"});
  EXPECT_EQ(mixed.exit_code, 2);
}

TEST(TrainRun, SeveralTrainBlocksNeedTrain) {
  ScratchDir d;
  write_file(d / "fit.pipe",
             std::string(kFitSpec) +
                 "train other = { data = data, model = net(x), loss = mae(y), optimizer = sgd(), steps = 3 }\n");
  auto r = run_pipec({"run", (d / "fit.pipe").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("choose one with --train: fit other"), std::string::npos) << r.err;
  auto named =
      run_pipec({"run", (d / "fit.pipe").string(), "--train", "other", "--stats-json", (d / "s.json").string(), "-q"});
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(losses_of(d / "s.json").size(), 3u);
  auto wrong = run_pipec({"run", (d / "fit.pipe").string(), "--train", "nope"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("no train block named `nope`"), std::string::npos) << wrong.err;
}

// examples/chess/chess.pipe as written, on a little of its own sample data with batches of 16: it
// trains (the reference executor, in fp32 on one CPU, which the summary says since the spec asks for
// mixed_bf16 on mirrored GPUs).
TEST(TrainRun, ChessExampleTrains) {
  ScratchDir d;
  std::string make = read_all(fs::path(PIPEC_SOURCE_DIR) / "examples/chess/make_data.pipe");
  std::string chess = read_all(fs::path(PIPEC_SOURCE_DIR) / "examples/chess/chess.pipe");
  std::string small_make = std::regex_replace(make, std::regex("const RECORDS = [0-9_]+"), "const RECORDS = 1_500");
  std::string small_chess = std::regex_replace(chess, std::regex("const BATCH = [0-9_]+"), "const BATCH = 16");
  ASSERT_NE(small_make, make);
  ASSERT_NE(small_chess, chess);
  write_file(d / "make_data.pipe", small_make);
  write_file(d / "chess.pipe", small_chess);
  ASSERT_EQ(run_pipec({"run", (d / "make_data.pipe").string(), "-q"}).exit_code, 0);
  auto r = run_pipec({"run", (d / "chess.pipe").string(), "--steps", "3", "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(losses_of(d / "s.json").size(), 3u);
  EXPECT_NE(r.err.find("train chess: 3 steps (48 examples)"), std::string::npos) << r.err;
  // The example trains in mixed_bf16: on bf16 kernels where the CPU has them, emulated elsewhere.
  EXPECT_NE(r.err.find("precision   mixed_bf16: operands rounded to bf16 where a GPU casts, " +
                       testing::cpu_bf16_precision_text()),
            std::string::npos)
      << r.err;
  auto explain = run_pipec({"explain", (d / "chess.pipe").string()});
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_NE(explain.out.find("1,102,465 parameters"), std::string::npos) << explain.out;
}

// --conv: conv2d by Winograd where oneDNN has it (the default, on AVX-512 CPUs) or by the direct
// algorithm. The summary says which each run got; Winograd's runs repeat bit for bit (a checkpoint's
// resume relies on it) and stay within rounding of the direct algorithm's losses.
TEST(TrainRun, ConvAlgorithmIsChosenSaidAndDeterministic) {
  ScratchDir d;
  write_file(d / "conv.pipe", R"(pipeline data = range(512)
  | map(r => {
      image = random_uniform([8, 8, 16], 0.0, 1.0, seed = 1)
      { image, y: [mean(image) * 2.0 - 1.0] }
    })
  | batch(64, drop_remainder = true)
model net(image: f32[8, 8, 16]) -> f32[1] { image | conv2d(32, 3, padding = same) | relu | flatten | dense(1) }
train t = { data = data, model = net(image), loss = mse(y), optimizer = adam(lr = 1e-3), steps = 6 }
)");
  std::map<std::string, std::vector<std::string>> losses;
  for (const char* run : {"auto", "direct", "auto again"}) {
    const std::string conv = std::string(run).substr(0, std::string(run).find(' '));
    fs::path json = d / (conv + std::to_string(losses.size()) + ".json");
    auto r =
        run_pipec({"run", (d / "conv.pipe").string(), "--conv", conv, "--threads", "2", "--stats-json", json.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    losses[run] = losses_of(json);
    ASSERT_EQ(losses[run].size(), 6u);
    const bool winograd = conv == "auto" && train::CpuKernels::isa().rfind("avx512_core", 0) == 0;
    EXPECT_NE(r.err.find(winograd ? "conv2d by Winograd" : "conv2d direct"), std::string::npos)
        << run << " on " << train::CpuKernels::isa() << ": " << r.err;
  }
  EXPECT_EQ(losses["auto"], losses["auto again"]);
  for (size_t i = 0; i < 6; ++i) {
    const double a = std::stod(losses["auto"][i]), b = std::stod(losses["direct"][i]);
    EXPECT_NEAR(a, b, 1e-5 * std::abs(b)) << "step " << i + 1;
  }
  auto bad = run_pipec({"run", (d / "conv.pipe").string(), "--conv", "fft"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--conv"), std::string::npos) << bad.err;
}

// 100 examples in batches of 32: three full batches and one of 4 per epoch, each a step (the loss is the
// mean over the batch it gets).
TEST(TrainRun, LastShortBatchIsAStep) {
  ScratchDir d;
  write_file(d / "p.pipe", R"(pipeline data = range(100) | map(r => { x: [f32(r.value) / 100.0], y: [1.0] }) | batch(32)
model net(x: f32[1]) -> f32[1] { x | dense(1) }
train t = { data = data, model = net(x), loss = mae(y), optimizer = sgd(), epochs = 2 }
)");
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(losses_of(d / "s.json").size(), 8u);
  EXPECT_NE(r.err.find("train t: 8 steps (200 examples)"), std::string::npos) << r.err;
}

// On a terminal: a progress line with step / total (known once the first epoch ends), the smoothed
// loss, examples/s, the share of time waiting for input and the ETA, redrawn in place.
TEST(TrainRun, ProgressLineOnATerminal) {
  ScratchDir d;
  write_file(d / "fit.pipe", kFitSpec);
  std::string spec = (d / "fit.pipe").string();
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(PIPEC_BINARY, "pipec", "run", spec.c_str(), "--epochs", "150", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child has exited
    out.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(master);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(
      out, m,
      std::regex(
          R"(\rstep [0-9,]+/9,600  loss [0-9.e+-]+  [0-9,]+ ex/s  input [0-9.]+%  elapsed [0-9:]+  ETA [0-9:]+)")))
      << out;
  EXPECT_NE(out.find("train fit: 9,600 steps"), std::string::npos) << out;
  // Each epoch's line replaces the progress line, which the next step draws again below it.
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(\r\x1b\[KEpoch 1/150  loss [-0-9.e+]+  [0-9.]+ s\r?\n)"))) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(Epoch 150/150  loss [-0-9.e+]+  [0-9.]+ s\r?\n)"))) << out;
}

// A block that counts epochs prints Keras' line at the end of each: its mean loss, its evaluation (run at
// every epoch's end, as fit() validates) and its time; --stats-json lists the same epochs.
TEST(TrainRun, EpochLinesAsKerasPrintsThem) {
  ScratchDir d;
  write_file(d / "e.pipe", R"(pipeline data = range(256)
  | map(r => { x = random_uniform([4], -1.0, 1.0, seed = 1); { x, label: i64(x[0] + x[1] > 0.0) } })
  | shuffle(64, seed = 2)
  | batch(32, drop_remainder = true)
pipeline held_out = range(40)
  | map(r => { x = random_uniform([4], -1.0, 1.0, seed = 2); { x, label: i64(x[0] + x[1] > 0.0) } })
  | batch(16)
model net(x: f32[4]) -> f32[2] { x | dense(8) | relu | dense(2) | softmax }
train t = {
  data = data, model = net(x), loss = cross_entropy(label), optimizer = adam(lr = 0.05), epochs = 3
  validation = held_out, eval_every = 5, metrics = [accuracy]
}
)");
  auto r = run_pipec({"run", (d / "e.pipe").string(), "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto stats = nlohmann::json::parse(read_all(d / "s.json"));
  const auto& losses = stats["losses"];
  ASSERT_EQ(losses.size(), 24u);  // 8 steps an epoch
  // Evaluations every 5 steps and at each epoch's end (8, 16, 24).
  std::vector<int> eval_steps;
  for (const auto& v : stats["validation"]) eval_steps.push_back(v["step"].get<int>());
  EXPECT_EQ(eval_steps, (std::vector<int>{5, 8, 10, 15, 16, 20, 24})) << stats["validation"].dump();
  std::regex line_re(
      R"((?:^|\n)Epoch (\d+)/3  loss ([-0-9.e+]+)  val_loss ([-0-9.e+]+)  val_accuracy ([-0-9.e+]+)  ([0-9.]+) s(?=\n))");
  int epochs = 0;
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), line_re); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    ++epochs;
    EXPECT_EQ(std::stoi(m[1]), epochs) << r.err;
    double mean = 0;
    for (int s = 8 * (epochs - 1); s < 8 * epochs; ++s) mean += losses[s].get<double>();
    mean /= 8;
    EXPECT_NEAR(std::stod(m[2]), mean, 1e-3 * std::abs(mean)) << m.str();
    const auto& v = stats["validation"][std::vector<size_t>{1, 4, 6}[static_cast<size_t>(epochs - 1)]];
    EXPECT_NEAR(std::stod(m[3]), v["loss"].get<double>(), 1e-3 * v["loss"].get<double>()) << m.str();
    EXPECT_NEAR(std::stod(m[4]), v["accuracy"].get<double>(), 1e-3) << m.str();
    // The same epoch in --stats-json, figures exact.
    const auto& e = stats["epochs"][static_cast<size_t>(epochs - 1)];
    EXPECT_EQ(e["epoch"].get<int>(), epochs);
    EXPECT_EQ(e["steps"].get<int>(), 8);
    EXPECT_EQ(e["step"].get<int>(), 8 * epochs);
    EXPECT_DOUBLE_EQ(e["loss"].get<double>(), mean);
    EXPECT_EQ(e["val_loss"].get<double>(), v["loss"].get<double>());
    EXPECT_NEAR(e["seconds"].get<double>(), std::stod(m[5]), 0.051);
  }
  EXPECT_EQ(epochs, 3) << r.err;
  // Before the summary, which says the run's end.
  EXPECT_LT(r.err.find("Epoch 3/3"), r.err.find("train t: 24 steps")) << r.err;
  // -q: no epoch lines either.
  auto quiet = run_pipec({"run", (d / "e.pipe").string(), "-q"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("Epoch "), std::string::npos) << quiet.err;
}

// --steps with --epochs: `steps` per epoch (Keras' steps_per_epoch); without validation, no val_ figures.
// --steps alone counts no epochs: no epoch lines.
TEST(TrainRun, EpochLinesOfStepsPerEpochAndNoneWithoutEpochs) {
  ScratchDir d;
  write_file(d / "fit.pipe", kFitSpec);
  auto both = run_pipec({"run", (d / "fit.pipe").string(), "--epochs", "2", "--steps", "3"});
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_TRUE(std::regex_search(
      both.err, std::regex(R"((^|\n)Epoch 1/2  loss [-0-9.e+]+  [0-9.]+ s\nEpoch 2/2  loss [-0-9.e+]+  [0-9.]+ s\n)")))
      << both.err;
  auto steps = run_pipec({"run", (d / "fit.pipe").string(), "--steps", "3"});
  ASSERT_EQ(steps.exit_code, 0) << steps.err;
  EXPECT_EQ(steps.err.find("Epoch "), std::string::npos) << steps.err;
}

TEST(TrainRun, EpochsOfDataThatNeverEndsIsAUsageError) {
  ScratchDir d;
  write_file(d / "p.pipe",
             R"(pipeline data = range(64) | map(r => { x: [f32(r.value)], y: [1.0] }) | batch(8) | repeat()
model net(x: f32[1]) -> f32[1] { x | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(), steps = 4 }
)");
  auto r = run_pipec({"run", (d / "p.pipe").string(), "--epochs", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("would never end: its data repeats forever"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pipec
