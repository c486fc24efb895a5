#include "runtime/ops/slice_bounds.h"

#include <algorithm>

#include "runtime/ops/kernel_error.h"

namespace pipec {

SliceBounds resolve_slice(int64_t s, int64_t t, int64_t step, int64_t n) {
  if (step == 0) throw OpError("slice step cannot be zero");
  if (step == kSliceNone) step = 1;
  SliceBounds r{0, 0, step};
  if (step > 0) {
    int64_t a = s == kSliceNone ? 0 : s < 0 ? std::max<int64_t>(s + n, 0) : std::min(s, n);
    int64_t b = t == kSliceNone ? n : t < 0 ? std::max<int64_t>(t + n, 0) : std::min(t, n);
    r.start = a;
    r.len = b > a ? 1 + (b - a - 1) / step : 0;  // not (b - a + step - 1) / step: a huge step overflows
  } else {
    int64_t a = s == kSliceNone ? n - 1 : s < 0 ? std::max<int64_t>(s + n, -1) : std::min(s, n - 1);
    int64_t b = t == kSliceNone ? -1 : t < 0 ? std::max<int64_t>(t + n, -1) : std::min(t, n - 1);
    r.start = a;
    r.len = a > b ? 1 + (a - b - 1) / -step : 0;  // -step: the step is above INT64_MIN (kSliceNone)
  }
  return r;
}

}  // namespace pipec
