// The kinds of stage of the dataset graph as an enum, generated from runtime/plan/stages.def, with what
// each kind is (its flags). As with ops (op_kind.h), code asks for flags or switches on the kind; names
// appear only where text meets the plan (`pipec explain`, run statistics, serialized plans, lowering a
// builtin by its name, tests).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pipec {

/// What a stage kind is. Consumers ask for these, e.g. `stage_has(k, StageFlag::Source)`.
struct StageFlag {
  enum : uint32_t {
    None = 0,
    Source = 1u << 0,            // reads no input stage (zip reads the datasets it joins)
    SourceWithSchema = 1u << 1,  // its fields are the declaration's schema: projection pushdown may drop some
    MultiInput = 1u << 2,        // reads several input stages
    Sink = 1u << 3,              // writes its input out
    Function = 1u << 4,          // carries an ExprFunction (a map or filter body)
    ElementKernel = 1u << 5,     // its function runs once per element and may be compiled (has_element_kernel)
    KeepsFields = 1u << 6,       // hands on its input's fields unchanged, whatever it does to the elements
    Fused = 1u << 7,             // made by an optimizer pass from two stages; never written in a spec
  };
};

enum class StageKind : uint8_t {
#define STAGE(kind, name, flags) kind,
#include "runtime/plan/stages.def"
#undef STAGE
};

/// The number of StageKinds.
constexpr size_t kNumStageKinds = 0
#define STAGE(kind, name, flags) +1
#include "runtime/plan/stages.def"
#undef STAGE
    ;

struct StageInfo {
  std::string_view name;
  uint32_t flags;  // StageFlag bits

  bool has(uint32_t flag) const { return (flags & flag) != 0; }
};

const StageInfo& stage_info(StageKind k);

/// "tfrecord", "map_batch": the stage's name in plans, `pipec explain`, statistics and builtins.
std::string_view stage_name(StageKind k);

/// The stage kind called `name`; nullopt when there is none.
std::optional<StageKind> stage_from_name(std::string_view name);

/// Shorthand for stage_info(k).has(flag).
inline bool stage_has(StageKind k, uint32_t flag) { return stage_info(k).has(flag); }

/// Every StageKind, in table order.
struct AllStageKinds {
  struct iterator {
    size_t i;
    StageKind operator*() const { return static_cast<StageKind>(i); }
    iterator& operator++() {
      ++i;
      return *this;
    }
    bool operator!=(const iterator& o) const { return i != o.i; }
  };
  iterator begin() const { return {0}; }
  iterator end() const { return {kNumStageKinds}; }
};
inline constexpr AllStageKinds all_stage_kinds{};

}  // namespace pipec
