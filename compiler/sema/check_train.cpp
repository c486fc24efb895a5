// train blocks: the data pipeline, the model called on fields of its element, loss, optimizer,
// precision, strategy and steps.
#include <string_view>

#include <fmt/format.h>

#include "compiler/sema/checker.h"
#include "compiler/sema/promotion.h"
#include "runtime/model/model_graph.h"

namespace pipec {

namespace {

// The type of one example of a batched field: its batch dimensions removed.
Type unbatched(const Type& t, int batch_rank) {
  if (!t.is_tensor() || t.rank() < batch_rank) return t;
  return Type::tensor(t.dtype, std::vector<int64_t>(t.shape.begin() + batch_rank, t.shape.end()));
}

}  // namespace

// trainDecl : TRAIN name ASSIGN LBRACE (trainEntry (COMMA | SEMI)?)* RBRACE ;
void Checker::check_train(Decl& d) {
  ctx_ = CheckContext::Train;
  std::map<std::string, TrainEntry*> entries;
  std::vector<std::string> keys;
  for (const TrainEntrySpec& s : train_entry_specs()) keys.push_back(s.key);
  for (TrainEntry& e : d.entries) {
    bool known = std::find(keys.begin(), keys.end(), e.key) != keys.end();
    if (!known) {
      auto& diag = diags().report(DiagKind::unknown_train_entry, e.key_range,
                                  fmt::format("a train block has no entry `{}`", e.key));
      std::string best = closest_name(e.key, keys);
      if (!best.empty()) {
        diag.help = fmt::format("did you mean `{}`?", best);
        diag.replacement = best;
      } else if (e.key == "lr" || e.key == "learning_rate" || e.key == "momentum" || e.key == "weight_decay") {
        diag.help = fmt::format("optimizer settings are arguments of the optimizer, e.g. `optimizer = adam({} = ...)`",
                                e.key == "learning_rate" ? "lr" : e.key);
      } else {
        std::string list;
        for (size_t i = 0; i < keys.size(); ++i) list += (i ? ", " : "") + keys[i];
        diag.notes.push_back({{}, "the entries are: " + list});
      }
      continue;
    }
    if (entries.count(e.key)) {
      diags().report(DiagKind::duplicate_definition, e.key_range, fmt::format("`{}` is given twice", e.key));
      continue;
    }
    entries[e.key] = &e;
  }
  std::vector<std::string> missing;
  for (const TrainEntrySpec& s : train_entry_specs())
    if (s.required && !entries.count(s.key)) missing.push_back(fmt::format("`{}`", s.key));
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size(); ++i)
      list += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + missing[i];
    auto& diag = diags().report(
        DiagKind::train_missing_entry, d.name_range,
        fmt::format("train `{}` is missing its {} {}", d.name, list, missing.size() == 1 ? "entry" : "entries"));
    diag.help = "a train block needs data, model, loss and optimizer";
  }

  // data: a dataset whose element the other entries refer to by field name.
  Type data = Type::error();
  if (auto it = entries.find("data"); it != entries.end()) {
    data = check_train_entry(*it->second);
    if (!data.is_error() && data.kind != TypeKind::Dataset) {
      diags().report(DiagKind::not_a_dataset, it->second->value->range,
                     fmt::format("`data` must be a pipeline, not {}", type_to_string(data)));
      data = Type::error();
    } else if (!data.is_error() && data.element->batch_rank == 0) {
      diags().report(DiagKind::model_input_mismatch, it->second->value->range,
                     "the training data must be batched; add `| batch(n)` to the pipeline");
    }
  }
  std::shared_ptr<const ElementInfo> element = data.is_error() ? nullptr : data.element;
  train_element_ = element.get();

  Type model_out = Type::error();
  if (auto it = entries.find("model"); it != entries.end()) {
    Expr& v = *it->second->value;
    if (!element) {
      // Without a data element the field names cannot be checked; stay quiet.
    } else {
      Type t = check_train_entry(*it->second);
      const Expr* head = head_name(&v);
      const Binding* target = head && head->kind == ExprKind::Name ? &head->as<NameExpr>()->target : nullptr;
      bool calls_model = v.kind == ExprKind::Call && target && target->kind == Binding::Global && target->decl &&
                         target->decl->kind == DeclKind::Model;
      if (calls_model) {
        model_out = t;
      } else if (!t.is_error()) {
        diags().report(DiagKind::type_mismatch, v.range,
                       "`model` must call a model with fields of the data, like `net(board, flags)`");
      }
    }
  }
  std::string loss_name;
  bool class_labels = false;  // cross_entropy with integer class labels
  if (auto it = entries.find("loss"); it != entries.end() && element) {
    Type t = check_train_entry(*it->second);
    if (!t.is_error() && !model_out.is_error() && t.kind == TypeKind::Opaque) {
      // The loss target is the first argument of the loss call.
      auto* call = it->second->value->kind == ExprKind::Call ? it->second->value->as<CallExpr>() : nullptr;
      if (call && !call->args.empty()) {
        const Type& target = call->args[0].value->type;
        Type per_example = unbatched(target, element->batch_rank);
        loss_name = call->callee->kind == ExprKind::Name ? call->callee->as<NameExpr>()->name : "";
        class_labels = loss_kind_from_name(loss_name) == LossKind::CrossEntropy && per_example.is_tensor() &&
                       is_integer(per_example.dtype);
        // cross_entropy with integer targets takes class labels: one per position of the output
        // without its class axis (Keras' sparse categorical cross-entropy). Other targets must have
        // as many elements as the output.
        if (class_labels && model_out.is_tensor()) {
          std::vector<int64_t> positions = model_out.shape;
          if (!positions.empty()) positions.pop_back();
          if (model_out.rank() == 0 || fit_shape(positions, per_example.shape) != ShapeFit::Fits) {
            auto& diag =
                diags().report(DiagKind::model_input_mismatch, call->args[0].value->range,
                               fmt::format("class labels for cross_entropy must be {} per example (the model produces "
                                           "{}, classes last), not {}",
                                           type_to_string(Type::tensor(per_example.dtype, positions)),
                                           type_to_string(model_out), type_to_string(per_example)));
            diag.help =
                "give integer class labels one per position, or one-hot / probability targets shaped like the output";
          }
        } else if (per_example.is_tensor() && model_out.is_tensor() &&
                   per_example.num_elements() != model_out.num_elements() && per_example.num_elements() >= 0 &&
                   model_out.num_elements() >= 0) {
          diags().report(DiagKind::model_input_mismatch, call->args[0].value->range,
                         fmt::format("the loss target is {} per example but the model produces {}",
                                     type_to_string(per_example), type_to_string(model_out)));
        }
      }
    }
  }
  if (auto it = entries.find("optimizer"); it != entries.end()) check_train_entry(*it->second);
  if (auto it = entries.find("strategy"); it != entries.end()) check_train_entry(*it->second);
  if (auto it = entries.find("precision"); it != entries.end()) {
    Expr& v = *it->second->value;
    const std::vector<std::string>& kPrecisions = precision_words();
    if (at_probe(v)) record_name_site(v, false, nullptr, &kPrecisions);
    if (v.kind == ExprKind::Name &&
        std::find(kPrecisions.begin(), kPrecisions.end(), v.as<NameExpr>()->name) != kPrecisions.end()) {
      v.type = Type::symbol(v.as<NameExpr>()->name);
      v.as<NameExpr>()->target = Binding{Binding::Option, v.as<NameExpr>()->name, {}, nullptr, nullptr};
    } else {
      std::string word = v.kind == ExprKind::Name ? v.as<NameExpr>()->name : "";
      bool quoted = v.kind == ExprKind::StringLit;
      if (quoted) word = v.as<StringLitExpr>()->value;
      auto& diag =
          diags().report(DiagKind::unknown_option, v.range, "`precision` must be one of fp32, mixed_fp16, mixed_bf16");
      std::string best = std::find(kPrecisions.begin(), kPrecisions.end(), word) != kPrecisions.end()
                             ? word
                             : closest_name(word, kPrecisions);
      if (!best.empty()) {
        diag.help = quoted ? fmt::format("write the option without quotes: `{}`", best)
                           : fmt::format("did you mean `{}`?", best);
        diag.replacement = best;
      }
    }
  }
  for (const char* key : {"steps", "epochs"}) {
    if (auto it = entries.find(key); it != entries.end()) {
      Expr& v = *it->second->value;
      Type t = check_train_entry(*it->second);
      if (t.is_error()) continue;
      if (!t.is_scalar() || !is_integer(t.dtype) || !v.constant)
        diags().report(DiagKind::integer_expected, v.range, fmt::format("`{}` must be a constant integer", key));
      else if (v.constant->i <= 0)
        diags().report(DiagKind::invalid_argument_value, v.range, fmt::format("`{}` must be at least 1", key));
    }
  }
  if (element) check_validation(entries, *element, model_out, loss_name, class_labels);
  // A training run ends after `steps`, or after `epochs` passes over the data (one when neither is
  // given): data that repeats forever needs `steps`.
  if (element && element->infinite && !entries.count("steps") && missing.empty()) {
    auto& diag =
        diags().report(DiagKind::train_missing_entry, d.name_range,
                       fmt::format("train `{}` needs `steps`: its data repeats forever, so epochs never end", d.name));
    diag.help = "add `steps = N`, or remove the `repeat()` and give `epochs`";
  }
  train_element_ = nullptr;
  d.type = Type::opaque("train");
}

