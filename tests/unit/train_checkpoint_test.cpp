// Training checkpoints (runtime/train/persist/train_checkpoint.h, `pipec run --checkpoint DIR`): a run killed
// with SIGKILL and resumed ends with the weights of an uninterrupted run bit for bit, on both executors;
// a save killed half-way leaves the previous checkpoint usable; a missing, truncated, damaged or foreign
// checkpoint is refused with the file and the problem named.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/exec/iterator.h"
#include "runtime/train/persist/train_checkpoint.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::read_all;
using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;

// 125 batches a pass, so 600 steps cross four passes (each reshuffled); batch_norm has state, dropout
// draws from the step, the schedule and the clipping depend on the step count: all of it must resume.
const char* kData = R"(pipeline data = range(2_000)
  | shuffle(500, seed = 3)
  | map(r => {
      x = random_uniform([16])
      { x, y: [sum(x) * 0.1] }
    })
  | batch(16, drop_remainder = true)
  | prefetch(2)
)";
const char* kModel =
    "model net(x: f32[16]) -> f32[1] { x | dense(64) | batch_norm | relu | dropout(0.2) | dense(1) }\n";
const char* kTrain =
    "train t = { data = data, model = net(x), loss = mse(y), optimizer = adamw(lr = cosine_decay(1e-3, 600), "
    "global_clipnorm = 1.0), "
    "steps = 600 }\n";

std::string spec_text() { return std::string(kData) + kModel + kTrain; }

std::vector<std::string> train_args(const fs::path& spec, const std::string& executor, std::vector<std::string> more) {
  std::vector<std::string> args = {"run", spec.string(), "--quiet", "--threads", "2", "--executor", executor};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(read_all(p)); }

// The losses of the steps a resumed run took equal the uninterrupted run's from the same step, and its
// weights equal the uninterrupted run's to the byte. Returns the step it resumed from.
int64_t expect_resumed_equals(const fs::path& ref_json, const fs::path& ref_weights, const fs::path& json,
                              const fs::path& weights) {
  nlohmann::json ref = read_json(ref_json), got = read_json(json);
  const int64_t from = got.value("resumed_from_step", int64_t{0});
  EXPECT_EQ(got["steps"], ref["steps"]);
  EXPECT_EQ(got["losses"].size() + static_cast<size_t>(from), ref["losses"].size());
  for (size_t i = 0; i < got["losses"].size() && from + i < ref["losses"].size(); ++i)
    EXPECT_EQ(got["losses"][i].get<double>(), ref["losses"][from + i].get<double>()) << "step " << from + i + 1;
  EXPECT_EQ(read_all(weights), read_all(ref_weights)) << "the weights after the resumed run differ";
  return from;
}

TEST(TrainCheckpoint, KilledAndResumedRunEqualsUninterruptedRun) {
  ScratchDir d;
  write_file(d / "t.pipe", spec_text());
  std::mt19937 rng(2024);
  for (const std::string executor : {"fast", "reference"}) {
    SCOPED_TRACE("--executor " + executor);
    auto ref =
        run_pipec(train_args(d / "t.pipe", executor,
                             {"--save", (d / "ref.safetensors").string(), "--stats-json", (d / "ref.json").string()}));
    ASSERT_EQ(ref.exit_code, 0) << ref.err;
    int mid_run = 0;
    for (int attempt = 0; attempt < 2; ++attempt) {
      const fs::path ck = d / fmt::format("ck-{}-{}", executor, attempt);
      const fs::path out = d / fmt::format("out-{}-{}.safetensors", executor, attempt);
      std::vector<std::string> args = train_args(
          d / "t.pipe", executor, {"--checkpoint", ck.string(), "--checkpoint-every", "10", "--save", out.string()});
      pid_t pid = testing::spawn_pipec(args);
      // Killed a moment after its first checkpoint: somewhere in the middle of training, or of a save.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      while (!fs::exists(train_checkpoint_file(ck)) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 40));
      kill(pid, SIGKILL);
      int status = 0;
      waitpid(pid, &status, 0);
      ASSERT_TRUE(fs::exists(train_checkpoint_file(ck)));
      args.push_back("--resume");
      args.push_back("--stats-json");
      args.push_back((d / "resumed.json").string());
      auto r = run_pipec(args);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const int64_t from = expect_resumed_equals(d / "ref.json", d / "ref.safetensors", d / "resumed.json", out);
      EXPECT_GE(from, 10);
      mid_run += from < 600;
      // One weights file is left beside train.ckpt: the last one's.
      int weights_files = 0;
      for (auto& e : fs::directory_iterator(ck)) weights_files += e.path().extension() == ".safetensors";
      EXPECT_EQ(weights_files, 1);
      EXPECT_TRUE(fs::exists(ck / "weights-600.safetensors"));
    }
    EXPECT_GT(mid_run, 0) << "every run ended before it was killed: nothing was resumed mid-run";
  }
}

