// Losses, optimizers, learning-rate schedules and distribution strategies: the values of a train block's entries.
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

bool is_schedule(const BoundArg& a) { return a.type.kind == TypeKind::Opaque && a.type.name == "schedule"; }

// A schedule is a value of its own kind; anywhere but an optimizer's `lr` it has no meaning.
bool refuse_schedule(CallContext& ctx, const ParamSpec& p) {
  if (!is_schedule(ctx.arg(p.name))) return false;
  auto& d = ctx.error(DiagKind::schedule_misplaced, ctx.arg(p.name).range,
                      fmt::format("`{}` of {} takes a number, not a learning-rate schedule", p.name, ctx.builtin.name));
  d.help = "a schedule gives the learning rate: `lr = cosine_decay(...)`";
  return true;
}

Type rule_optimizer(CallContext& ctx) {
  for (const ParamSpec& p : ctx.builtin.params) {
    if (!ctx.has(p.name)) continue;
    if (p.name == "lr" && is_schedule(ctx.arg(p.name))) continue;
    if (refuse_schedule(ctx, p)) return Type::error();
    if (!ctx.arg(p.name).option.empty()) continue;  // global_clipnorm = none
    auto v = ctx.const_number(p.name);
    if (!v) return Type::error();
    if (*v < 0) {
      ctx.error(DiagKind::invalid_argument_value, ctx.arg(p.name).range,
                fmt::format("`{}` cannot be negative", p.name));
      return Type::error();
    }
    if (p.name == "global_clipnorm" && *v == 0) {
      auto& d = ctx.error(DiagKind::invalid_argument_value, ctx.arg(p.name).range,
                          "`global_clipnorm` must be above 0: every gradient would be scaled to nothing");
      d.help = "leave it out (or write `none`) to train without clipping";
      return Type::error();
    }
  }
  return Type::opaque("optimizer");
}

// cosine_decay, linear_warmup, exponential_decay: constant settings, steps integers.
Type rule_schedule(CallContext& ctx) {
  for (const ParamSpec& p : ctx.builtin.params) {
    if (!ctx.has(p.name)) continue;
    if (refuse_schedule(ctx, p)) return Type::error();
    if (!ctx.arg(p.name).option.empty()) continue;  // warmup_target = none
    const bool steps = p.name == "decay_steps" || p.name == "warmup_steps";
    if (steps) {
      // decay_steps divides: at least 1. A warm-up of 0 steps is no warm-up.
      if (!ctx.const_int(p.name, p.name == "decay_steps" ? 1 : 0)) return Type::error();
      continue;
    }
    auto v = ctx.const_number(p.name);
    if (!v) return Type::error();
    if (*v < 0) {
      ctx.error(DiagKind::invalid_argument_value, ctx.arg(p.name).range,
                fmt::format("`{}` cannot be negative", p.name));
      return Type::error();
    }
    if (p.name == "alpha" && *v > 1) {
      ctx.error(DiagKind::invalid_argument_value, ctx.arg(p.name).range,
                "`alpha` is the share of the learning rate left at the end of the decay: at most 1");
      return Type::error();
    }
    if (p.name == "decay_rate" && *v == 0) {
      ctx.error(DiagKind::invalid_argument_value, ctx.arg(p.name).range, "`decay_rate` must be above 0");
      return Type::error();
    }
  }
  return Type::opaque("schedule");
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
// signature does not compile (-Wswitch). Every optimizer's `lr` may be a learning-rate schedule
// (rule_optimizer), and every optimizer takes global_clipnorm.
Builtin optimizer_builtin(OptimizerKind kind) {
  const std::string name = optimizer_kind_name(kind);
  const ParamSpec clip = opt("global_clipnorm", "none", {"none"});
  switch (kind) {
    case OptimizerKind::Adam:
      return Builtin{
          name,
          BuiltinKind::Optimizer,
          {opt("lr", "1e-3"), opt("beta1", "0.9"), opt("beta2", "0.999"), opt("eps", "1e-7"), opt("weight_decay", "0"),
           clip},
          "Adam with learning rate lr, Keras' form (eps added to sqrt(v), not to the bias-corrected sqrt(v_hat) as in "
          "PyTorch); a weight_decay decays the weights directly, as adamw does.",
          rule_optimizer};
    case OptimizerKind::AdamW:
      return Builtin{
          name,
          BuiltinKind::Optimizer,
          {opt("lr", "1e-3"), opt("beta1", "0.9"), opt("beta2", "0.999"), opt("eps", "1e-7"),
           opt("weight_decay", "0.004"), clip},
          "Adam with decoupled weight decay (w -= lr * weight_decay * w before each step), Keras' AdamW: its "
          "default weight_decay is Keras' 0.004 (PyTorch's is 0.01).",
          rule_optimizer};
    case OptimizerKind::Sgd:
      return Builtin{
          name,
          BuiltinKind::Optimizer,
          {opt("lr", "1e-2"), opt("momentum", "0"), clip},
          "Stochastic gradient descent, with optional momentum (Keras' form: v = momentum * v - lr * g; w += v).",
          rule_optimizer};
  }
  throw std::logic_error("an optimizer row without a builtin");
}

}  // namespace

// The losses and optimizers are the LOSS and OPTIMIZER rows of runtime/model/model_ops.def, one builtin
// per row, in the table's order; the schedules and strategies follow.
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
  out.push_back(
      Builtin{"cosine_decay",
              BuiltinKind::Schedule,
              {req("initial"), req("decay_steps"), opt("alpha", "0"), opt("warmup_target", "none", {"none"}),
               opt("warmup_steps", "0")},
              "Keras' CosineDecay: from `initial` down to alpha * initial over decay_steps steps along half a cosine; "
              "with warmup_target, first a linear rise from `initial` to it over warmup_steps, then the decay from it.",
              rule_schedule});
  out.push_back(Builtin{"linear_warmup",
                        BuiltinKind::Schedule,
                        {req("target"), req("warmup_steps"), opt("initial", "0")},
                        "A linear rise from `initial` to `target` over warmup_steps steps, then `target`.",
                        rule_schedule});
  out.push_back(Builtin{"exponential_decay",
                        BuiltinKind::Schedule,
                        {req("initial"), req("decay_steps"), req("decay_rate")},
                        "Keras' ExponentialDecay: initial * decay_rate ^ (step / decay_steps).",
                        rule_schedule});
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
