// The training loop (runtime/train/loop/train_loop.h) on an executor that keeps its state apart from its host
// copies, as a GPU executor keeps it on the device: the loop must call sync_to_device() after it wrote
// --init weights or a checkpoint's state into the host copies, and sync_to_host() before a checkpoint,
// an evaluation and --save read them. Each run is compared with the same run on the reference executor
// (whose host copies are its state): the losses, the evaluations and the files written must be equal, so
// a missing sync (stale weights read or trained on) fails.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/compile/compile.h"
#include "runtime/train/loop/evaluate.h"
#include "runtime/train/loop/train_loop.h"
#include "runtime/train/persist/train_checkpoint.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::read_all;
using testing::ScratchDir;

// Computes on a reference executor of its own (the "device"); buffers() and optimizer_slots() are
// copies that only sync_to_host() and sync_to_device() move. As StepExecutor promises, the loss scale
// and the optimizer's iteration count and rate are current after each step without a sync.
class DeviceLikeExecutor final : public StepExecutor {
 public:
  struct Syncs {
    int to_host = 0, to_device = 0;
  };

  DeviceLikeExecutor(const ModelGraph& g, uint64_t seed, Syncs* syncs)
      : device_(g, seed), host_(device_.buffers()), host_slots_(device_.optimizer_slots()), syncs_(syncs) {
    if (device_.loss_scale()) host_scale_ = *device_.loss_scale();
  }

  std::string description() const override { return "device-like test executor"; }
  double run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last,
             PhaseSeconds* seconds = nullptr) override {
    const double loss = device_.run(inputs, target, step, last, seconds);
    after_step();
    return loss;
  }
  double resume(uint64_t step, OpCategory last, PhaseSeconds* seconds = nullptr) override {
    const double loss = device_.resume(step, last, seconds);
    after_step();
    return loss;
  }
  FlatBuffers<float>& buffers() override { return host_; }
  OptimizerSlots<float>& optimizer_slots() override { return host_slots_; }
  void sync_to_host() override {
    host_ = device_.buffers();
    host_slots_ = device_.optimizer_slots();
    if (syncs_) ++syncs_->to_host;
  }
  void sync_to_device() override {
    device_.buffers().params = host_.params;
    device_.buffers().states = host_.states;
    device_.optimizer_slots() = host_slots_;
    if (host_scale_) *device_.loss_scale() = *host_scale_;
    if (syncs_) ++syncs_->to_device;
  }
  LossScale* loss_scale() override { return host_scale_ ? &*host_scale_ : nullptr; }
  Tensor host_value(int id) override { return device_.host_value(id); }
  const StepArena& arena() const override { return device_.arena(); }
  void set_first_example(int64_t first) override { device_.set_first_example(first); }

  const FlatBuffers<float>& device_buffers() { return device_.buffers(); }

 private:
  void after_step() {
    host_slots_.iterations = device_.optimizer_slots().iterations;
    host_slots_.last_lr = device_.optimizer_slots().last_lr;
    if (host_scale_) *host_scale_ = *device_.loss_scale();
  }

  ReferenceExecutor<float> device_;
  FlatBuffers<float> host_;
  OptimizerSlots<float> host_slots_;
  std::optional<LossScale> host_scale_;
  Syncs* syncs_;
};

// batch_norm has state, dropout draws from the step, the schedule depends on the iteration count, and
// mixed_fp16 keeps a loss scale: each of them must cross the syncs.
const char* kSpec = R"(pipeline data = range(2_000)
  | map(r => {
      x = random_uniform([8], seed = 3)
      { x, y: [sum(x) * 0.1] }
    })
  | batch(16, drop_remainder = true)
pipeline held_out = range(40)
  | map(r => {
      x = random_uniform([8], seed = 4)
      { x, y: [sum(x) * 0.1] }
    })
  | batch(16)
model net(x: f32[8]) -> f32[1] { x | dense(16) | batch_norm | relu | dropout(0.2) | dense(1) }
train t = {
  data = data, model = net(x), loss = mse(y), optimizer = adam(lr = cosine_decay(1e-2, 8)), steps = 8
  precision = mixed_fp16, validation = held_out, eval_every = 2, metrics = [mae]
}
)";

struct Compiled {
  CompileResult r;
  const TrainProgram& program() const { return r.trains.at(0).program; }
  const Plan& data() const { return r.pipelines.at(0).plan; }
  const Plan& validation() const { return r.pipelines.at(1).plan; }
};

Compiled compile_spec() {
  CompileRequest request;
  request.path = "sync_test.pipe";
  request.text = kSpec;
  request.target = CompileTarget::Train;
  Compiled c{compile(request)};
  EXPECT_TRUE(c.r.ok()) << c.r.error;
  return c;
}

