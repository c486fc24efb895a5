// The calling convention of compiled map and filter bodies: the contract between the code generators
// (LLVM JIT, `pipec build` object code, later CUDA) and the runtime that calls them.
//
// A native kernel computes one stage's ExprFunction for `rows` consecutive elements at once. Every
// operand is a dense, row-major buffer with the rows dimension first: input i is the column of the
// stage's input field `NativeKernel::input_fields[i]`, output j is fn->results[j] (a filter has one
// output, a u8 `keep` flag per row). The runtime allocates the outputs (from its buffer pool) with the
// static shapes of the function's results, so a kernel never allocates. Kernels only exist for
// functions whose inputs and results all have static shapes and numeric dtypes; anything else (byte
// strings, ragged fields) stays on the interpreter.
//
// Random ops key their Philox streams by (seed, op_id, element index, epoch) exactly as the interpreter
// does; row r of a call is element `first_index + r`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pipec {

extern "C" {
struct PipecKernelArgs {
  const void* const* inputs;  // one per NativeKernel::input_fields entry
  void* const* outputs;       // one per fn->results entry
  int64_t rows;
  int64_t first_index;  // element index of row 0 (keys random streams)
  int64_t epoch;
  uint64_t seed;  // the run seed (random ops without their own seed attribute)
};
/// Returns 0 on success; a nonzero code names a data error the kernel found (e.g. an index out of
/// range): the runtime then runs the chunk on the interpreter, which reports it in its own words.
typedef int32_t (*PipecKernelFn)(const PipecKernelArgs* args);
}

/// The code a kernel returns when an index computed at run time is out of range for some row (codes 1
/// and 2 are pipec_random_fill's, runtime/ops/native_random.h).
constexpr int32_t kPipecKernelIndexOutOfRange = 3;

struct NativeKernel {
  PipecKernelFn fn = nullptr;
  std::string symbol;                // the function's name in its module / shared library
  std::vector<int> input_fields;     // index into the input element's fields, per input pointer
  std::string backend;               // "llvm-jit", "aot", ... (shown by `pipec run`'s summary)
  double compile_ms = 0;             // 0 when it came from the cache
  std::shared_ptr<void> keep_alive;  // owns the code (the JIT session, the dlopen handle)
  /// A mixed_bf16 step's expr kernel that reads or writes values the fast executor stores as bf16 on
  /// bf16 kernels (runtime/model/bf16_storage.h): the same function with input i held as bf16 where
  /// bf16_inputs[i], output j where bf16_outputs[j] (those flags are the variant's own).
  std::shared_ptr<const NativeKernel> bf16_storage;
  std::vector<bool> bf16_inputs, bf16_outputs;
};

}  // namespace pipec
