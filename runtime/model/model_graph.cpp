// The op table, value and node helpers of the model IR.
#include "runtime/model/model_graph.h"

#include <stdexcept>

#include <fmt/format.h>

namespace pipec {

const std::vector<ModelOpInfo>& all_model_ops() {
  static const std::vector<ModelOpInfo> ops = {
#define X(name, text, category, inputs, outputs, keras) \
  {ModelOp::name, text, OpCategory::category, inputs, outputs, keras},
#include "runtime/model/model_ops.def"
#undef X
  };
  return ops;
}

const ModelOpInfo& model_op_info(ModelOp op) { return all_model_ops().at(static_cast<size_t>(op)); }

const char* model_op_name(ModelOp op) { return model_op_info(op).name; }

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
struct NamedKind {
  Kind kind;
  const char* name;
};

const std::vector<NamedKind<LossKind>>& loss_table() {
  static const std::vector<NamedKind<LossKind>> table = {
#define LOSS(kind, name) {LossKind::kind, name},
#include "runtime/model/model_ops.def"
#undef LOSS
  };
  return table;
}

const std::vector<NamedKind<OptimizerKind>>& optimizer_table() {
  static const std::vector<NamedKind<OptimizerKind>> table = {
#define OPTIMIZER(kind, name) {OptimizerKind::kind, name},
#include "runtime/model/model_ops.def"
#undef OPTIMIZER
  };
  return table;
}

const std::vector<NamedKind<MetricKind>>& metric_table() {
  static const std::vector<NamedKind<MetricKind>> table = {
#define METRIC(kind, name) {MetricKind::kind, name},
#include "runtime/model/model_ops.def"
#undef METRIC
  };
  return table;
}

template <class Kind>
std::vector<Kind> kinds_of(const std::vector<NamedKind<Kind>>& table) {
  std::vector<Kind> out;
  for (const auto& row : table) out.push_back(row.kind);
  return out;
}

template <class Kind>
std::optional<Kind> kind_named(const std::vector<NamedKind<Kind>>& table, std::string_view name) {
  for (const auto& row : table)
    if (name == row.name) return row.kind;
  return std::nullopt;
}

}  // namespace

const std::vector<LossKind>& all_loss_kinds() {
  static const std::vector<LossKind> kinds = kinds_of(loss_table());
  return kinds;
}
const char* loss_kind_name(LossKind k) { return loss_table().at(static_cast<size_t>(k)).name; }
std::optional<LossKind> loss_kind_from_name(std::string_view name) { return kind_named(loss_table(), name); }

const std::vector<OptimizerKind>& all_optimizer_kinds() {
  static const std::vector<OptimizerKind> kinds = kinds_of(optimizer_table());
  return kinds;
}
const char* optimizer_kind_name(OptimizerKind k) { return optimizer_table().at(static_cast<size_t>(k)).name; }
std::optional<OptimizerKind> optimizer_kind_from_name(std::string_view name) {
  return kind_named(optimizer_table(), name);
}

const std::vector<MetricKind>& all_metric_kinds() {
  static const std::vector<MetricKind> kinds = kinds_of(metric_table());
  return kinds;
}
const char* metric_kind_name(MetricKind k) { return metric_table().at(static_cast<size_t>(k)).name; }
std::optional<MetricKind> metric_kind_from_name(std::string_view name) { return kind_named(metric_table(), name); }

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
    case Init::Zeros: return "zeros";
    case Init::Ones: return "ones";
  }
  return "?";
}

const Value* GraphNode::attr(const std::string& name) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? nullptr : &it->second;
}

static const Value& need(const GraphNode& n, const std::string& name) {
  const Value* v = n.attr(name);
  if (!v) throw std::logic_error(fmt::format("{} node has no attribute `{}`", model_op_name(n.op), name));
  return *v;
}

int64_t GraphNode::attr_int(const std::string& name) const {
  const Value& v = need(*this, name);
  return v.kind == Value::Float ? static_cast<int64_t>(v.f) : v.i;
}

double GraphNode::attr_number(const std::string& name) const { return need(*this, name).as_double(); }

std::vector<int64_t> GraphNode::attr_ints(const std::string& name) const {
  const Value& v = need(*this, name);
  if (v.kind != Value::List) return {v.i};
  std::vector<int64_t> out;
  for (const Value& x : v.items) out.push_back(x.i);
  return out;
}

std::string GraphNode::attr_symbol(const std::string& name) const { return need(*this, name).s; }

int ModelGraph::add_value(GraphValue v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

int ModelGraph::add_node(GraphNode n) {
  if (n.op != ModelOp::Expr) n.phase = model_op_info(n.op).category;
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
