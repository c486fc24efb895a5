// The tensor expression IR (part of the plan, so it lives in the runtime): the body of a map or filter as a list of SSA
// instructions.
//
// Every instruction produces one value with a static type. Operands are indices of earlier
// instructions. Element-wise binary ops see operands of one dtype (lowering inserts the casts that
// promotion implies) and broadcast their shapes numpy-style. Constant arguments (shapes, slice bounds,
// gather indices) are attributes, not operands, so kernels can specialise on them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/plan/op_kind.h"
#include "runtime/plan/type.h"
#include "runtime/plan/value.h"

namespace pipec {

/// Where in the spec a stage or instruction comes from, resolved at lowering so that run-time errors
/// can name it without the compiler's source manager.
struct SpecLoc {
  std::string file;
  uint32_t line = 0;
  uint32_t col = 0;
  bool valid() const { return line != 0; }
  std::string to_string() const { return file + ":" + std::to_string(line) + ":" + std::to_string(col); }
};

struct Instr {
  OpKind op = OpKind::Const;           // Param, Const, Add, Cast, Slice, Gather, Tanh... (runtime/plan/ops.def)
  std::vector<int> operands;           // ids of earlier instructions
  std::map<std::string, Value> attrs;  // field (param), value (const), dtype (cast), starts/stops/steps...
  Type type;                           // the result
  SpecLoc loc;                         // the spec expression it comes from
};

struct ExprFunction {
  std::string name;         // "map@2" (stage index)
  std::vector<Instr> body;  // params first, then the computation
  /// The fields the function returns (map) or the one bool it returns (filter: name "keep").
  std::vector<std::pair<std::string, int>> results;

  int add(Instr i) {
    body.push_back(std::move(i));
    return static_cast<int>(body.size()) - 1;
  }
};

/// Prints the function in the form `pipec explain` shows:
///   fn map@2(d: u8[194], s: i64) {
///     %2 = unpack_bits %0 : u8[1552]
///     ...
///     return {board: %9, flags: %11, score: %20}
///   }
std::string print_function(const ExprFunction& fn);

/// Checks the SSA invariants (operands defined earlier, result ids valid, operand counts and dtypes as
/// the op table says, attribute presence per op). Returns the problems found, empty when valid.
std::vector<std::string> verify_function(const ExprFunction& fn);

}  // namespace pipec