Type Checker::check_train_entry(TrainEntry& e) {
  const TrainEntrySpec* spec = find_train_entry(e.key);
  head_ = head_name(e.value.get());
  entry_ = spec;
  Type t = check(*e.value);
  head_ = nullptr;
  entry_ = nullptr;
  if (t.is_error() || !spec || !spec->kind) return t;
  // `loss = adam()` or `optimizer = mse(label)` type-check as calls; the entry decides the family.
  const Expr* head = head_name(e.value.get());
  const Builtin* b = head && head->kind == ExprKind::Name ? head->as<NameExpr>()->target.builtin : nullptr;
  if (e.value->kind == ExprKind::Call && b && b->kind == *spec->kind) return t;
  std::string names;
  for (const std::string& n : builtin_names({*spec->kind})) names += (names.empty() ? "" : ", ") + n;
  std::string family = builtin_kind_name(*spec->kind);
  const char* article = std::string_view("aeiou").find(family[0]) != std::string_view::npos ? "an" : "a";
  std::string message;
  if (b && b->kind == *spec->kind)  // named but not called: `loss = mse`
    message = fmt::format("`{}` must call the {}: `{}(...)`", e.key, family, b->name);
  else
    message = fmt::format("`{}` must call {} {}, not {}", e.key, article, family,
                          b ? fmt::format("the {} `{}`", builtin_kind_name(b->kind), b->name) : type_to_string(t));
  auto& diag = diags().report(DiagKind::type_mismatch, e.value->range, message);
  diag.notes.push_back({{}, fmt::format("a {} is one of: {}", builtin_kind_name(*spec->kind), names)});
  return Type::error();
}

