// The random-number entry point of compiled kernels: fills one row's draws of one random op from the
// same Philox stream the interpreter uses (runtime/ops/random_ops.cpp), so JIT, `pipec build` and
// interpreter results are identical. A plain extern "C" function in the runtime library: the JIT
// resolves it by address, a built library links it from libpipec_runtime.
#pragma once

#include <cstdint>

namespace pipec {

enum PipecRandomKind : int32_t {
  kRandomUniformF32 = 0,  // float uniform_float() per value
  kRandomUniformF64 = 1,  // double uniform_double() per value
  kRandomNormal = 2,      // double normal() per value (Box-Muller pairs, as the interpreter draws them)
  kRandomInt = 3,         // int64 uniform_int(lo, hi - 1) per value
};

extern "C" {
/// Writes `count` draws of stream (seed, op_id, element_index, epoch) to `out` (float, double or
/// int64 per `kind`). Returns 0; 1 when kind is kRandomInt and lo >= hi; 2 when the stream fails
/// (exhausted, bad kind). Never throws.
int32_t pipec_random_fill(int32_t kind, uint64_t seed, uint64_t op_id, int64_t element_index, int64_t epoch,
                          int64_t count, int64_t lo, int64_t hi, void* out);
}

}  // namespace pipec
