// What one run of a pipeline produced, and the comparison of two runs.
//
// Tolerance (also in docs/design.md, "Differential testing"):
//   - integers, bools and byte strings: bit-exact, always;
//   - floats, Tolerance::Exact: the same bits, except that any NaN equals any NaN;
//   - floats, Tolerance::Ulp: NaN equals NaN, +0 equals -0, and otherwise the two values are at most
//     kUlpBoundF32 (f32, f64) or kUlpBoundF16 (f16, bf16) representable values apart, counted on the
//     value's own format (so an infinity only matches itself and the largest finite value next to it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/tensor.h"

namespace pipec::difftest {

inline constexpr int64_t kUlpBoundF32 = 4;  // f32 and f64
inline constexpr int64_t kUlpBoundF16 = 2;  // f16 and bf16

enum class Tolerance { Exact, Ulp };

/// One output element: its fields, sorted by name.
using Element = std::vector<std::pair<std::string, Tensor>>;

struct RunOutput {
  bool ok = false;
  std::string error;              // why the run failed (when !ok)
  std::vector<Element> elements;  // in delivery order
  /// Set when the variant cannot apply to the pipeline and refused it for the documented reason held
  /// here (a library of a pipeline with byte-string fields): not compared, not a mismatch.
  std::string not_applicable;
};

struct Mismatch {
  int64_t element = -1;  // -1: the runs differ before any element (error vs success, element count)
  std::string field;
  int64_t index = -1;  // first differing flat index within the field
  std::string what;    // both values, or what else differs
};

/// The first difference between `ref` and `got`, or nullopt when they agree under `tol`.
std::optional<Mismatch> compare_outputs(const RunOutput& ref, const RunOutput& got, Tolerance tol);

/// Twin fields: `mix3_folded` holds a bool-and-number mix computed from constants (folded by the
/// checker), `mix3_computed` the same mix of the same values computed at run time (the generator's
/// mix_twins).
inline constexpr const char* kFoldedSuffix = "_folded";
inline constexpr const char* kComputedSuffix = "_computed";

/// The first element of `out` whose twin fields differ (bit for bit, any NaN equal to any NaN), or
/// nullopt when every pair agrees; `field` names the pair without its suffix.
std::optional<Mismatch> compare_twins(const RunOutput& out);

/// One value of dtype `dt` at `p`, readable (floats also as bits).
std::string scalar_text(DType dt, const uint8_t* p);

/// Distance in units in the last place between two floats of dtype `dt` given as raw bits; 0 for
/// NaN vs NaN and +0 vs -0.
int64_t ulp_distance(DType dt, const uint8_t* a, const uint8_t* b);

}  // namespace pipec::difftest
