// The model IR: a model, and after the gradient pass one whole training step, as a graph of nodes over
// values with static shapes.
//
// Values are SSA: each is an input of the model, the loss target, a parameter or state tensor, or the
// output of exactly one node, and nodes are listed in an order where every input is defined first (the
// order executors run them in). Batched values have the shape of one example plus a leading batch
// dimension of `batch` rows (the pipeline's batch size when the checker knows it; executors take the
// rows from the batch they are given, so a last short batch runs too). Parameters are views into one
// flat f32 buffer (`offset` in elements), their gradients views into a second one with the same
// layout, non-trainable state (batch_norm's moving statistics) into a third. Layer kinds come from
// model_ops.def; element-wise work is an `expr` node holding an ExprFunction of the expression IR.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/model/model_attrs.h"
#include "runtime/plan/expr_function.h"
#include "runtime/plan/gpu_kernel.h"
#include "runtime/plan/native_kernel.h"

namespace pipec {

enum class ModelOp {
#define OP(name, text, category, inputs, outputs, keras, attrs, flops, forward, reads) name,
#include "runtime/model/model_ops.def"
#undef OP
};

enum class OpCategory { Forward, Loss, Backward, Update };

struct ModelGraph;
struct GraphNode;

/// What a backward node's input is, in terms of the forward node it belongs to (model_ops.def's reads).
struct ForwardValue {
  enum Source { Input, Output, Adjoint };
  Source source;
  int index;  // the forward's input or output (for Adjoint: the output whose adjoint it is)
  bool operator==(const ForwardValue&) const = default;
};
namespace forward_values {
constexpr ForwardValue In(int k) { return {ForwardValue::Input, k}; }
constexpr ForwardValue Out(int k) { return {ForwardValue::Output, k}; }
constexpr ForwardValue Dy(int k) { return {ForwardValue::Adjoint, k}; }
}  // namespace forward_values

/// A node's FLOPs (runtime/model/model_flops.h): per example, or per step for the Update kinds.
using FlopsRule = int64_t (*)(const ModelGraph& g, const GraphNode& n);

struct ModelOpInfo {
  ModelOp op;
  const char* name;
  OpCategory category;
  int inputs;         // -1: variable
  int outputs;        // -1: variable
  const char* keras;  // Forward kinds with weights: the prefix Keras names the layer by; "" otherwise
  size_t attrs;       // the position in ModelAttrs of the struct its nodes hold
  FlopsRule flops;
  std::vector<ModelOp> forward;     // a Backward kind: the forward kinds it belongs to
  std::vector<ForwardValue> reads;  // a Backward kind: each input, in terms of its forward node
};

/// Every op of model_ops.def, in table order.
const std::vector<ModelOpInfo>& all_model_ops();
const ModelOpInfo& model_op_info(ModelOp op);
const char* model_op_name(ModelOp op);
/// The attributes a node of kind `op` holds, each field at its default (lowering fills them).
ModelAttrs default_attrs(ModelOp op);
/// Kinds whose nodes run in whichever phase they serve (expr, round) rather than their kind's category.
bool runs_in_any_phase(ModelOp op);
std::optional<ModelOp> parse_model_op(std::string_view name);

/// What a layer builtin (a call in a model body, by its name) lowers to, from model_ops.def: a node of its
/// own Forward kind, or an expr node of one expression-IR op. nullopt: a builtin the table does not know.
struct LayerLowering {
  std::optional<ModelOp> node;  // an OP row of category Forward spelled like the builtin (never Expr)
  std::optional<OpKind> expr;   // an EXPR_LAYER row
};
std::optional<LayerLowering> layer_lowering(std::string_view builtin);

/// The losses of model_ops.def (model_attrs.h's LossKind): LossAttrs' kind, and the loss builtins.
const std::vector<LossKind>& all_loss_kinds();
const char* loss_kind_name(LossKind k);
std::optional<LossKind> loss_kind_from_name(std::string_view name);

/// The optimizers of model_ops.def: OptimizerAttrs' kind, and the optimizer builtins.
const std::vector<OptimizerKind>& all_optimizer_kinds();
const char* optimizer_kind_name(OptimizerKind k);
std::optional<OptimizerKind> optimizer_kind_from_name(std::string_view name);

/// The learning-rate schedules of model_ops.def: ScheduleAttrs' kind, and the schedule builtins.
const std::vector<ScheduleKind>& all_schedule_kinds();
const char* schedule_kind_name(ScheduleKind k);
std::optional<ScheduleKind> schedule_kind_from_name(std::string_view name);

/// The metrics of model_ops.def: what a train block's `metrics` list may name.
const std::vector<MetricKind>& all_metric_kinds();
const char* metric_kind_name(MetricKind k);
std::optional<MetricKind> metric_kind_from_name(std::string_view name);

/// The distribution strategies of model_ops.def: TrainProgram::strategy, and the strategy builtins.
const std::vector<StrategyKind>& all_strategy_kinds();
const char* strategy_kind_name(StrategyKind k);
std::optional<StrategyKind> strategy_kind_from_name(std::string_view name);

enum class ValueRole {
  Input,       // a model input, fed from a field of the data
  Target,      // the loss target, fed from a field of the data
  Param,       // a trainable parameter (a view into the flat parameter buffer)
  State,       // non-trainable state updated by the step (moving statistics)
  Activation,  // computed by a forward or loss node
  Gradient,    // computed by a backward node
};

const char* value_role_name(ValueRole r);

/// How a parameter or state tensor starts (Keras' defaults; runtime/train/math/initializers.h draws them).
/// Uniform is Keras' RandomUniform with its default bounds, [-kUniformInitLimit, kUniformInitLimit)
/// (Embedding's `embeddings_initializer = "uniform"`).
enum class Init { None, GlorotUniform, Uniform, Zeros, Ones };
constexpr double kUniformInitLimit = 0.05;

const char* init_name(Init i);

struct GraphValue {
  std::string name;  // "board", "conv2d/kernel", "" for intermediate values (printed as %N)
  DType dtype = DType::F32;
  Shape shape;  // one example's shape when batched, the whole tensor's otherwise
  bool batched = true;
  ValueRole role = ValueRole::Activation;
  // Param and State: the position in the flat buffer (elements) and the initializer, with the fans of
  // glorot_uniform (receptive field included, as Keras computes them).
  int64_t offset = -1;
  Init init = Init::None;
  int64_t fan_in = 0;
  int64_t fan_out = 0;
  // Gradient of a parameter: the parameter (its gradient lives at the same offset of the gradient buffer).
  int grad_of = -1;

