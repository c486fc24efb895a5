#include "compiler/train/lower_train.h"

#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "compiler/sema/builtins.h"
#include "compiler/train/build_step.h"
#include "compiler/train/gradients.h"
#include "compiler/train/lower_model.h"

namespace pipec {

namespace {

const Expr* entry(const Decl& train, const std::string& key) {
  for (const TrainEntry& e : train.entries)
    if (e.key == key) return e.value.get();
  return nullptr;
}

const CallExpr* as_call(const Expr* e) {
  if (!e || e->kind != ExprKind::Call) return nullptr;
  const CallExpr* c = e->as<CallExpr>();
  return c->callee->kind == ExprKind::Name ? c : nullptr;
}

const std::string& callee_name(const CallExpr& c) { return c.callee->as<NameExpr>()->name; }

const Type* field_type(const ElementInfo& e, const std::string& name) {
  for (const Field& f : e.fields)
    if (f.name == name) return f.type.get();
  return nullptr;
}

std::string number_text(double v) {
  std::string s = fmt::format("{}", v);
  return s;
}

// The argument of a builtin's parameter `i` in a call, by name or position; null when not given.
const Expr* argument(const CallExpr& call, const Builtin& b, size_t i) {
  const Expr* given = nullptr;
  size_t positional = 0;
  for (const Arg& a : call.args) {
    if (a.name == b.params[i].name || (a.name.empty() && positional == i)) given = a.value.get();
    if (a.name.empty()) ++positional;
  }
  return given;
}

// A call's numeric settings, defaults filled in; a parameter left at (or given) an option word such
// as `none` is left out. `text` gets "name=value, ..." for explain.
std::map<std::string, double> numeric_settings(const CallExpr& call, const Builtin& b, std::string& text) {
  std::map<std::string, double> out;
  for (size_t i = 0; i < b.params.size(); ++i) {
    const ParamSpec& p = b.params[i];
    const Expr* given = argument(call, b, i);
    std::string shown;
    if (given && given->constant) {
      out[p.name] = given->constant->as_double();
      shown = number_text(out[p.name]);
    } else if (!given && !p.default_text.empty() && p.options.empty()) {
      out[p.name] = std::strtod(p.default_text.c_str(), nullptr);
      shown = number_text(out[p.name]);
    } else {
      continue;  // left at an option word (global_clipnorm = none), or a schedule the caller prints
    }
    text += fmt::format("{}{}={}", text.empty() ? "" : ", ", p.name, shown);
  }
  return out;
}

// Attribute struct `a`'s optional numeric fields from a builtin's settings, by name: every setting of the
// builtin is a field of the struct (model_attrs.def), so none may be left over.
template <class A>
void set_numeric_fields(A& a, const std::map<std::string, double>& settings, const std::string& builtin) {
  size_t set = 0;
  for_each_attr(a, [&](const char* name, auto& field) {
    if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::optional<double>>)
      if (auto it = settings.find(name); it != settings.end()) {
        field = it->second;
        ++set;
      }
  });
  if (set != settings.size())
    throw std::logic_error(fmt::format("lowering: a setting of {} is no attribute of {}", builtin, A::kName));
}

}  // namespace

const Expr* train_data_expr(const Decl& train) { return entry(train, "data"); }
const Expr* train_validation_expr(const Decl& train) { return entry(train, "validation"); }

