// The kernel interface of the reference interpreter: one function per op, called once per instruction
// per chunk on whole tensors.
//
// Rows: a per-row value is a tensor [rows, ...element shape]; a row-invariant value (a constant or
// anything computed from constants only) is just [...element shape]. A kernel is called either with
// lead = 0 (every operand and the result are element tensors: row-invariant values, or one row of a
// ragged column) or with lead = 1 (the result has the rows dimension). With lead = 1:
//   - element-wise kernels (KernelKind::Elementwise/Random) get operands that broadcast numpy-style
//     against the full result: the interpreter reshapes per-row operands to [rows, 1.., ...] and
//     row-invariant ones to [1, 1.., ...], so the kernel never needs to know about rows;
//   - structural kernels (axes, shapes) get every operand with the rows dimension and shift their
//     element axes by `lead`.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/ops/kernel_error.h"
#include "runtime/plan/expr_function.h"

namespace pipec {

struct KernelArgs {
  const Instr& instr;
  std::vector<Tensor> in;
  int lead = 0;      // 1 when the result carries the rows dimension
  int64_t rows = 1;  // the rows dimension when lead = 1
  // Random streams: the element index of row 0 (or of the single element when lead = 0), epoch, seed.
  uint64_t seed = 0;
  int64_t first_index = 0;
  int64_t epoch = 0;
  const std::string* spec_dir = nullptr;  // relative file paths (read_file, decoders, CSVs) resolve against it
  // KernelInfo::fills_rows kernels with lead = 0: this element's row of the result, preallocated by the
  // interpreter (a view of the [rows, ...] value). The kernel may write its result there and return
  // it, so per-row results of a known shape need no stacking copy; it may also ignore it.
  Tensor into{};

  DType out_dtype() const { return instr.type.dtype; }
};

using KernelFn = Tensor (*)(const KernelArgs&);

/// How the interpreter calls a kernel; derived from the op's flags (runtime/plan/ops.def) by kernel_kind().
enum class KernelKind {
  Structural,   // shape and axis ops; operands all carry rows when lead = 1
  Elementwise,  // broadcasting ops: the interpreter aligns operands
  Random,       // per-element random numbers: always per row, operands aligned like element-wise
  PerRow,       // data-dependent shapes (image decoding, crops): called once per element with lead = 0
};

/// PerRow ops are PerRow (even the random ones: a random crop is drawn per image); other random ops
/// are Random, element-wise ones Elementwise, the rest Structural.
KernelKind kernel_kind(OpKind op);

struct KernelInfo {
  KernelFn fn = nullptr;
  KernelKind kind = KernelKind::Structural;
  bool fills_rows = false;  // a PerRow kernel that can write into KernelArgs::into
};

/// The kernels, indexed by OpKind; each family fills in its ops.
class KernelTable {
 public:
  /// Registers `fn` for `op`; registering an op twice is a bug (std::logic_error).
  void set(OpKind op, KernelFn fn);
  KernelFn get(OpKind op) const { return fns_[static_cast<size_t>(op)]; }

 private:
  std::array<KernelFn, kNumOpKinds> fns_{};
};

/// The kernel for `op`, or null when there is none (param has none: the interpreter binds it).
const KernelInfo* find_kernel(OpKind op);

// Each family registers its kernels (called once, by kernel_registry.cpp).
void register_elementwise_binary(KernelTable& t);
void register_elementwise_unary(KernelTable& t);
void register_select(KernelTable& t);
void register_cast(KernelTable& t);
void register_constant(KernelTable& t);
void register_shape_ops(KernelTable& t);
void register_dynamic_slicing(KernelTable& t);
void register_join_ops(KernelTable& t);
void register_bits(KernelTable& t);
void register_reductions(KernelTable& t);
void register_random(KernelTable& t);
void register_image_ops(KernelTable& t);
void register_string_ops(KernelTable& t);

// ---- attributes --------------------------------------------------------------------------------------

const Value* find_attr(const Instr& in, const std::string& name);
/// An Int attribute, or `fallback` when absent. Throws OpError when present but not an integer.
int64_t attr_int(const Instr& in, const std::string& name, int64_t fallback);
/// A List of Int (or a single Int, as a list of one). Throws OpError when absent or malformed.
std::vector<int64_t> attr_ints(const Instr& in, const std::string& name);
/// Normalizes a possibly negative axis against `rank` (rank + 1 when `allow_end`).
int64_t normalize_axis(int64_t axis, int64_t rank, bool allow_end = false);

// ---- shared helpers (defined by the kernel families) ---------------------------------------------------

/// Converts a tensor to `to` with the cast semantics of dtype_dispatch.h (shares storage when equal).
Tensor cast_tensor(const Tensor& x, DType to);
/// The tensor of a const value: a scalar fills the shape, a (nested) list gives the elements row-major.
Tensor tensor_from_value(const Value& v, DType dtype, const Shape& shape);
/// x with its dimensions permuted: result dim i is x's dim perm[i] (a copy; numeric and bytes).
Tensor permute(const Tensor& x, const std::vector<int64_t>& perm);
/// Runs a data-movement kernel on byte-string operands: each operand becomes an i64 tensor of string
/// numbers, `numeric` moves those, and the result picks the strings.
Tensor via_string_indices(const KernelArgs& a, KernelFn numeric);

}  // namespace pipec
