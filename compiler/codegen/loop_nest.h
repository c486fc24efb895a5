// The backend-neutral form of a compiled map/filter body: every result as a loop nest over
// rows x its element index space, with the value at each index written as a scalar expression of the
// loop indices (Halide-style inlining). The LLVM emitter (compiler/codegen/llvm/) and the CUDA emitter
// translate this form node by node; neither looks at the ExprFunction again.
//
// How an ExprFunction becomes loop nests (lower_to_loop_nest):
//   - result j of shape [d1..dk] is computed by `for row in [0, rows): for i1 in [0, d1): ... for ik:
//     out_j[row, i1..ik] = node(ScalarExpr root)`; var 0 is `row`, var m (1..k) is i_m. The innermost
//     loop runs over contiguous output elements, so a backend can vectorize it.
//   - structural ops (slice, gather with constant indices, dynamic_index, reshape, squeeze, expand_dims,
//     transpose, concat, stack, broadcasting, unpack_bits, pack_bits, one_hot) become index arithmetic on
//     their operand: nothing is copied.
//   - element-wise ops become Op nodes computing in one dtype; casts become Cast nodes. The one place a
//     16-bit float appears is a rounding, cast(cast(x: f32, bf16 or f16), f32) with nothing else reading
//     the 16-bit value: two Cast nodes, the first giving the rounded value (a back end carries it as
//     the f32 it represents, rounded to nearest even as runtime/core/half.h does, NaNs included) and
//     the second nothing to do (mixed precision's round nodes fused into expr nodes).
//   - an index computed at run time (dynamic_index) reads at the index clamped into the dimension, and
//     adds a check: a bool per row, true when the index is in range. A backend evaluates every check of
//     every row before it writes any result and, when one is false, returns kPipecKernelIndexOutOfRange
//     (runtime/plan/native_kernel.h); the runtime then runs the chunk on the interpreter, which reports
//     the element, the index and the dimension. Checks run for every row whatever the results read,
//     as the interpreter evaluates every live instruction.
//   - row-invariant values (computed from constants only) are evaluated at compile time by the
//     interpreter's own kernels and become constant tables (Table nodes) or scalar constants (Const),
//     so they are bit-identical to what the interpreter computes.
//
// Supported ops: those whose row in runtime/plan/ops.def names the Llvm back end (the test
// tests/unit/op_table_coverage_test.cpp lowers each of them, and checks the others are refused):
// param, const, cast, the element-wise ops (arithmetic, comparisons, logic, unary math), where, clip,
// the structural ops above (dynamic_index: not on a dimension of size 0, where every index fails), the reductions sum,
// prod, mean, reduce_max and reduce_min (Reduce nodes: inner loops), and random_uniform / random_normal (any operands)
// and random_int (row-invariant scalar bounds), whose draws are materialized per row (RandomDraws). Not supported (the
// function stays on the interpreter and the reason says which): the other ops (argmax, size, images, dynamic_slice),
// arithmetic on bool, f16/bf16 values other than a rounding's (above) and bytes values, any unknown dimension,
// row-invariant values over kMaxTableElements elements, random ops drawing over kMaxRandomDraws values per row.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/plan/expr_function.h"

namespace pipec::codegen {

/// Index arithmetic on non-negative i64 values (NodeKind::Index).
enum class IndexOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,  // truncating
  Mod,
  Min,
  Max,
  Lt,      // 1 or 0
  Select,  // a ? b : c
};

/// The fold of a Reduce node.
enum class ReduceOp : uint8_t { Sum, Prod, Max, Min };

enum class NodeKind : uint8_t {
  Var,     // loop index `var` (i64)
  Const,   // a scalar of `dtype`: ints in `ival` (sign- or zero-extended), floats in `fval`
  Load,    // element args[0] (flat i64 index within the row) of input `input`, in the current row
  Table,   // element args[0] (flat i64 index) of constant table `table`
  Index,   // i64 index arithmetic on non-negative values: `index_op`
  Op,      // the IR element-wise op `op` (its interpreter semantics) on args of dtype `arg_dtype`;
           // result `dtype` (bool for comparisons and logic, arg_dtype otherwise)
  Cast,    // args[0] (of `arg_dtype`) converted to `dtype` with the interpreter's cast semantics
  Select,  // args[0] (bool) ? args[1] : args[2], all of `dtype`
  Random,  // element args[0] (flat i64 index) of the current row's draws of random op `random`
           // (LoopNest::randoms): f32, f64 or i64 per RandomDraws::kind
  Reduce,  // a sequential fold over loop var `var` in [0, ival) of args[0] (of `arg_dtype`, evaluated
           // per iteration; it may use `var`), `reduce_op` Sum or Prod (accumulate in `dtype`: f64 for
           // float inputs, u64 wrap-around for integer and bool inputs) or Max or Min (`dtype` =
           // arg_dtype; start at -inf/+inf or the integer limits; a NaN sticks). In index order, as the
           // interpreter folds, so float sums are bit-identical.
};