std::optional<TrainProgram> lower_train(const Program& program, const Decl& train, Diagnostics& diags) {
  TrainProgram t;
  t.name = train.name;
  t.loc = spec_location(program, train.name_range);
  const Expr* data = entry(train, "data");
  if (!data || data->type.kind != TypeKind::Dataset || !data->type.element) return std::nullopt;
  const ElementInfo& element = *data->type.element;
  if (data->kind == ExprKind::Name) {
    const auto& n = *data->as<NameExpr>();
    if (n.target.decl && n.target.decl->kind == DeclKind::Pipeline) t.data_pipeline = n.name;
  }
  if (element.batch_rank != 1) {
    diags.report(DiagKind::unsupported_in_model, data->range,
                 fmt::format("the training data is batched {} times; a training step takes one batch dimension",
                             element.batch_rank));
    return std::nullopt;
  }

  // model = net(field, ...)
  const CallExpr* model_call = as_call(entry(train, "model"));
  if (!model_call) return std::nullopt;
  const Decl* model = model_call->callee->as<NameExpr>()->target.decl;
  if (!model || model->kind != DeclKind::Model) return std::nullopt;
  std::vector<std::string> fields;
  int64_t batch = kUnknownDim;
  for (const Arg& a : model_call->args) {
    if (a.value->kind != ExprKind::Name || !field_type(element, a.value->as<NameExpr>()->name)) {
      diags.report(DiagKind::unsupported_in_model, a.value->range,
                   "a model input must be a field of the data, named as such");
      return std::nullopt;
    }
    fields.push_back(a.value->as<NameExpr>()->name);
    const Type* ft = field_type(element, fields.back());
    if (ft->rank() >= 1) batch = ft->shape[0];
  }
  auto lowered = lower_model(program, *model, batch, diags);
  if (!lowered) return std::nullopt;
  ModelGraph& g = lowered->graph;
  g.input_fields = fields;
  // The model alone in inference mode, before the step is built around `g`: what `pipec build --train`
  // serves (same parameter names and layout as the step).
  t.inference = g;
  set_inference_mode(t.inference);

  // loss = kind(target)
  const CallExpr* loss_call = as_call(entry(train, "loss"));
  if (!loss_call || loss_call->args.empty()) return std::nullopt;
  // The checker accepts only the loss and optimizer builtins, each a row of model_ops.def.
  std::optional<LossKind> loss_kind = loss_kind_from_name(callee_name(*loss_call));
  if (!loss_kind) return std::nullopt;
  LossSpec loss;
  loss.kind = *loss_kind;
  const Expr* target = loss_call->args[0].value.get();
  if (target->kind != ExprKind::Name || !field_type(element, target->as<NameExpr>()->name)) {
    diags.report(DiagKind::unsupported_in_model, target->range,
                 "the loss target must be a field of the data, named as such");
    return std::nullopt;
  }
  loss.target_field = target->as<NameExpr>()->name;
  const Type* tt = field_type(element, loss.target_field);
  loss.target_shape.assign(tt->shape.begin() + 1, tt->shape.end());
  loss.sparse = loss.kind == LossKind::CrossEntropy && is_integer(tt->dtype);
  t.loss_text = fmt::format("{}({})", loss_kind_name(loss.kind), loss.target_field);

  // optimizer = kind(settings): every setting, defaults from the builtin's signature.
  const CallExpr* opt_call = as_call(entry(train, "optimizer"));
  if (!opt_call) return std::nullopt;
  std::optional<OptimizerKind> opt_kind = optimizer_kind_from_name(callee_name(*opt_call));
  const Builtin* ob = opt_kind ? find_builtin(optimizer_kind_name(*opt_kind), {BuiltinKind::Optimizer}) : nullptr;
  if (!ob) return std::nullopt;
  OptimizerSpec opt;
  opt.attrs.kind = *opt_kind;
  std::string settings;
  std::map<std::string, double> optimizer_settings = numeric_settings(*opt_call, *ob, settings);
  // lr = schedule(...): the schedule's settings go beside the optimizer's.
  for (size_t i = 0; i < ob->params.size(); ++i) {
    const CallExpr* sc = ob->params[i].name == "lr" ? as_call(argument(*opt_call, *ob, i)) : nullptr;
    const Builtin* sb = sc ? find_builtin(callee_name(*sc), {BuiltinKind::Schedule}) : nullptr;
    const std::optional<ScheduleKind> schedule = sb ? schedule_kind_from_name(sb->name) : std::nullopt;
    if (!schedule) continue;
    std::string schedule_text;
    std::map<std::string, double> schedule_settings = numeric_settings(*sc, *sb, schedule_text);
    // linear_warmup's `target` is the schedule's warm-up target.
    if (auto it = schedule_settings.find("target"); it != schedule_settings.end()) {
      schedule_settings["warmup_target"] = it->second;
      schedule_settings.erase(it);
    }
    ScheduleAttrs s{.kind = *schedule};
    set_numeric_fields(s, schedule_settings, sb->name);
    opt.attrs.schedule = s;
    settings = fmt::format("lr={}({}){}{}", sb->name, schedule_text, settings.empty() ? "" : ", ", settings);
    optimizer_settings["lr"] = s.initial.value_or(0);
  }
  set_numeric_fields(opt.attrs, optimizer_settings, ob->name);
  t.optimizer_text = fmt::format("{}({})", optimizer_kind_name(opt.attrs.kind), settings);

  for (const char* key : {"steps", "epochs"})
    if (const Expr* e = entry(train, key); e && e->constant)
      (std::string(key) == "steps" ? t.steps : t.epochs) = e->constant->i;
  // The checker accepts only the words of model_attrs.def's Precision.
  if (const Expr* e = entry(train, "precision"); e && e->kind == ExprKind::Name)
    if (std::optional<Precision> p = enum_from_text<Precision>(e->as<NameExpr>()->name)) t.precision = *p;
  if (const CallExpr* s = as_call(entry(train, "strategy"))) {
    const std::optional<StrategyKind> kind = strategy_kind_from_name(callee_name(*s));
    // The checker accepts only the strategy builtins, which ModelTable.* holds to the STRATEGY rows.
    if (!kind) throw std::logic_error("lowering: strategy " + callee_name(*s) + " has no STRATEGY row");
    t.strategy = *kind;
    t.strategy_loc = spec_location(program, s->range);
    // mirrored(devices = all | n | [ids]): the checker made a count or the ids constants.
    const Builtin* sb = find_builtin(callee_name(*s), {BuiltinKind::Strategy});
    for (size_t i = 0; sb && i < sb->params.size(); ++i) {
      const Expr* d = sb->params[i].name == "devices" ? argument(*s, *sb, i) : nullptr;
      if (!d) continue;
      if (d->kind == ExprKind::List) {
        t.devices.kind = MirroredDevices::Kind::Ids;
        for (const ExprPtr& item : static_cast<const ListExpr*>(d)->items)
          if (item->constant) t.devices.ids.push_back(item->constant->i);
      } else if (d->constant) {
        t.devices.kind = MirroredDevices::Kind::Count;
        t.devices.count = d->constant->i;
      }
    }
  }
  g.precision = t.precision;
  t.inference.precision = t.precision;

  try {
    build_train_step(g, loss, opt);
  } catch (const GradientError& e) {
    SourceRange where = e.node >= 0 && static_cast<size_t>(e.node) < lowered->node_ranges.size()
                            ? lowered->node_ranges[e.node]
                            : train.name_range;
    auto& d = diags.report(DiagKind::not_differentiable, where,
                           fmt::format("{}: the loss reaches the parameters before it only through this", e.what()));
    d.help = "compute it in the pipeline, or rewrite it with ops that have gradients";
    return std::nullopt;
  }
  if (auto problems = verify_model_graph(g); !problems.empty()) {
    std::string all;
    for (const std::string& p : problems) all += "\n  " + p;
    throw std::logic_error(
        fmt::format("the step graph of train `{}` does not verify:{}\n{}", train.name, all, print_model_graph(g)));
  }
  t.step = std::move(g);

  // validation: the same model again (same parameter names and layout), in inference mode, and the loss.
  if (const Expr* v = entry(train, "validation"); v && v->type.kind == TypeKind::Dataset && v->type.element) {
    const ElementInfo& ve = *v->type.element;
    if (ve.batch_rank != 1) {
      diags.report(
          DiagKind::unsupported_in_model, v->range,
          fmt::format("the validation data is batched {} times; evaluation takes one batch dimension", ve.batch_rank));
      return std::nullopt;
    }
    EvalProgram ev;
    if (v->kind == ExprKind::Name)
      if (const Decl* d = v->as<NameExpr>()->target.decl; d && d->kind == DeclKind::Pipeline) ev.pipeline = d->name;
    if (const Expr* e = entry(train, "eval_every"); e && e->constant) ev.every = e->constant->i;
    if (const Expr* m = entry(train, "metrics")) {
      std::vector<const Expr*> items;
      if (m->kind == ExprKind::List)
        for (const auto& item : m->as<ListExpr>()->items) items.push_back(item.get());
      else items.push_back(m);
      for (const Expr* item : items)
        if (item->kind == ExprKind::Name)
          if (std::optional<MetricKind> k = metric_kind_from_name(item->as<NameExpr>()->name)) ev.metrics.push_back(*k);
    }
    int64_t eval_batch = kUnknownDim;
    if (const Type* ft = field_type(ve, fields.empty() ? loss.target_field : fields[0]); ft && ft->rank() >= 1)
      eval_batch = ft->shape[0];
    auto again = lower_model(program, *model, eval_batch, diags);
    if (!again) return std::nullopt;
    ev.graph = std::move(again->graph);
    ev.graph.input_fields = fields;
    ev.graph.precision = t.precision;
    set_inference_mode(ev.graph);
    add_loss(ev.graph, loss);
    if (auto problems = verify_model_graph(ev.graph); !problems.empty()) {
      std::string all;
      for (const std::string& p : problems) all += "\n  " + p;
      throw std::logic_error(fmt::format("the evaluation graph of train `{}` does not verify:{}", train.name, all));
    }
    t.eval = std::move(ev);
  }
  return t;
}

}  // namespace pipec
