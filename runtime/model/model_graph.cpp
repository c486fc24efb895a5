// The op table, value and node helpers of the model IR.
#include "runtime/model/model_graph.h"

#include <stdexcept>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "runtime/model/model_flops.h"

namespace pipec {

const std::vector<ModelOpInfo>& all_model_ops() {
  using enum ModelOp;
  using namespace forward_values;
#define PIPEC_LIST(...) \
  { __VA_ARGS__ }
  static const std::vector<ModelOpInfo> ops = {
#define OP(name, text, category, inputs, outputs, keras, attrs, flops, forward, reads) \
  {ModelOp::name,                                                                      \
   text,                                                                               \
   OpCategory::category,                                                               \
   inputs,                                                                             \
   outputs,                                                                            \
   keras,                                                                              \
   attrs_index<attrs>(),                                                               \
   &flops_rules::flops,                                                                \
   PIPEC_LIST forward,                                                                 \
   PIPEC_LIST reads},
#include "runtime/model/model_ops.def"
#undef OP
  };
#undef PIPEC_LIST
  return ops;
}

const ModelOpInfo& model_op_info(ModelOp op) { return all_model_ops().at(static_cast<size_t>(op)); }

const char* model_op_name(ModelOp op) { return model_op_info(op).name; }

ModelAttrs default_attrs(ModelOp op) {
  const size_t index = model_op_info(op).attrs;
  ModelAttrs out;
  [&]<size_t... I>(std::index_sequence<I...>) { ((index == I ? (out.emplace<I>(), 0) : 0), ...); }
  (std::make_index_sequence<std::variant_size_v<ModelAttrs>>());
  return out;
}

bool runs_in_any_phase(ModelOp op) { return op == ModelOp::Expr || op == ModelOp::Round; }

std::optional<ModelOp> parse_model_op(std::string_view name) {
  for (const ModelOpInfo& i : all_model_ops())
    if (name == i.name) return i.op;
  return std::nullopt;
}

std::optional<LayerLowering> layer_lowering(std::string_view builtin) {
  static const std::vector<std::pair<std::string_view, OpKind>> expr_layers = {
#define EXPR_LAYER(builtin, op_kind) {builtin, OpKind::op_kind},
#include "runtime/model/model_ops.def"
#undef EXPR_LAYER
  };
  for (const auto& [name, op] : expr_layers)
    if (name == builtin) return LayerLowering{std::nullopt, op};
  if (std::optional<ModelOp> op = parse_model_op(builtin);
      op && *op != ModelOp::Expr && model_op_info(*op).category == OpCategory::Forward)
    return LayerLowering{op, std::nullopt};
  return std::nullopt;
}

namespace {

template <class Kind>
std::vector<Kind> kinds_of() {
  std::vector<Kind> out;
  for (const EnumSpelling<Kind>& row : enum_spellings<Kind>()) out.push_back(row.value);
  return out;
}

}  // namespace

const std::vector<LossKind>& all_loss_kinds() {
  static const std::vector<LossKind> kinds = kinds_of<LossKind>();
  return kinds;
}
const char* loss_kind_name(LossKind k) { return enum_text(k); }
std::optional<LossKind> loss_kind_from_name(std::string_view name) { return enum_from_text<LossKind>(name); }

const std::vector<OptimizerKind>& all_optimizer_kinds() {
  static const std::vector<OptimizerKind> kinds = kinds_of<OptimizerKind>();
  return kinds;
}
const char* optimizer_kind_name(OptimizerKind k) { return enum_text(k); }
std::optional<OptimizerKind> optimizer_kind_from_name(std::string_view name) {
  return enum_from_text<OptimizerKind>(name);
}

const std::vector<ScheduleKind>& all_schedule_kinds() {
  static const std::vector<ScheduleKind> kinds = kinds_of<ScheduleKind>();
  return kinds;
}
const char* schedule_kind_name(ScheduleKind k) { return enum_text(k); }
std::optional<ScheduleKind> schedule_kind_from_name(std::string_view name) {
  return enum_from_text<ScheduleKind>(name);
}

const std::vector<MetricKind>& all_metric_kinds() {
  static const std::vector<MetricKind> kinds = kinds_of<MetricKind>();
  return kinds;
}
const char* metric_kind_name(MetricKind k) { return enum_text(k); }
std::optional<MetricKind> metric_kind_from_name(std::string_view name) { return enum_from_text<MetricKind>(name); }

const std::vector<StrategyKind>& all_strategy_kinds() {
  static const std::vector<StrategyKind> kinds = kinds_of<StrategyKind>();
  return kinds;
}
const char* strategy_kind_name(StrategyKind k) { return enum_text(k); }
std::optional<StrategyKind> strategy_kind_from_name(std::string_view name) {
  return enum_from_text<StrategyKind>(name);
}

const char* value_role_name(ValueRole r) {
  switch (r) {
    case ValueRole::Input: return "input";
    case ValueRole::Target: return "target";
    case ValueRole::Param: return "param";
    case ValueRole::State: return "state";
    case ValueRole::Activation: return "activation";
    case ValueRole::Gradient: return "gradient";
  }
  return "?";
}

const char* init_name(Init i) {
  switch (i) {
    case Init::None: return "none";
    case Init::GlorotUniform: return "glorot_uniform";
    case Init::Uniform: return "uniform";
    case Init::Zeros: return "zeros";
    case Init::Ones: return "ones";
  }
  return "?";
}

void GraphNode::wrong_attrs(const char* wanted) const {
  throw std::logic_error(fmt::format("{} node{}{} holds {}, not {}", model_op_name(op),
                                     layer.empty() ? "" : " of layer ", layer, attrs_name(attrs), wanted));
}

void remap_forward_links(std::vector<GraphNode>& nodes, const std::vector<int>& new_index) {
  for (GraphNode& n : nodes)
    if (n.forward >= 0) n.forward = n.forward < static_cast<int>(new_index.size()) ? new_index[n.forward] : -1;
}

int ModelGraph::add_value(GraphValue v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

int ModelGraph::add_node(GraphNode n) {
  if (!runs_in_any_phase(n.op)) n.phase = model_op_info(n.op).category;
  nodes.push_back(std::move(n));
  return static_cast<int>(nodes.size()) - 1;
}

int64_t ModelGraph::param_elements() const {
  int64_t n = 0;
  for (int p : params) n += values[p].elements_per_example();
  return n;
}

int64_t ModelGraph::state_elements() const {
  int64_t n = 0;
  for (int s : states) n += values[s].elements_per_example();
  return n;
}

Shape ModelGraph::full_shape(int value, int64_t rows) const {
  const GraphValue& v = values.at(value);
  if (!v.batched) return v.shape;
  Shape s = v.shape;
  s.insert(s.begin(), rows);
  return s;
}

}  // namespace pipec
