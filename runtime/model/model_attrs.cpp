// The spellings of the closed sets and the printed form of the attribute structs (model_attrs.def).
#include "runtime/model/model_attrs.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace pipec {

template <>
const std::vector<EnumSpelling<LossKind>>& enum_spellings<LossKind>() {
  static const std::vector<EnumSpelling<LossKind>> table = {
#define LOSS(kind, name) {LossKind::kind, name},
#include "runtime/model/model_ops.def"
#undef LOSS
  };
  return table;
}

template <>
const std::vector<EnumSpelling<OptimizerKind>>& enum_spellings<OptimizerKind>() {
  static const std::vector<EnumSpelling<OptimizerKind>> table = {
#define OPTIMIZER(kind, name) {OptimizerKind::kind, name},
#include "runtime/model/model_ops.def"
#undef OPTIMIZER
  };
  return table;
}

template <>
const std::vector<EnumSpelling<ScheduleKind>>& enum_spellings<ScheduleKind>() {
  static const std::vector<EnumSpelling<ScheduleKind>> table = {
#define SCHEDULE(kind, name) {ScheduleKind::kind, name},
#include "runtime/model/model_ops.def"
#undef SCHEDULE
  };
  return table;
}

template <>
const std::vector<EnumSpelling<MetricKind>>& enum_spellings<MetricKind>() {
  static const std::vector<EnumSpelling<MetricKind>> table = {
#define METRIC(kind, name) {MetricKind::kind, name},
#include "runtime/model/model_ops.def"
#undef METRIC
  };
  return table;
}

template <>
const std::vector<EnumSpelling<StrategyKind>>& enum_spellings<StrategyKind>() {
  static const std::vector<EnumSpelling<StrategyKind>> table = {
#define STRATEGY(kind, name) {StrategyKind::kind, name},
#include "runtime/model/model_ops.def"
#undef STRATEGY
  };
  return table;
}

#define ENUM(type)                                                \
  template <>                                                     \
  const std::vector<EnumSpelling<type>>& enum_spellings<type>() { \
    using E = type;                                               \
    static const std::vector<EnumSpelling<type>> table = {
#define VALUE(name, text) {E::name, text},
#define END_ENUM \
  }              \
  ;              \
  return table;  \
  }
#include "runtime/model/model_attrs.def"
#undef ENUM
#undef VALUE
#undef END_ENUM

const char* attrs_name(const ModelAttrs& a) {
  return std::visit([](const auto& x) { return std::decay_t<decltype(x)>::kName; }, a);
}

const char* attrs_name(size_t index) {
  static const char* const names[] = {NoAttrs::kName
#define ATTRS(name, ...) , name::kName
#include "runtime/model/model_attrs.def"
#undef ATTRS
  };
  return index < std::size(names) ? names[index] : "?";
}

std::optional<Activation> fused_activation(const ModelAttrs& a) {
  return std::visit(
      [](const auto& x) -> std::optional<Activation> {
        if constexpr (requires { x.activation; }) return x.activation;
        else return std::nullopt;
      },
      a);
}

bool loss_scaled(const ModelAttrs& a) {
  return std::visit(
      [](const auto& x) {
        if constexpr (requires { x.loss_scale; }) return x.loss_scale.has_value();
        else return false;
      },
      a);
}

namespace {

// Each field's printed value, under its name; absent optional fields and unset flags print nothing.
struct Printer {
  std::map<std::string, std::string>& out;
  std::string prefix;  // a nested struct's fields: "<its name>_"

  void operator()(const char* name, int64_t v) const { put(name, std::to_string(v)); }
  void operator()(const char* name, double v) const { put(name, fmt::format("{}", v)); }
  void operator()(const char* name, bool v) const { put(name, v ? "true" : "false"); }
  void operator()(const char* name, const Pair& v) const { put(name, fmt::format("[{}, {}]", v[0], v[1])); }
  void operator()(const char* name, Flag v) const {
    if (v) put(name, "true");
  }
  template <class E>
  requires std::is_enum_v<E>
  void operator()(const char* name, E v) const {
    if (!prefix.empty() && std::string_view(name) == "kind") return;  // printed under the struct's name
    put(name, enum_text(v));
  }
  template <class T>
  void operator()(const char* name, const std::optional<T>& v) const {
    if (v) (*this)(name, *v);
  }
  // A nested struct (an optimizer's schedule): `name=<kind>`, then `name_<field>=...`.
  template <class A>
  requires requires(const A& a) {
    for_each_attr(a, [](const char*, const auto&) {});
  }
  void operator()(const char* name, const A& nested) const {
    put(name, enum_text(nested.kind));
    for_each_attr(nested, Printer{out, prefix + name + "_"});
  }
  void put(const char* name, std::string text) const { out[prefix + name] = std::move(text); }
};

}  // namespace

std::vector<std::pair<std::string, std::string>> attr_texts(const ModelAttrs& a) {
  std::map<std::string, std::string> sorted;
  std::visit([&](const auto& x) { for_each_attr(x, Printer{sorted, ""}); }, a);
  return {sorted.begin(), sorted.end()};
}

}  // namespace pipec
