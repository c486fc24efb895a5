// Losses, optimizers and distribution strategies: the values of a train block's entries.
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/sema/builtin_rules.h"
#include "runtime/model/model_graph.h"

namespace pipec {

namespace {

Type rule_loss(CallContext& ctx) {
  auto t = ctx.tensor("target");
  if (!t) return Type::error();
  if (t->dtype == DType::Bytes) {
    ctx.error(DiagKind::type_mismatch, ctx.arg("target").range, "a loss target must be numeric");
    return Type::error();
  }
  return Type::opaque("loss");
}

Type rule_optimizer(CallContext& ctx) {
  for (const ParamSpec& p : ctx.builtin.params) {
    if (!ctx.has(p.name)) continue;
    auto v = ctx.const_number(p.name);
    if (!v) return Type::error();
    if (*v < 0) {
      ctx.error(DiagKind::invalid_argument_value, ctx.arg(p.name).range,
                fmt::format("`{}` cannot be negative", p.name));
      return Type::error();
    }
  }
  return Type::opaque("optimizer");
}

Type rule_mirrored(CallContext& ctx) {
  const BoundArg& d = ctx.arg("devices");
  if (d.present && d.option.empty()) {
    if (d.type.is_scalar()) ctx.const_int("devices", 1);
    else ctx.const_int_list("devices");
  }
  return Type::opaque("strategy");
}

// An optimizer builtin's settings and doc; a switch, so that a new OPTIMIZER row without its
// signature does not compile (-Wswitch).
Builtin optimizer_builtin(OptimizerKind kind) {
  const std::string name = optimizer_kind_name(kind);
  switch (kind) {
    case OptimizerKind::Adam:
      return Builtin{
          name,
          BuiltinKind::Optimizer,
          {opt("lr", "1e-3"), opt("beta1", "0.9"), opt("beta2", "0.999"), opt("eps", "1e-7"), opt("weight_decay", "0")},
          "Adam with learning rate lr, Keras' form (eps added to sqrt(v), not to the bias-corrected sqrt(v_hat) as in "
          "PyTorch); a weight_decay decays the weights directly, as adamw does.",
          rule_optimizer};
    case OptimizerKind::AdamW:
      return Builtin{
          name,
          BuiltinKind::Optimizer,
          {opt("lr", "1e-3"), opt("beta1", "0.9"), opt("beta2", "0.999"), opt("eps", "1e-7"),
           opt("weight_decay", "0.004")},
          "Adam with decoupled weight decay (w -= lr * weight_decay * w before each step), Keras' AdamW: its "
          "default weight_decay is Keras' 0.004 (PyTorch's is 0.01).",
          rule_optimizer};
    case OptimizerKind::Sgd:
      return Builtin{
          name,
          BuiltinKind::Optimizer,
          {opt("lr", "1e-2"), opt("momentum", "0")},
          "Stochastic gradient descent, with optional momentum (Keras' form: v = momentum * v - lr * g; w += v).",
          rule_optimizer};
  }
  throw std::logic_error("an optimizer row without a builtin");
}

}  // namespace

// The losses and optimizers are the LOSS and OPTIMIZER rows of runtime/model/model_ops.def, one builtin
// per row, in the table's order.
void register_train_builtins(std::vector<Builtin>& out) {
  for (LossKind kind : all_loss_kinds()) {
    const std::string name = loss_kind_name(kind);
    out.push_back(Builtin{name,
                          BuiltinKind::Loss,
                          {req("target")},
                          name + " loss between the model output and the `target` field.",
                          rule_loss});
  }
  for (OptimizerKind kind : all_optimizer_kinds()) out.push_back(optimizer_builtin(kind));
  out.push_back(Builtin{"single", BuiltinKind::Strategy, {}, "Train on one device.", [](CallContext&) {
                          return Type::opaque("strategy");
                        }});
  out.push_back(Builtin{"mirrored",
                        BuiltinKind::Strategy,
                        {opt("devices", "all", {"all"})},
                        "Data-parallel training on several GPUs of one machine, gradients all-reduced with NCCL.",
                        rule_mirrored});
  out.push_back(Builtin{"multi_worker",
                        BuiltinKind::Strategy,
                        {},
                        "Data-parallel training across machines started by mpirun.",
                        [](CallContext&) { return Type::opaque("strategy"); }});
}

}  // namespace pipec
