// The ops of the expression IR as an enum, generated from runtime/plan/ops.def, with what each op is
// (its flags), how many operands it takes and which code generators compile it.
//
// Code asks these questions instead of comparing op names: `op_has(k, OpFlag::Random)`, not a name
// prefix; a `switch (k)` where each op needs its own code, so the compiler points at every switch a new
// op must join. Names appear only where text meets the IR: `pipec explain`, serialized plans, lowering
// a builtin by its name, and tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pipec {

/// What an op is (an op has any combination). Consumers ask for these, e.g. `op_has(k, OpFlag::Random)`.
struct OpFlag {
  enum : uint32_t {
    None = 0,
    Input = 1u << 0,                // reads a field of the stage's input (param): no kernel, the interpreter binds it
    Constant = 1u << 1,             // a constant (const): its `value` attribute
    Elementwise = 1u << 2,          // broadcasts its operands numpy-style (the interpreter aligns them)
    Arithmetic = 1u << 3,           // binary math whose operands and result share one dtype (div: see the verifier)
    Compare = 1u << 4,              // binary comparison of operands of one dtype, bool result
    Logic = 1u << 5,                // and / or / not: operands read as bool, bool result
    UnaryMath = 1u << 6,            // element-wise math of one operand
    FloatOnly = 1u << 7,            // defined on floats only (integer inputs compute in the result's float type)
    IntegerOnly = 1u << 8,          // defined on integers only (shifts)
    Bitwise = 1u << 9,              // defined on integers and bool, not on floats
    Structural = 1u << 10,          // moves elements (or bits of them) by index: slices, reshapes, joins, bits
    Reduction = 1u << 11,           // folds the axes of its `axis` attribute (every element axis without one)
    Random = 1u << 12,              // draws random numbers keyed by its `op_id`: never folded or merged, per row
    PerRow = 1u << 13,              // shapes depend on the data (images, files): the interpreter runs it per element
    WholeFile = 1u << 14,           // each value is a whole file or image: the runtime keeps such chunks small
    Decoder = 1u << 15,             // decodes an image; lowering lets it read its file itself (decode(read_file(p)))
    LowerCastsOperands = 1u << 16,  // a call by name gets its tensor operands in the result's dtype (where's
                                    // condition excepted); other ops keep their operands' dtypes
  };
};

/// The code generators besides the interpreter, which runs every op.
struct OpBackend {
  enum : uint32_t {
    InterpreterOnly = 0,
    Llvm = 1u << 0,  // compiler/codegen/loop_nest.cpp and compiler/codegen/llvm/emit_kernel.cpp
    Cuda = 1u << 1,  // compiler/codegen/cuda/cuda_printer.cpp (the same loop nests printed as CUDA)
  };
};

/// max_operands of an op that takes any number of operands (stack, concat).
constexpr int kVariadic = -1;

enum class OpKind : uint16_t {
#define OP(kind, name, min_operands, max_operands, flags, backends) kind,
#include "runtime/plan/ops.def"
#undef OP
};

/// The number of OpKinds: arrays indexed by kind have this size.
constexpr size_t kNumOpKinds = 0
#define OP(kind, name, min_operands, max_operands, flags, backends) +1
#include "runtime/plan/ops.def"
#undef OP
    ;

struct OpInfo {
  std::string_view name;
  int min_operands;
  int max_operands;   // kVariadic: no limit
  uint32_t flags;     // OpFlag bits
  uint32_t backends;  // OpBackend bits

  bool has(uint32_t flag) const { return (flags & flag) != 0; }
  bool compiled_by(uint32_t backend) const { return (backends & backend) != 0; }
};

const OpInfo& op_info(OpKind k);

/// "add", "random_uniform": the op's name in plans, `pipec explain` and builtins.
std::string_view op_name(OpKind k);

/// The op called `name`; nullopt when there is none.
std::optional<OpKind> op_from_name(std::string_view name);

/// Shorthand for op_info(k).has(flag).
inline bool op_has(OpKind k, uint32_t flag) { return op_info(k).has(flag); }

/// Every OpKind, in table order (for loops in tests and for derived lists).
struct AllOpKinds {
  struct iterator {
    size_t i;
    OpKind operator*() const { return static_cast<OpKind>(i); }
    iterator& operator++() {
      ++i;
      return *this;
    }
    bool operator!=(const iterator& o) const { return i != o.i; }
  };
  iterator begin() const { return {0}; }
  iterator end() const { return {kNumOpKinds}; }
};
inline constexpr AllOpKinds all_op_kinds{};

}  // namespace pipec
