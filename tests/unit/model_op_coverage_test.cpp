// Every executor against its claim of model_ops.def's node kinds (as op_table_coverage_test.cpp holds
// the back ends of the pipeline ops to runtime/plan/ops.def):
//  - the reference executor claims every kind (reference_executor_computes) and runs every kind's cases;
//  - the fast CPU executor claims the kinds it computes on oneDNN or compiled code (fast_kernel_of): each
//    claimed kind's cases run through it as a StepExecutor, agree with the reference, and its own kernel
//    ran for every node of the kind (FastExecutor::kernel_runs);
//  - the GPU executor claims its kernels for every kind (gpu::node_kernel_of): the same, on the host
//    emulation of a GPU (its step kernels, and cuDNN / cuBLASLt's calls through the recording fakes of
//    cuda_library_fakes.h), counted by GpuExecutor::kernel_runs and the launcher's launches.
// The cases are tests/unit/gpu_step_cases.h's random one-node graphs (cases_for). A backward kind the
// fast executor computes with its forward node's op (FastKernel::WithForward) gets its forward's cases
// with the backward nodes that kind's gradient rule makes, linked as in a step; expr and optimizer_step
// (no one-node cases) get compiled steps. A kind with no cases fails, naming the file to edit; a kind
// claimed whose kernel did not run fails, naming the claim.
//
// Tolerances, those of the executors' own tests: the fast executor's outputs within 1e-4 of each
// tensor's largest magnitude plus 1e-6 (tests/unit/train_fast_executor_test.cpp: oneDNN sums in f32 in
// its order, the reference in f64); the GPU executor's within 2^-22 of each tensor's largest magnitude
// (tests/unit/gpu_step_kernels_test.cpp: its kernels repeat the reference's arithmetic, and its sums
// over rows are the same f64 sums regrouped).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "compiler/train/gradients.h"
#include "runtime/train/fast/fast_executor.h"
#include "runtime/train/gpu/gpu_executor.h"
#include "runtime/train/gpu/gpu_kernel_claim.h"
#include "runtime/train/gpu/host_step_device.h"
#include "runtime/train/gpu/host_step_kernels.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/cuda_library_fakes.h"
#include "tests/unit/gpu_step_cases.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

using namespace step_cases;

constexpr const char* kCasesFile = "tests/unit/gpu_step_cases.h (cases_for)";

// ---- the cases of a kind ----

// A forward case with the backward nodes its kind's gradient rule makes (every input wanting a
// gradient, the adjoint of output 0 fed), each linked to the forward node as the gradient pass links
// them: the graph in which a backward kernel that reuses its forward's op runs.
Case with_gradients(Case c) {
  ModelGraph& g = c.g;
  const GraphNode forward = g.nodes.at(0);
  std::vector<int> dy(forward.outputs.size(), -1);
  const GraphValue& y = g.values.at(static_cast<size_t>(forward.outputs.at(0)));
  GraphValue d;
  d.name = "dy";
  d.shape = y.shape;
  d.batched = y.batched;
  d.role = ValueRole::Input;
  dy[0] = g.add_value(d);
  g.inputs.push_back(dy[0]);
  g.input_fields.push_back(d.name);
  c.dists.push_back(Dist::Uniform);
  GradientContext ctx{
      g, 0, forward, dy, std::vector<bool>(forward.inputs.size(), true), std::vector<int>(forward.inputs.size(), -1)};
  const GradientRule rule = gradient_rule(forward.op);
  if (!rule) throw std::logic_error(fmt::format("no gradient rule for {}", model_op_name(forward.op)));
  rule(ctx);
  // The gradient pass runs before fuse_activation makes a relu the layer's (its backward then reads the
  // layer's output): the backward nodes never hold the activation the forward may.
  for (size_t i = 1; i < g.nodes.size(); ++i)
    std::visit(
        [](auto& a) {
          if constexpr (requires { a.activation; }) a.activation.reset();
        },
        g.nodes[i].attrs);
  // The forward's output is the graph's (kept to the end, as a model's output is): the comparison reads
  // it after the backward nodes ran.
  g.output = forward.outputs.at(0);
  c.what += " with its gradient nodes";
  return c;
}

// The compiler differentiates only training graphs: an inference forward (batch_norm, dropout with
// Keras' training=False, made for evaluation) never has gradient nodes.
bool inference(const GraphNode& n) {
  return std::visit(
      [](const auto& a) {
        if constexpr (requires { a.inference; }) return static_cast<bool>(a.inference);
        else return false;
      },
      n.attrs);
}

