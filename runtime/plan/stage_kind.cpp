#include "runtime/plan/stage_kind.h"

#include <array>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace pipec {

namespace {

// The rows of stages.def name flags without their struct: inside a class derived from it, they are found.
struct Table : StageFlag {
  static constexpr std::array<StageInfo, kNumStageKinds> rows = {{
#define STAGE(kind, name, flags) StageInfo{name, static_cast<uint32_t>(flags)},
#include "runtime/plan/stages.def"
#undef STAGE
  }};
};

}  // namespace

const StageInfo& stage_info(StageKind k) {
  const size_t i = static_cast<size_t>(k);
  if (i >= kNumStageKinds) throw std::out_of_range("stage_info: not a StageKind: " + std::to_string(i));
  return Table::rows[i];
}

std::string_view stage_name(StageKind k) { return stage_info(k).name; }

std::optional<StageKind> stage_from_name(std::string_view name) {
  static const std::unordered_map<std::string_view, StageKind> by_name = [] {
    std::unordered_map<std::string_view, StageKind> m;
    for (StageKind k : all_stage_kinds) m.emplace(stage_name(k), k);
    return m;
  }();
  auto it = by_name.find(name);
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

}  // namespace pipec
