#include "compiler/sema/name_rules.h"

#include <algorithm>

#include "runtime/model/model_graph.h"

namespace pipec {

PipedInput piped_input(const Type* piped_type) {
  if (!piped_type) return PipedInput::None;
  if (piped_type->is_error()) return PipedInput::Unknown;
  if (piped_type->kind == TypeKind::Dataset) return PipedInput::Dataset;
  return PipedInput::Tensor;
}

std::vector<BuiltinKind> callable_kinds(CheckContext ctx, PipedInput input) {
  using K = BuiltinKind;
  if (input == PipedInput::Dataset) return {K::Stage, K::Sink};
  if (input == PipedInput::Unknown) {
    // The input's type is unknown: a stage where stages are expected, otherwise what the context calls.
    std::vector<K> kinds;
    bool stages_first = ctx == CheckContext::Pipeline || ctx == CheckContext::Source;
    if (stages_first) kinds = {K::Stage, K::Sink};
    for (K k : callable_kinds(ctx, PipedInput::None))
      if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
    for (K k : {K::Stage, K::Sink})
      if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
    return kinds;
  }
  switch (ctx) {
    case CheckContext::Model: return {K::Layer, K::Op};
    case CheckContext::Format: return {K::Format};
    case CheckContext::Source:
    case CheckContext::Pipeline: return {K::Source, K::Op};
    case CheckContext::Train: return {K::Loss, K::Optimizer, K::Strategy};
    case CheckContext::Const:
    case CheckContext::Fn:
    case CheckContext::MapBody: return {K::Op};
  }
  return {K::Op};
}

const std::vector<TrainEntrySpec>& train_entry_specs() {
  static const std::vector<TrainEntrySpec> specs = {
      {"data", true, std::nullopt},        {"model", true, std::nullopt},
      {"loss", true, BuiltinKind::Loss},   {"optimizer", true, BuiltinKind::Optimizer},
      {"precision", false, std::nullopt},  {"strategy", false, BuiltinKind::Strategy},
      {"steps", false, std::nullopt},      {"epochs", false, std::nullopt},
      {"validation", false, std::nullopt}, {"eval_every", false, std::nullopt},
      {"metrics", false, std::nullopt},
  };
  return specs;
}

const TrainEntrySpec* find_train_entry(std::string_view key) {
  for (const TrainEntrySpec& s : train_entry_specs())
    if (key == s.key) return &s;
  return nullptr;
}

const std::vector<std::string>& precision_words() {
  static const std::vector<std::string> words = {"fp32", "mixed_fp16", "mixed_bf16"};
  return words;
}

const std::vector<std::string>& metric_words() {
  static const std::vector<std::string> words = [] {
    std::vector<std::string> out;
    for (MetricKind k : all_metric_kinds()) out.push_back(metric_kind_name(k));
    return out;
  }();
  return words;
}

}  // namespace pipec
