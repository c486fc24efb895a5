// `gpu_tests --compare CPU_DIR GPU_DIR`: two `pipec run --output` folders compared field by field, for
// tests/gpu/run.sh's end-to-end runs (it needs no Python or NumPy). Integers, bools and byte strings
// must be bit-exact; floats within the differential tests' bounds (tests/difftest/compare_outputs.h:
// 4 ulp for f32 and f64, 2 for f16 and bf16; NaN equals NaN, +0 equals -0).
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace pipec::gputest {

/// One field over every element of the two runs.
struct FieldComparison {
  std::string field;
  std::string dtype;
  int64_t values = 0;     // values compared
  int64_t differing = 0;  // values whose bits differ (NaN vs NaN and +0 vs -0 do not count)
  int64_t max_ulp = 0;    // floats: the largest distance in ulp
  int64_t bound = 0;      // the largest distance allowed (0: exact)
  std::string first;      // the first value over the bound: "element E index I: A vs B"
  bool ok() const { return first.empty(); }
};

struct DirComparison {
  std::string error;  // the runs differ before any value (element count, fields, dtype, shape) or unreadable
  int64_t elements = 0;
  std::vector<FieldComparison> fields;
  bool ok() const;
  /// One line per field, then a verdict line ("same within the bounds" / "DIFFERENT: ...").
  void print(std::ostream& os) const;
};

DirComparison compare_output_dirs(const std::filesystem::path& reference, const std::filesystem::path& other);

}  // namespace pipec::gputest