// A kill during a save leaves what the save had made so far beside the previous checkpoint: a
// temporary weights file, the new weights file renamed into place, a temporary train.ckpt. None of
// them is read: train.ckpt still names the previous weights, and resuming from it trains as if nothing
// had happened. The next save clears them away.
TEST(TrainCheckpoint, ASaveKilledHalfWayLeavesThePreviousCheckpointUsable) {
  ScratchDir d;
  write_file(d / "t.pipe", spec_text());
  auto ref =
      run_pipec(train_args(d / "t.pipe", "reference",
                           {"--save", (d / "ref.safetensors").string(), "--stats-json", (d / "ref.json").string()}));
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const fs::path ck = d / "ck";
  auto first = run_pipec(train_args(d / "t.pipe", "reference", {"--checkpoint", ck.string(), "--steps", "250"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(fs::exists(ck / "weights-250.safetensors"));
  const std::string half = read_all(ck / "weights-250.safetensors").substr(0, 1000);
  write_file(ck / "weights-260.safetensors.tmp.99999", half);
  write_file(ck / "weights-260.safetensors", half);
  write_file(ck / "train.ckpt.tmp.99999", read_all(ck / "train.ckpt").substr(0, 100));
  auto r = run_pipec(train_args(d / "t.pipe", "reference",
                                {"--checkpoint", ck.string(), "--resume", "--save", (d / "out.safetensors").string(),
                                 "--stats-json", (d / "resumed.json").string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(expect_resumed_equals(d / "ref.json", d / "ref.safetensors", d / "resumed.json", d / "out.safetensors"),
            250);
  std::vector<std::string> left;
  for (auto& e : fs::directory_iterator(ck)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"train.ckpt", "weights-600.safetensors"}));
}

// A finished run's checkpoint resumes to no step at all and the same weights; the summary says so.
TEST(TrainCheckpoint, ResumingAFinishedRunTrainsNoFurther) {
  ScratchDir d;
  write_file(d / "t.pipe", spec_text());
  const fs::path ck = d / "ck";
  auto a =
      run_pipec(train_args(d / "t.pipe", "reference",
                           {"--steps", "40", "--checkpoint", ck.string(), "--save", (d / "a.safetensors").string()}));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  std::vector<std::string> args = {"run",
                                   (d / "t.pipe").string(),
                                   "--executor",
                                   "reference",
                                   "--steps",
                                   "40",
                                   "--checkpoint",
                                   ck.string(),
                                   "--resume",
                                   "--save",
                                   (d / "b.safetensors").string()};
  auto b = run_pipec(args);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.err.find("resumed     from " + train_checkpoint_file(ck).string() + " at step 40"), std::string::npos)
      << b.err;
  EXPECT_NE(b.err.find("already holds step 40"), std::string::npos) << b.err;
  EXPECT_EQ(read_all(d / "a.safetensors"), read_all(d / "b.safetensors"));
}

// Every way a checkpoint can be unusable: refused before step 1, with the file and the problem named,
// exit code 1 (2 when there is none at all), never a crash.
TEST(TrainCheckpoint, BrokenOrForeignCheckpointsAreRefused) {
  ScratchDir d;
  write_file(d / "t.pipe", spec_text());
  const fs::path good = d / "good";
  auto a = run_pipec(train_args(d / "t.pipe", "reference", {"--steps", "30", "--checkpoint", good.string()}));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const std::string state = read_all(good / "train.ckpt");
  const std::string weights = read_all(good / "weights-30.safetensors");

  struct Case {
    std::string name;
    std::string spec;                             // the spec resumed with
    std::function<void(const fs::path&)> damage;  // done to a copy of the good checkpoint
    std::vector<std::string> extra;
    int exit_code;
    std::vector<std::string> says;  // pieces of the message; "{ckpt}" / "{weights}" stand for the files
  };
  auto flip = [](std::string s, size_t at) {
    s[at] = static_cast<char>(s[at] ^ 0x20);
    return s;
  };
  std::string other_shape = spec_text();
  other_shape.replace(other_shape.find("dense(64)"), 9, "dense(32)");
  std::string other_layers = spec_text();
  other_layers.replace(other_layers.find("| dense(1)"), 10, "| dense(8) | dense(1)");
  std::string other_optimizer =
      std::string(kData) + kModel +
      "train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(momentum = 0.9), steps = 600 }\n";
  std::string other_precision = spec_text();
  other_precision.replace(other_precision.find("steps = 600 }"), 13, "steps = 600, precision = mixed_bf16 }");
  std::string other_pipeline = spec_text();
  other_pipeline.replace(other_pipeline.find("shuffle(500"), 11, "shuffle(400");
  const std::string spec = spec_text();
  std::vector<Case> cases = {
      {"missing",
       spec,
       [](const fs::path& ck) { fs::remove(ck / "train.ckpt"); },
       {},
       2,
       {"no training checkpoint to resume from at {ckpt}"}},
      {"truncated state",
       spec,
       [&](const fs::path& ck) { write_file(ck / "train.ckpt", state.substr(0, state.size() / 2)); },
       {},
       1,
       {"{ckpt}: truncated state file"}},
      {"flipped byte in the state",
       spec,
       [&](const fs::path& ck) { write_file(ck / "train.ckpt", flip(state, state.size() / 3)); },
       {},
       1,
       {"{ckpt}: corrupt state file: CRC32 mismatch"}},
      {"flipped byte in the weights",
       spec,
       [&](const fs::path& ck) { write_file(ck / "weights-30.safetensors", flip(weights, weights.size() - 7)); },
       {},
       1,
       {"{weights}: corrupt: CRC32", "{ckpt} recorded"}},
      {"truncated weights",
       spec,
       [&](const fs::path& ck) { write_file(ck / "weights-30.safetensors", weights.substr(0, weights.size() - 64)); },
       {},
       1,
       {"{weights}: ", "truncated or replaced"}},
      {"weights gone",
       spec,
       [](const fs::path& ck) { fs::remove(ck / "weights-30.safetensors"); },
       {},
       1,
       {"{weights}: open failed: No such file or directory"}},
      {"a pipeline's state file",
       spec,
       [&](const fs::path& ck) {
         auto p = run_pipec(
             {"run", (d / "t.pipe").string(), "--pipeline", "data", "--take", "3", "--checkpoint", ck.string(), "-q"});
         ASSERT_EQ(p.exit_code, 0) << p.err;
         fs::rename(ck / "state.ckpt", ck / "train.ckpt");
       },
       {},
       1,
       {"{ckpt}: not a training checkpoint"}},
      {"another layer width",
       other_shape,
       [](const fs::path&) {},
       {},
       1,
       {"{weights}: the checkpoint of train `t` (model `net`) does not fit model `net`",
        "is [16, 64] in the file but [16, 32] in the model", "`optimizer.m/"}},
      {"other layers", other_layers, [](const fs::path&) {}, {}, 1, {"{weights}: ", "is missing"}},
      {"another optimizer",
       other_optimizer,
       [](const fs::path&) {},
       {},
       1,
       {"{ckpt}: the checkpoint of train `t` (model `net`) was written with optimizer adamw; this spec trains with "
        "sgd"}},
      {"another precision",
       other_precision,
       [](const fs::path&) {},
       {},
       1,
       {"{ckpt}: the checkpoint of train `t` (model `net`) was written with precision fp32; this spec trains in "
        "mixed_bf16"}},
      {"another seed",
       spec,
       [](const fs::path&) {},
       {"--seed", "5"},
       1,
       {"{ckpt}: the checkpoint was written with --seed 0"}},
      {"another pipeline",
       other_pipeline,
       [](const fs::path&) {},
       {},
       1,
       {"{ckpt} (the input pipeline's state): the checkpoint was written by a different pipeline"}},
  };
  int i = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path ck = d / ("ck" + std::to_string(i++));
    fs::create_directories(ck);
    fs::copy(good, ck, fs::copy_options::recursive);
    c.damage(ck);
    write_file(d / "resume.pipe", c.spec);
    const std::string before = fs::exists(ck / "train.ckpt") ? read_all(ck / "train.ckpt") : "";
    std::vector<std::string> args =
        train_args(d / "resume.pipe", "reference", {"--checkpoint", ck.string(), "--resume"});
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    auto r = run_pipec(args);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    for (std::string piece : c.says) {
      for (auto [key, file] : {std::pair<std::string, fs::path>{"{ckpt}", ck / "train.ckpt"},
                               {"{weights}", ck / "weights-30.safetensors"}})
        if (auto at = piece.find(key); at != std::string::npos) piece.replace(at, key.size(), file.string());
      EXPECT_NE(r.err.find(piece), std::string::npos) << "expected: " << piece << "\ngot: " << r.err;
    }
    // A refused checkpoint is left as it was: nothing trained, nothing saved over it.
    if (!before.empty()) {
      EXPECT_EQ(read_all(ck / "train.ckpt"), before);
    }
  }
}

// mixed_fp16's loss scale is part of the run: a resumed run goes on with the scale, the count of finite
// steps toward doubling it and the skipped steps it had. The targets are large, so the first steps'
// gradients overflow f16 at 2^15 and the scale has halved several times before the checkpoint; a run
// resumed at 2^15 would skip steps the uninterrupted one takes, and its weights would differ.
TEST(TrainCheckpoint, ResumeKeepsTheLossScale) {
  ScratchDir d;
  write_file(d / "fp16.pipe", R"(pipeline data = range(4_000)
  | map(r => {
      x = random_uniform([8], 1.0, 2.0)
      { x, y: [100.0] }
    })
  | batch(8, drop_remainder = true)
model net(x: f32[8]) -> f32[1] { x | dense(4) | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(lr = 1e-6), steps = 30, precision = mixed_fp16 }
)");
  for (const std::string executor : {"fast", "reference"}) {
    SCOPED_TRACE("--executor " + executor);
    const fs::path ck = d / ("ck-" + executor);
    auto ref =
        run_pipec(train_args(d / "fp16.pipe", executor,
                             {"--save", (d / "ref.safetensors").string(), "--stats-json", (d / "ref.json").string()}));
    ASSERT_EQ(ref.exit_code, 0) << ref.err;
    auto first = run_pipec(train_args(d / "fp16.pipe", executor, {"--steps", "20", "--checkpoint", ck.string()}));
    ASSERT_EQ(first.exit_code, 0) << first.err;
    auto rest = run_pipec(train_args(d / "fp16.pipe", executor,
                                     {"--checkpoint", ck.string(), "--resume", "--save",
                                      (d / "out.safetensors").string(), "--stats-json", (d / "out.json").string()}));
    ASSERT_EQ(rest.exit_code, 0) << rest.err;
    EXPECT_EQ(expect_resumed_equals(d / "ref.json", d / "ref.safetensors", d / "out.json", d / "out.safetensors"), 20);
    nlohmann::json want = read_json(d / "ref.json"), got = read_json(d / "out.json");
    ASSERT_TRUE(want.contains("loss_scale"));
    EXPECT_LT(want["loss_scale"].get<double>(), 32768) << "no step overflowed: the test proves nothing";
    EXPECT_GT(want["skipped_steps"].get<int>(), 0);
    EXPECT_EQ(got["loss_scale"], want["loss_scale"]);
    EXPECT_EQ(got["skipped_steps"], want["skipped_steps"]);
  }
}

// The library level: tensors, slots, counts and the rows of a half-used chunk come back as saved; a
// refused load leaves the buffers untouched.
TEST(TrainCheckpoint, SaveAndLoadRoundTrip) {
  TrainProgram t = testing::compile_train(spec_text());
  const ModelGraph& g = t.step;
  ASSERT_FALSE(g.nodes.empty());
  ScratchDir d;
  FlatBuffers<float> b;
  b.params.resize(g.param_elements());
  b.states.resize(g.state_elements());
  for (size_t i = 0; i < b.params.size(); ++i) b.params[i] = 0.25f * static_cast<float>(i) - 3.0f;
  for (size_t i = 0; i < b.states.size(); ++i) b.states[i] = 1.0f + static_cast<float>(i);
  OptimizerSlots<float> slots;
  slots.m.assign(b.params.size(), 0.5f);
  slots.v.assign(b.params.size(), 0.125f);
  slots.m[3] = -7.0f;
  slots.iterations = 17;
  TrainCheckpointState s;
  s.seed = 9;
  s.step = 17;
  s.epoch = 2;
  s.total_steps = 100;
  s.loss_sum = 0.75;
  s.first_loss = 2.5;
  s.last_loss = 0.125;
  InputPosition position;
  position.pipeline_state = std::string("opaque\0bytes", 12);
  Chunk pending;
  pending.rows = 2;
  pending.first_index = 4;
  pending.epoch = 2;
  Column col;
  col.dense = testing::random_tensor(DType::F32, {2, 1, 3}, 1);
  pending.columns.push_back(col);
  position.pending = pending;
  s.positions = {input_position_bytes(position, 0, 1, 17)};
  save_train_checkpoint(d.path(), g, "t", b, slots, s);

  FlatBuffers<float> b2;
  b2.params.assign(b.params.size(), 0.0f);
  b2.states.assign(b.states.size(), 0.0f);
  OptimizerSlots<float> slots2;
  TrainCheckpointState l = load_train_checkpoint(d.path(), g, 9, b2, slots2);
  EXPECT_EQ(b2.params, b.params);
  EXPECT_EQ(b2.states, b.states);
  EXPECT_EQ(slots2.m, slots.m);
  EXPECT_EQ(slots2.v, slots.v);
  EXPECT_EQ(slots2.iterations, 17);
  EXPECT_EQ(l.step, 17);
  EXPECT_EQ(l.epoch, 2);
  EXPECT_EQ(l.total_steps, std::optional<int64_t>(100));
  EXPECT_EQ(l.loss_sum, 0.75);
  EXPECT_EQ(l.first_loss, 2.5);
  EXPECT_EQ(l.last_loss, 0.125);
  ASSERT_EQ(l.positions.size(), 1u);
  EXPECT_EQ(l.position_sources, std::vector<std::string>{train_checkpoint_file(d.path()).string()});
  const InputPosition p = parse_input_position(l.positions[0], "here", 0, 1, 17);
  EXPECT_EQ(p.pipeline_state, position.pipeline_state);
  ASSERT_TRUE(p.pending.has_value());
  EXPECT_EQ(p.pending->rows, 2);
  EXPECT_EQ(p.pending->first_index, 4);
  ASSERT_EQ(p.pending->columns.size(), 1u);
  const Tensor& got = p.pending->columns[0].dense;
  ASSERT_EQ(got.shape(), col.dense.shape());
  for (int64_t i = 0; i < got.num_elements(); ++i) EXPECT_EQ(got.data<float>()[i], col.dense.data<float>()[i]);

  // Another seed: refused, and the buffers keep what they held.
  FlatBuffers<float> b3 = b2;
  b3.params[0] = 42.0f;
  OptimizerSlots<float> slots3;
  EXPECT_THROW(load_train_checkpoint(d.path(), g, 10, b3, slots3), CheckpointError);
  EXPECT_EQ(b3.params[0], 42.0f);
  EXPECT_TRUE(slots3.m.empty());
}

}  // namespace
}  // namespace pipec