// Steps compiled from a spec (the kinds that are no node kernels: expr, optimizer_step), each optimizer
// once, expr nodes compiled by the JIT as `pipec run` compiles them.
const char* kStepSpec = R"(source s = tfrecord("x.tfrecord") { x: f32[6], y: f32[3] }
pipeline data = s | batch(5, drop_remainder = true)
model m(x: f32[6]) -> f32[3] {
  h = x | dense(8) | tanh
  concat([h, x]) | dense(3) | sigmoid
}
train t = { data = data, model = m(x), loss = mse(y), optimizer = OPTIMIZER, steps = 2 }
)";

std::vector<Case> step_cases_for(Random& r) {
  std::vector<Case> cases;
  for (const char* optimizer : {"adam(lr = 0.01, eps = 1e-3)", "adamw(lr = 0.01, weight_decay = 0.1)",
                                "sgd(lr = 0.1, momentum = 0.9, global_clipnorm = 1)"}) {
    std::string spec = kStepSpec;
    spec.replace(spec.find("OPTIMIZER"), 9, optimizer);
    TrainProgram t = testing::compile_train_jit(spec);
    Case c;
    c.what = fmt::format("a compiled step with {}", optimizer);
    c.g = std::move(t.step);
    c.rows = 5;
    c.dists.assign(c.g.inputs.size(), Dist::Uniform);
    c.target_dist = Dist::Uniform;
    c.seed = r.rng();
    c.step = r.rng() % 1000;
    cases.push_back(std::move(c));
  }
  return cases;
}

// The cases kind `op` is checked on for an executor: one-node cases, or (with_forward) the forward's
// cases with their gradient nodes. Empty when the kind has none.
std::vector<Case> cases_of(ModelOp op, bool with_forward, Random& r) {
  if (op == ModelOp::Expr || op == ModelOp::OptimizerStep) return step_cases_for(r);
  if (!with_forward) return cases_for(op, r);
  std::vector<Case> out;
  for (ModelOp f : model_op_info(op).forward)
    for (Case& c : cases_for(f, r))
      if (!inference(c.g.nodes.at(0))) out.push_back(with_gradients(std::move(c)));
  return out;
}

// ---- running a case ----

// Parameters, states, inputs and target of a case, drawn from its seed (as gpu_step_kernels_test.cpp).
struct Batch {
  std::vector<float> params, states;
  std::vector<Tensor> inputs;
  Tensor target;
  bool has_target = false;
};

Batch draw_batch(const Case& c, size_t params, size_t states) {
  Batch b;
  std::mt19937_64 rng(c.seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (size_t i = 0; i < params; ++i) b.params.push_back(static_cast<float>(u(rng)));
  for (size_t i = 0; i < states; ++i) b.states.push_back(static_cast<float>(u(rng)));
  for (size_t k = 0; k < c.g.inputs.size(); ++k)
    b.inputs.push_back(draw(c.dists[k], c.g.full_shape(c.g.inputs[k], c.rows), c.classes, rng));
  if (c.g.target >= 0) {
    b.target = draw(c.target_dist, c.g.full_shape(c.g.target, c.rows), c.classes, rng);
    b.has_target = true;
  }
  return b;
}

// The phases a case of kind `op` runs: up to the update for the Update kinds and the compiled steps,
// else up to the backward pass (a loss-scaled loss_backward's case holds an optimizer_step only for the
// loss scale it reads; it has no loss for the optimizer's finite check).
OpCategory last_phase(ModelOp op) {
  return model_op_info(op).category == OpCategory::Update || op == ModelOp::Expr ? OpCategory::Update
                                                                                 : OpCategory::Backward;
}

// One run of the case from the batch's weights.
void run_batch(StepExecutor& ex, const Case& c, const Batch& b, OpCategory last) {
  ex.buffers().params = b.params;
  ex.buffers().states = b.states;
  ex.sync_to_device();
  ex.run(b.inputs, b.has_target ? &b.target : nullptr, c.step, last);
  ex.sync_to_host();
}

// Value `id` after a run: a view of the flat buffers for parameters, states and gradients, else the
// executor's value (empty when it was freed after its last reader).
std::vector<float> read_value(StepExecutor& ex, const ModelGraph& g, int id, int64_t rows) {
  const GraphValue& v = g.values.at(static_cast<size_t>(id));
  const int64_t n = shape_num_elements(g.full_shape(id, rows));
  auto slice = [&](const std::vector<float>& flat, int64_t offset) {
    return std::vector<float>(flat.begin() + offset, flat.begin() + offset + n);
  };
  if (v.role == ValueRole::Param) return slice(ex.buffers().params, v.offset);
  if (v.role == ValueRole::State) return slice(ex.buffers().states, v.offset);
  if (v.grad_of >= 0) return slice(ex.buffers().grads, g.values.at(static_cast<size_t>(v.grad_of)).offset);
  Tensor t = ex.host_value(id);
  if (!t.defined() || t.num_elements() != n) return {};
  return std::vector<float>(t.data<float>(), t.data<float>() + n);
}

struct Bounds {
  double rtol, atol;  // |got - want| <= atol + rtol * (the tensor's largest magnitude)
};

::testing::AssertionResult agree(const std::string& what, const std::vector<float>& got, const std::vector<float>& want,
                                 Bounds b) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << what << ": " << got.size() << " values, the reference has " << want.size();
  double scale = 0;
  for (float w : want)
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(static_cast<double>(w)));
  const double limit = b.atol + b.rtol * scale;
  int bad = 0;
  std::string report;
  for (size_t i = 0; i < got.size(); ++i) {
    // Equal (infinities too), NaN where the reference has NaN, or within the limit.
    const bool ok = got[i] == want[i] || (std::isnan(want[i]) && std::isnan(got[i])) ||
                    std::fabs(static_cast<double>(got[i]) - want[i]) <= limit;
    if (!ok && bad++ < 4)
      report += fmt::format("\n  [{}]: {:.9g}, reference {:.9g} (limit {:.3g})", i, got[i], want[i], limit);
  }
  if (!bad) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.size() << " differ" << report;
}

