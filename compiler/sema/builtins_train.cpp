// Losses, optimizers and distribution strategies: the values of a train block's entries.
#include <fmt/format.h>

#include "compiler/sema/builtin_rules.h"

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
      ctx.error(DiagKind::invalid_argument_value, ctx.arg(p.name).range, fmt::format("`{}` cannot be negative", p.name));
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

}  // namespace

void register_train_builtins(std::vector<Builtin>& out) {
  for (const char* name : {"mse", "mae", "cross_entropy", "binary_cross_entropy", "huber"})
    out.push_back(Builtin{name, BuiltinKind::Loss, {req("target")},
                          std::string(name) + " loss between the model output and the `target` field.", rule_loss});
  out.push_back(Builtin{"adam", BuiltinKind::Optimizer,
                        {opt("lr", "1e-3"), opt("beta1", "0.9"), opt("beta2", "0.999"), opt("eps", "1e-7"), opt("weight_decay", "0")},
                        "Adam with learning rate lr, Keras' form (eps added to sqrt(v), not to the bias-corrected sqrt(v_hat) as in "
                        "PyTorch); a weight_decay decays the weights directly, as adamw does.",
                        rule_optimizer});
  out.push_back(Builtin{"adamw", BuiltinKind::Optimizer,
                        {opt("lr", "1e-3"), opt("beta1", "0.9"), opt("beta2", "0.999"), opt("eps", "1e-7"), opt("weight_decay", "0.004")},
                        "Adam with decoupled weight decay (w -= lr * weight_decay * w before each step), Keras' AdamW: its "
                        "default weight_decay is Keras' 0.004 (PyTorch's is 0.01).",
                        rule_optimizer});
  out.push_back(Builtin{"sgd", BuiltinKind::Optimizer, {opt("lr", "1e-2"), opt("momentum", "0")},
                        "Stochastic gradient descent, with optional momentum (Keras' form: v = momentum * v - lr * g; w += v).",
                        rule_optimizer});
  out.push_back(Builtin{"single", BuiltinKind::Strategy, {}, "Train on one device.",
                        [](CallContext&) { return Type::opaque("strategy"); }});
  out.push_back(Builtin{"mirrored", BuiltinKind::Strategy, {opt("devices", "all", {"all"})},
                        "Data-parallel training on several GPUs of one machine, gradients all-reduced with NCCL.", rule_mirrored});
  out.push_back(Builtin{"multi_worker", BuiltinKind::Strategy, {},
                        "Data-parallel training across machines started by mpirun.", [](CallContext&) { return Type::opaque("strategy"); }});
}

}  // namespace pipec
