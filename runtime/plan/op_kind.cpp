#include "runtime/plan/op_kind.h"

#include <array>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace pipec {

namespace {

// The rows of ops.def name flags and back ends without their struct (`Elementwise | Arithmetic`):
// inside a class derived from both, those names are found.
struct Table : OpFlag, OpBackend {
  static constexpr std::array<OpInfo, kNumOpKinds> rows = {{
#define OP(kind, name, min_operands, max_operands, flags, backends) \
  OpInfo{name, min_operands, max_operands, static_cast<uint32_t>(flags), static_cast<uint32_t>(backends)},
#include "runtime/plan/ops.def"
#undef OP
  }};
};

}  // namespace

const OpInfo& op_info(OpKind k) {
  const size_t i = static_cast<size_t>(k);
  if (i >= kNumOpKinds) throw std::out_of_range("op_info: not an OpKind: " + std::to_string(i));
  return Table::rows[i];
}

std::string_view op_name(OpKind k) { return op_info(k).name; }

std::optional<OpKind> op_from_name(std::string_view name) {
  static const std::unordered_map<std::string_view, OpKind> by_name = [] {
    std::unordered_map<std::string_view, OpKind> m;
    for (OpKind k : all_op_kinds) m.emplace(op_name(k), k);
    return m;
  }();
  auto it = by_name.find(name);
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

}  // namespace pipec