// `model = net(board, flags)` inside a train block: the arguments are fields of the data element,
// whose per-example types must equal the model's declared inputs.
Type Checker::call_model(const Decl& model, CallExpr* call, SourceRange range) {
  global_type(model, range);
  if (!call) return Type::error();
  bool ok = true;
  if (call->args.size() != model.params.size()) {
    auto& diag = diags().report(
        DiagKind::model_input_mismatch, call->args_range,
        fmt::format("model `{}` takes {} input{}, but {} {} given", model.name, model.params.size(),
                    model.params.size() == 1 ? "" : "s", call->args.size(), call->args.size() == 1 ? "is" : "are"));
    diag.notes.push_back({model.name_range, "the model is declared here"});
    ok = false;
  }
  int batch_rank = train_element_ ? train_element_->batch_rank : 0;
  for (size_t i = 0; i < call->args.size(); ++i) {
    Type got = check(*call->args[i].value);
    if (got.is_error() || i >= model.params.size()) {
      ok = false;
      continue;
    }
    Type want = resolve_type(model.params[i].type);
    Type per_example = unbatched(got, batch_rank);
    ShapeFit fit = per_example.is_tensor() ? fit_shape(want.shape, per_example.shape) : ShapeFit::Mismatch;
    if (!want.is_error() && per_example.is_tensor() && per_example.dtype == want.dtype && fit == ShapeFit::Ragged) {
      auto& diag =
          diags().report(DiagKind::ragged_value, call->args[i].value->range,
                         fmt::format("model input `{}` is {} but the data gives {} per example, whose size varies",
                                     model.params[i].name, type_to_string(want), type_to_string(per_example)));
      diag.notes.push_back({model.params[i].name_range, "the input is declared here"});
      ok = false;
      continue;
    }
    if (!want.is_error() && (!per_example.is_tensor() || per_example.dtype != want.dtype || fit != ShapeFit::Fits)) {
      auto& diag = diags().report(DiagKind::model_input_mismatch, call->args[i].value->range,
                                  fmt::format("model input `{}` is {} but the data gives {} per example",
                                              model.params[i].name, type_to_string(want), type_to_string(per_example)));
      diag.notes.push_back({model.params[i].name_range, "the input is declared here"});
      ok = false;
    }
  }
  if (!ok || !model.result_type) return Type::error();
  return resolve_type(*model.result_type);
}

}  // namespace pipec