int nodes_of(const Case& c, ModelOp op) {
  return static_cast<int>(
      std::count_if(c.g.nodes.begin(), c.g.nodes.end(), [&](const GraphNode& n) { return n.op == op; }));
}

// Whether value `id` still holds what its node wrote after the whole case ran: the flat buffers' views,
// the graph's output and loss, and the outputs of nodes after which no node writes the step's arena (a
// value nothing reads gives its place in the arena up at once, StepArena).
bool held_at_end(const ModelGraph& g, int id) {
  auto in_arena = [&](int v) {
    const GraphValue& x = g.values.at(static_cast<size_t>(v));
    return x.role != ValueRole::Param && x.role != ValueRole::State && x.grad_of < 0;
  };
  if (!in_arena(id) || id == g.output || id == g.loss) return true;
  bool written = false;
  for (const GraphNode& n : g.nodes) {
    if (written)
      for (int o : n.outputs)
        if (in_arena(o)) return false;
    written = written || std::find(n.outputs.begin(), n.outputs.end(), id) != n.outputs.end();
  }
  return true;
}

// Runs case `c` through `ex` and the reference executor from the same weights and batch, and compares
// every value a node wrote that both still hold, and the states (written in place). Returns how many
// values of `op`'s nodes were compared.
int compare_with_reference(StepExecutor& ex, const Case& c, ModelOp op, Bounds bounds) {
  ReferenceExecutor<float> ref(c.g, c.seed);
  const Batch b = draw_batch(c, ref.buffers().params.size(), ref.buffers().states.size());
  run_batch(ref, c, b, last_phase(op));
  run_batch(ex, c, b, last_phase(op));
  int compared = 0;
  for (const GraphNode& n : c.g.nodes) {
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (!held_at_end(c.g, n.outputs[k])) continue;
      const std::vector<float> want = read_value(ref, c.g, n.outputs[k], c.rows);
      if (want.empty()) continue;  // freed after its last reader
      EXPECT_TRUE(agree(fmt::format("{} output {}", model_op_name(n.op), k), read_value(ex, c.g, n.outputs[k], c.rows),
                        want, bounds));
      compared += n.op == op;
    }
  }
  // The Update kinds write the parameters and states in place.
  EXPECT_TRUE(agree("the states", ex.buffers().states, ref.buffers().states, bounds));
  EXPECT_TRUE(agree("the parameters", ex.buffers().params, ref.buffers().params, bounds));
  if (model_op_info(op).category == OpCategory::Update) compared += nodes_of(c, op);
  return compared;
}

// ---- the claims ----

TEST(ModelOpCoverage, TheReferenceComputesEveryKind) {
  Random r(20261128);
  for (const ModelOpInfo& info : all_model_ops()) {
    ASSERT_TRUE(reference_executor_computes(info.op)) << info.name;
    const std::vector<Case> cases = cases_of(info.op, false, r);
    ASSERT_FALSE(cases.empty()) << "no random cases for " << info.name << ": add a case builder to " << kCasesFile;
    for (const Case& c : cases) {
      SCOPED_TRACE(c.what);
      ASSERT_GT(nodes_of(c, info.op), 0) << "a case of " << info.name << " without a node of it";
      ReferenceExecutor<float> ref(c.g, c.seed);
      const Batch b = draw_batch(c, ref.buffers().params.size(), ref.buffers().states.size());
      EXPECT_NO_THROW(run_batch(ref, c, b, last_phase(info.op)));
    }
  }
}