// What a run leaves: its losses, its evaluations and the files it wrote (of the checkpoint's state
// file, what the executor gave it: the input pipeline's state may differ with the prefetch's timing).
struct RunResult {
  std::vector<double> losses;
  std::vector<std::pair<int64_t, double>> evals;  // step, loss
  std::string saved, checkpoint_weights;
  std::vector<double> checkpoint_state;  // step, iterations, loss scale, its good and skipped steps
  int64_t resumed_from = 0;
};

struct RunSetup {
  bool device_like = false;
  bool validation = false;
  int64_t steps = 8;
  int64_t checkpoint_every = 0;  // with a checkpoint folder; 0: none
  bool resume = false;
  std::string init;
  bool save = false;
};

RunResult train(const Compiled& c, const RunSetup& s, const fs::path& dir, DeviceLikeExecutor::Syncs* syncs) {
  TrainOptions o;
  o.seed = 5;
  o.threads = 1;
  o.autotune = false;
  o.length = c.r.trains.at(0).length;
  o.length.steps = s.steps;
  if (s.validation) o.validation = &c.validation();
  if (s.checkpoint_every > 0 || s.resume) {
    o.checkpoint_dir = (dir / "ckpt").string();
    o.checkpoint_every = s.checkpoint_every;
    o.resume = s.resume;
  }
  o.init_path = s.init;
  if (s.save) o.save_path = (dir / "saved.safetensors").string();
  if (s.device_like)
    o.make_executor = [syncs](const ModelGraph& g, uint64_t seed) {
      return std::make_unique<DeviceLikeExecutor>(g, seed, syncs);
    };
  TrainSummary sum = run_training(c.program(), c.data(), o);
  RunResult r;
  r.losses = sum.losses;
  r.resumed_from = sum.last.resumed_from;
  for (const EvalResult& e : sum.evals) r.evals.push_back({e.step, e.loss});
  if (s.save) r.saved = read_all(dir / "saved.safetensors");
  if (!o.checkpoint_dir.empty()) {
    for (const auto& f : fs::directory_iterator(o.checkpoint_dir))
      if (f.path().extension() == ".safetensors") r.checkpoint_weights = read_all(f.path());
    FlatBuffers<float> buffers;
    buffers.params.assign(static_cast<size_t>(c.program().step.param_elements()), 0.0f);
    buffers.states.assign(static_cast<size_t>(c.program().step.state_elements()), 0.0f);
    OptimizerSlots<float> slots;
    const TrainCheckpointState cs = load_train_checkpoint(o.checkpoint_dir, c.program().step, o.seed, buffers, slots);
    r.checkpoint_state = {static_cast<double>(cs.step), static_cast<double>(slots.iterations), cs.loss_scale,
                          static_cast<double>(cs.loss_scale_good_steps), static_cast<double>(cs.skipped_steps)};
  }
  return r;
}

void expect_same(const RunResult& got, const RunResult& want) {
  EXPECT_EQ(got.losses, want.losses);
  EXPECT_EQ(got.evals, want.evals);
  EXPECT_EQ(got.resumed_from, want.resumed_from);
  EXPECT_TRUE(got.saved == want.saved) << "the --save files differ";
  EXPECT_TRUE(got.checkpoint_weights == want.checkpoint_weights) << "the checkpoints' weights differ";
  EXPECT_EQ(got.checkpoint_state, want.checkpoint_state);
}

// The test executor is what it claims: after a step its host copies are stale until sync_to_host().
TEST(TrainLoop, TheDeviceLikeExecutorKeepsItsStateApart) {
  Compiled c = compile_spec();
  ASSERT_TRUE(c.r.ok());
  const ModelGraph& g = c.program().step;
  DeviceLikeExecutor ex(g, 5, nullptr);
  ASSERT_NE(ex.loss_scale(), nullptr);
  std::vector<Tensor> inputs;
  for (int id : g.inputs) inputs.push_back(Tensor::zeros(DType::F32, g.full_shape(id, 16)));
  Tensor target = Tensor::zeros(DType::F32, g.full_shape(g.target, 16));
  for (int64_t i = 0; i < inputs[0].num_elements(); ++i) inputs[0].data<float>()[i] = static_cast<float>(i % 7) * 0.1f;
  const std::vector<float> before = ex.buffers().params;
  ex.run(inputs, &target, 0, OpCategory::Update);
  EXPECT_EQ(ex.buffers().params, before);
  EXPECT_NE(ex.device_buffers().params, before);
  EXPECT_EQ(ex.optimizer_slots().iterations, 1);
  EXPECT_TRUE(ex.optimizer_slots().m.empty());
  ex.sync_to_host();
  EXPECT_EQ(ex.buffers().params, ex.device_buffers().params);
  EXPECT_FALSE(ex.optimizer_slots().m.empty());
}