  int64_t elements_per_example() const { return shape_num_elements(shape); }
};

struct GraphNode {
  ModelOp op = ModelOp::Expr;
  std::vector<int> inputs;
  std::vector<int> outputs;
  /// The struct model_ops.def gives the kind (model_attrs.def), typed: `n.attrs_as<Conv2dAttrs>().padding`.
  ModelAttrs attrs;
  std::shared_ptr<const ExprFunction> fn;  // Expr: its params are the inputs in order, its results the outputs
  /// Expr: fn compiled per example, the batch as rows (compiler/codegen/llvm/jit.h's
  /// attach_step_kernels), when the JIT is on; the fast executor calls it, the reference never does.
  std::shared_ptr<const NativeKernel> native;
  /// Expr: fn printed as a CUDA kernel (runtime/plan/gpu_kernel.h's ABI, the batch as rows) by
  /// compiler/codegen/cuda's attach_step_gpu_kernels; the GPU executor compiles it with NVRTC. Its
  /// `unsupported` says why a node has none (the GPU executor then computes that node on the host).
  std::shared_ptr<const GpuKernel> gpu;
  std::string layer;  // the layer it computes or differentiates ("conv2d_1"), or empty
  SpecLoc loc;
  /// The phase it runs in: its kind's category, except for expr nodes, which serve every phase (an
  /// expr node made by the gradient pass is Backward).
  OpCategory phase = OpCategory::Forward;
  /// A node made by the gradient pass: the forward (or loss) node whose gradient it computes, by its index
  /// in ModelGraph::nodes; -1 for the others. Passes that move nodes keep it (remap_forward_links).
  int forward = -1;

  /// The attributes as struct A: a std::logic_error naming the node when it holds another.
  template <class A>
  const A& attrs_as() const {
    if (const A* a = std::get_if<A>(&attrs)) return *a;
    wrong_attrs(A::kName);
  }
  template <class A>
  A& attrs_as() {
    if (A* a = std::get_if<A>(&attrs)) return *a;
    wrong_attrs(A::kName);
  }

 private:
  [[noreturn]] void wrong_attrs(const char* wanted) const;
};

struct ModelGraph {
  std::string name;             // the model's name
  int64_t batch = kUnknownDim;  // rows per batch when known (explain's FLOPs per step)
  std::vector<GraphValue> values;
  std::vector<GraphNode> nodes;           // in execution order
  std::vector<int> inputs;                // the model's inputs, in declaration order
  std::vector<std::string> input_fields;  // the data fields feeding them (train programs)
  int output = -1;                        // the model's output (what a trained model predicts)
  /// The train block's `precision`; the mixed_precision step pass inserts the rounding it implies.
  Precision precision = Precision::Fp32;

  // A training step (compiler/train/build_step.cpp):
  int target = -1;  // the loss target, fed from `target_field`
  std::string target_field;
  int loss = -1;                 // the scalar mean loss
  std::vector<int> params;       // trainable parameters in flat-buffer order
  std::vector<int> param_grads;  // the gradient of each, parallel to params (-1 when it gets none)
  std::vector<int> states;       // non-trainable state in its flat buffer's order

  int add_value(GraphValue v);
  /// Appends a node; its phase becomes its kind's category unless it runs in any phase (expr, round).
  int add_node(GraphNode n);
  int64_t param_elements() const;
  int64_t state_elements() const;
  /// The value's full shape for `rows` examples per batch: [rows, ...] when batched.
  Shape full_shape(int value, int64_t rows) const;
};

/// After a pass removed or inserted nodes: each node's `forward` moved to that node's new index
/// (`new_index[old]`, -1 for a removed node).
void remap_forward_links(std::vector<GraphNode>& nodes, const std::vector<int>& new_index);

/// Floating-point operations of one node for a batch of `rows` examples (a multiply-add counts two,
/// other element-wise work one per element; the optimizer step counts per step, not per example).
int64_t node_flops(const ModelGraph& g, const GraphNode& n, int64_t rows);

/// `pipec explain`'s text of a model or training-step graph.
std::string print_model_graph(const ModelGraph& g);

/// Structural checks: SSA order, arity per op, expr functions that verify and agree with their node's
/// values, parameter views that tile their flat buffers, gradients shaped like their parameters.
/// Empty when valid.
std::vector<std::string> verify_model_graph(const ModelGraph& g);

}  // namespace pipec