TEST(ModelOpCoverage, TheFastExecutorComputesWhatItClaims) {
  Random r(20261129);
  int claimed = 0;
  for (const ModelOpInfo& info : all_model_ops()) {
    const FastKernel how = fast_kernel_of(info.op);
    if (!fast_executor_computes(info.op)) continue;
    ++claimed;
    SCOPED_TRACE(info.name);
    const std::vector<Case> cases = cases_of(info.op, how == FastKernel::WithForward, r);
    ASSERT_FALSE(cases.empty()) << "no random cases for " << info.name << ": add a case builder to " << kCasesFile;
    for (const Case& c : cases) {
      SCOPED_TRACE(c.what);
      FastExecutor fast(c.g, c.seed, FastExecutorOptions{1});
      const int compared = compare_with_reference(fast, c, info.op, {1e-4, 1e-6});
      EXPECT_GT(compared, 0) << "no output of " << info.name << " compared";
      EXPECT_GE(fast.kernel_runs(info.op), nodes_of(c, info.op))
          << "the fast executor claims " << info.name
          << " (fast_kernel_of, runtime/train/fast/fast_executor.cpp) but its kernel did not run for every node of it: "
             "give it a kernel in FastExecutor::run_node, or claim it FastKernel::Reference";
    }
  }
  EXPECT_GE(claimed, 30);
}

TEST(ModelOpCoverage, TheGpuExecutorComputesWhatItClaims) {
  Random r(20261130);
  for (const ModelOpInfo& info : all_model_ops()) {
    ASSERT_TRUE(gpu::executor_computes(info.op)) << info.name;
    const gpu::NodeKernel how = gpu::node_kernel_of(info.op);
    SCOPED_TRACE(info.name);
    const std::vector<Case> cases = cases_of(info.op, false, r);
    ASSERT_FALSE(cases.empty()) << "no random cases for " << info.name << ": add a case builder to " << kCasesFile;
    for (const Case& c : cases) {
      SCOPED_TRACE(c.what);
      // cuDNN and cuBLASLt as the recording fakes, so the library kinds take the library path.
      testing::FakeCudnn cudnn;
      testing::FakeCublasLt cublaslt;
      gpu::GpuLibraries libs;
      libs.cudnn = &cudnn.api();
      libs.cublaslt = &cublaslt.api();
      gpu::GpuExecutor ex(c.g, c.seed, gpu::make_host_emulation_device(libs));
      auto& launcher = dynamic_cast<gpu::HostKernelLauncher&>(ex.device().step_kernels());
      // The step kernels' bound; the fakes of cuDNN and cuBLASLt sum in f64 in their own order, a few
      // ulp from the reference (gpu_executor_libraries_test.cpp's bound).
      const bool library = std::any_of(c.g.nodes.begin(), c.g.nodes.end(), [](const GraphNode& n) {
        return gpu::node_kernel_of(n.op) == gpu::NodeKernel::Cudnn ||
               gpu::node_kernel_of(n.op) == gpu::NodeKernel::CublasLt;
      });
      const Bounds bounds = library ? Bounds{1e-5, 1e-7} : Bounds{std::ldexp(1.0, -22), 0};
      const int compared = compare_with_reference(ex, c, info.op, bounds);
      EXPECT_GT(compared, 0) << "no output of " << info.name << " compared";
      const std::string claim = fmt::format(
          "the GPU executor claims {} (node_kernel_of, runtime/train/gpu/gpu_kernel_claim.cpp) but ", info.name);
      int64_t launches = 0;
      for (const auto& [name, n] : launcher.launches()) launches += n;
      switch (how) {
        case gpu::NodeKernel::Generated:
          // The host emulation has no generated kernels: expr nodes run on the host there (a GPU runs
          // their CUDA source: tests/gpu).
          EXPECT_EQ(ex.expr_host_runs(), nodes_of(c, info.op));
          break;
        case gpu::NodeKernel::Cudnn:
          EXPECT_GE(ex.kernel_runs(info.op), nodes_of(c, info.op)) << claim << "it did not run";
          EXPECT_FALSE(cudnn.calls.empty()) << claim << "cuDNN was not called";
          break;
        case gpu::NodeKernel::CublasLt:
          EXPECT_GE(ex.kernel_runs(info.op), nodes_of(c, info.op)) << claim << "it did not run";
          EXPECT_FALSE(cublaslt.matmuls.empty()) << claim << "cuBLASLt was not called";
          break;
        case gpu::NodeKernel::StepKernels:
        case gpu::NodeKernel::Optimizer:
          EXPECT_GE(ex.kernel_runs(info.op), nodes_of(c, info.op)) << claim << "it did not run";
          EXPECT_GT(launches, 0) << claim << "no step kernel was launched";
          break;
      }
    }
  }
}

}  // namespace
}  // namespace pipec