// Each reader of the host copies on its own (so that one's sync cannot cover another's), then all of
// them together: the same losses, evaluations and files as on the reference executor.
TEST(TrainLoop, SyncsToHostBeforeACheckpointAnEvaluationAndSave) {
  Compiled c = compile_spec();
  ASSERT_TRUE(c.r.ok());
  std::vector<RunSetup> setups(4);
  setups[0].save = true;
  setups[1].checkpoint_every = 3;  // steps 3 and 6, and after the last (8)
  setups[2].validation = true;     // steps 2, 4, 6 and 8
  setups[3].save = setups[3].validation = true, setups[3].checkpoint_every = 3;
  for (size_t i = 0; i < setups.size(); ++i) {
    SCOPED_TRACE("setup " + std::to_string(i));
    ScratchDir ref_dir, dev_dir;
    RunSetup s = setups[i];
    const RunResult want = train(c, s, ref_dir.path(), nullptr);
    s.device_like = true;
    DeviceLikeExecutor::Syncs syncs;
    const RunResult got = train(c, s, dev_dir.path(), &syncs);
    expect_same(got, want);
    EXPECT_GT(syncs.to_host, 0);
    EXPECT_EQ(syncs.to_device, 0);  // nothing was restored
    EXPECT_EQ(want.evals.size(), s.validation ? 4u : 0u);
  }
}

// The evaluator writes the weights it is given into its executor's host copies and syncs them.
TEST(TrainLoop, EvaluatorSyncsTheWeightsItIsGiven) {
  Compiled c = compile_spec();
  ASSERT_TRUE(c.r.ok());
  const TrainProgram& t = c.program();
  RunOptions ro;
  ro.seed = 5;
  ro.threads = 1;
  ro.autotune = false;
  Evaluator ref(t, c.validation(), ro, std::make_unique<ReferenceExecutor<float>>(t.eval->graph, 5));
  DeviceLikeExecutor::Syncs syncs;
  Evaluator dev(t, c.validation(), ro, std::make_unique<DeviceLikeExecutor>(t.eval->graph, 5, &syncs));
  ReferenceExecutor<float> other(t.step, 9), seeds(t.step, 5);  // other weights than the evaluators' own
  const EvalResult want = ref.run(other.buffers(), 1);
  const EvalResult got = dev.run(other.buffers(), 1);
  EXPECT_EQ(got.loss, want.loss);
  EXPECT_EQ(got.metrics, want.metrics);
  EXPECT_EQ(syncs.to_device, 1);
  EXPECT_NE(ref.run(seeds.buffers(), 1).loss, want.loss) << "the weights given must not be the evaluators' own";
}

// --init weights (trained ones, not the seed's) and a checkpoint's state reach the device.
TEST(TrainLoop, SyncsToDeviceAfterInitWeightsAndACheckpoint) {
  Compiled c = compile_spec();
  ASSERT_TRUE(c.r.ok());
  ScratchDir d;
  RunSetup first;
  first.steps = 3;
  first.save = true;
  train(c, first, d.path(), nullptr);
  const fs::path init = d.path() / "init.safetensors";
  fs::rename(d.path() / "saved.safetensors", init);

  RunSetup from_init;
  from_init.init = init.string();
  from_init.save = true;
  ScratchDir ref_dir, dev_dir, seed_dir;
  const RunResult want = train(c, from_init, ref_dir.path(), nullptr);
  const RunResult from_seed = train(c, RunSetup{}, seed_dir.path(), nullptr);
  ASSERT_NE(want.losses.at(0), from_seed.losses.at(0)) << "the --init weights must not be the seed's";
  from_init.device_like = true;
  DeviceLikeExecutor::Syncs syncs;
  expect_same(train(c, from_init, dev_dir.path(), &syncs), want);
  EXPECT_EQ(syncs.to_device, 1);

  // Resumed at step 4 on the device-like executor: as the reference's uninterrupted 8 steps from there.
  RunSetup whole;
  whole.save = true;
  ScratchDir whole_dir, resumed_dir;
  const RunResult uninterrupted = train(c, whole, whole_dir.path(), nullptr);
  RunSetup part;
  part.steps = 4;
  part.checkpoint_every = 4;
  part.device_like = true;
  train(c, part, resumed_dir.path(), &syncs);
  RunSetup rest = whole;
  rest.resume = true;
  rest.device_like = true;
  syncs = {};
  const RunResult resumed = train(c, rest, resumed_dir.path(), &syncs);
  EXPECT_EQ(syncs.to_device, 1);
  EXPECT_EQ(resumed.resumed_from, 4);
  EXPECT_EQ(resumed.losses, std::vector<double>(uninterrupted.losses.begin() + 4, uninterrupted.losses.end()));
  EXPECT_TRUE(resumed.saved == uninterrupted.saved) << "the weights after the resumed run differ";
}

}  // namespace
}  // namespace pipec
