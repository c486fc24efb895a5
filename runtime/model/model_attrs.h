// The typed attributes of the model IR's nodes, made from runtime/model/model_attrs.def (the closed sets
// and the attribute structs) and model_ops.def (the losses, optimizers, schedules and metrics): every
// enum with its spellings, every struct with a visitor over its fields, and ModelAttrs, the variant a
// GraphNode holds (model_ops.def names the struct of each node kind).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace pipec {

/// [height, width] of a window, its strides or dilation, an upsampling factor.
using Pair = std::array<int64_t, 2>;

/// A bool attribute that is absent unless set (printed only then).
struct Flag {
  bool set = false;
  explicit operator bool() const { return set; }
  bool operator==(const Flag&) const = default;
};

// ---- the closed sets ----

enum class LossKind {
#define LOSS(kind, name) kind,
#include "runtime/model/model_ops.def"
#undef LOSS
};

enum class OptimizerKind {
#define OPTIMIZER(kind, name) kind,
#include "runtime/model/model_ops.def"
#undef OPTIMIZER
};

enum class ScheduleKind {
#define SCHEDULE(kind, name) kind,
#include "runtime/model/model_ops.def"
#undef SCHEDULE
};

enum class MetricKind {
#define METRIC(kind, name) kind,
#include "runtime/model/model_ops.def"
#undef METRIC
};

enum class StrategyKind {
#define STRATEGY(kind, name) kind,
#include "runtime/model/model_ops.def"
#undef STRATEGY
};

#define ENUM(type) enum class type {
#define VALUE(name, text) name,
#define END_ENUM \
  }              \
  ;
#include "runtime/model/model_attrs.def"
#undef ENUM
#undef VALUE
#undef END_ENUM

/// A value of a closed set and how it is spelled.
template <class E>
struct EnumSpelling {
  E value;
  const char* text;
};

/// Every value of closed set E with its spelling, in declaration order (defined for each enum above).
template <class E>
const std::vector<EnumSpelling<E>>& enum_spellings();

#define PIPEC_DECLARE_SPELLINGS(type) \
  template <>                         \
  const std::vector<EnumSpelling<type>>& enum_spellings<type>();
PIPEC_DECLARE_SPELLINGS(LossKind)
PIPEC_DECLARE_SPELLINGS(OptimizerKind)
PIPEC_DECLARE_SPELLINGS(ScheduleKind)
PIPEC_DECLARE_SPELLINGS(MetricKind)
PIPEC_DECLARE_SPELLINGS(StrategyKind)
#define ENUM(type) PIPEC_DECLARE_SPELLINGS(type)
#include "runtime/model/model_attrs.def"
#undef ENUM
#undef PIPEC_DECLARE_SPELLINGS

/// How `e` is spelled ("?" for a value outside the set).
template <class E>
const char* enum_text(E e) {
  for (const EnumSpelling<E>& s : enum_spellings<E>())
    if (s.value == e) return s.text;
  return "?";
}

/// The value spelled `text`, or nullopt (lowering's parse of a builtin's argument).
template <class E>
std::optional<E> enum_from_text(std::string_view text) {
  for (const EnumSpelling<E>& s : enum_spellings<E>())
    if (text == s.text) return s.value;
  return std::nullopt;
}

// ---- the attribute structs ----

/// The attributes of a kind that has none (expr nodes carry a function instead).
struct NoAttrs {
  static constexpr const char* kName = "NoAttrs";
  bool operator==(const NoAttrs&) const = default;
};
template <class F>
void for_each_attr(const NoAttrs&, F&&) {}
template <class F>
void for_each_attr(NoAttrs&, F&&) {}

#define FIELD(type, name) type name{};
#define ATTRS(name, ...)                          \
  struct name {                                   \
    static constexpr const char* kName = #name;   \
    __VA_ARGS__                                   \
    bool operator==(const name&) const = default; \
  };
#include "runtime/model/model_attrs.def"
#undef FIELD
#undef ATTRS

// for_each_attr(a, f): f("name", a.name) for every field of `a`, in declaration order (a mutable `a`
// gives mutable fields: lowering sets an optimizer's settings by its builtin's parameter names).
#define FIELD(type, name) f(#name, a.name);
#define ATTRS(name, ...)                     \
  template <class F>                         \
  void for_each_attr(const name& a, F&& f) { \
    __VA_ARGS__                              \
  }                                          \
  template <class F>                         \
  void for_each_attr(name& a, F&& f) {       \
    __VA_ARGS__                              \
  }
#include "runtime/model/model_attrs.def"
#undef FIELD
#undef ATTRS

/// The attributes a node holds: one struct of model_attrs.def (the one model_ops.def gives its kind).
using ModelAttrs = std::variant<NoAttrs
#define ATTRS(name, ...) , name
#include "runtime/model/model_attrs.def"
#undef ATTRS
                                >;

/// The position of struct A in ModelAttrs.
template <class A>
constexpr size_t attrs_index() {
  return []<class... Ts>(std::variant<Ts...>*) {
    constexpr bool same[] = {std::is_same_v<A, Ts>...};
    for (size_t i = 0; i < sizeof...(Ts); ++i)
      if (same[i]) return i;
    return sizeof...(Ts);
  }(static_cast<ModelAttrs*>(nullptr));
}

/// The name of the struct `a` holds ("Conv2dAttrs"), for errors.
const char* attrs_name(const ModelAttrs& a);
/// The struct at position `index` of ModelAttrs, by name.
const char* attrs_name(size_t index);

/// The activation a step pass fused into a layer (its attributes' `activation`), or nullopt.
std::optional<Activation> fused_activation(const ModelAttrs& a);
/// Whether the node scales by mixed_fp16's loss scale (its attributes' `loss_scale`).
bool loss_scaled(const ModelAttrs& a);

/// `name=value` for every attribute that is present, sorted by name, as `pipec explain` prints them.
std::vector<std::pair<std::string, std::string>> attr_texts(const ModelAttrs& a);

}  // namespace pipec