struct Node {
  NodeKind kind = NodeKind::Const;
  DType dtype = DType::I64;            // the node's scalar type (Var, Index: I64)
  DType arg_dtype = DType::I64;        // Op and Cast: the operands' dtype
  OpKind op = OpKind::Add;             // Op
  IndexOp index_op = IndexOp::Add;     // Index
  ReduceOp reduce_op = ReduceOp::Sum;  // Reduce
  std::vector<int> args;               // earlier node ids
  int var = 0;                         // Var
  int input = 0;                       // Load
  int table = 0;                       // Table
  int random = 0;                      // Random
  int64_t ival = 0;                    // Const (integer dtypes, bool)
  double fval = 0;                     // Const (f32/f64; an f32 constant is exactly representable)
};

/// A constant array in row-major order, raw little-endian bytes of `dtype`.
struct ConstTable {
  DType dtype = DType::F32;
  int64_t count = 0;
  std::vector<uint8_t> bytes;
};

/// The draws of one random op for one row: a backend fills a per-row scratch buffer of `count` values
/// by calling the runtime's `pipec_random_fill(kind, seed, op_id, first_index + row, epoch, count, lo,
/// hi, buffer)` (runtime/ops/native_random.h) before computing the row, and Random nodes read it. The
/// formulas that turn draws into values (lo + (hi - lo) * u, mean + std * z) are ordinary nodes.
struct RandomDraws {
  int32_t kind = 0;       // PipecRandomKind
  bool has_seed = false;  // the op's own `seed` attribute; else the run seed (PipecKernelArgs::seed)
  uint64_t seed = 0;
  uint64_t op_id = 0;
  int64_t count = 0;         // values per row
  int64_t lo = 0, hi = 0;    // kRandomInt bounds [lo, hi)
  DType dtype = DType::F32;  // of the buffer: F32, F64 or I64
};

struct LoopInput {
  std::string field;     // the element field (param `field` attribute)
  int field_index = -1;  // index among the stage's input fields; -1 = resolved by the caller
  DType dtype = DType::U8;
  std::vector<int64_t> shape;  // the element shape (without the rows dimension)
  int64_t elems = 1;           // elements per row
  // An f32 input held in memory as bf16 (a step's value the fast executor stores so,
  // runtime/model/bf16_storage.h): loaded as 16 bits and widened, which is exact.
  bool bf16_storage = false;
};

struct LoopOutput {
  std::string name;  // the result's field name
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // element shape: loop vars 1..shape.size()
  int64_t elems = 1;
  int root = -1;            // node id of the value at (row, i1..ik)
  std::vector<Node> nodes;  // this output's expression DAG (topological: args before users)
  int num_vars = 1;         // loop vars used: row, the output dims, then one per Reduce
  // An f32 output stored as bf16: its root is a rounding to bf16 (the value has zero low 16 bits), so
  // storing the top 16 bits keeps it exactly.
  bool bf16_storage = false;
};

struct LoopNest {
  std::string name;                 // the function's name ("map@2")
  std::vector<LoopInput> inputs;    // kernel input pointer order
  std::vector<LoopOutput> outputs;  // kernel output pointer order = fn.results order
  // Per-row conditions (bool scalars: shape {}, no loop var but the row) that must all hold before any
  // output is written; `name` says what is checked ("%4 = dynamic_index at spec.pipe:3:9: index in
  // range"). One per live dynamic_index computed per row.
  std::vector<LoopOutput> checks;
  std::vector<ConstTable> tables;
  std::vector<RandomDraws> randoms;
};

/// Row-invariant values larger than this are not folded into tables (the function is not compiled).
constexpr int64_t kMaxTableElements = 1 << 20;
/// Random ops drawing more values per row than this are not compiled (the draws live on the stack).
constexpr int64_t kMaxRandomDraws = 1 << 13;

/// Lowers `fn` to loop nests. `in_fields` are the stage's input field names (params resolve their
/// `field` attribute against them, as the interpreter does). Returns false and sets `why_not` (naming
/// the instruction and its spec location) when the function uses something not supported.
bool lower_to_loop_nest(const ExprFunction& fn, const std::vector<std::string>& in_fields, LoopNest& out,
                        std::string& why_not);

/// A readable dump of the loop nests (for tests and `pipec explain --loops`).
std::string print_loop_nest(const LoopNest& nest);

/// "add", "select": the names print_loop_nest shows.
std::string_view index_op_name(IndexOp op);
std::string_view reduce_op_name(ReduceOp op);

}  // namespace pipec::codegen
