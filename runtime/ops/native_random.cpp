#include "runtime/ops/native_random.h"

#include "runtime/core/philox.h"

namespace pipec {

extern "C" int32_t pipec_random_fill(int32_t kind, uint64_t seed, uint64_t op_id, int64_t element_index, int64_t epoch,
                                     int64_t count, int64_t lo, int64_t hi, void* out) {
  try {
    RandomStream st(seed, op_id, static_cast<uint64_t>(element_index), static_cast<uint64_t>(epoch));
    switch (kind) {
      case kRandomUniformF32:
        for (int64_t k = 0; k < count; ++k) static_cast<float*>(out)[k] = st.uniform_float();
        return 0;
      case kRandomUniformF64:
        for (int64_t k = 0; k < count; ++k) static_cast<double*>(out)[k] = st.uniform_double();
        return 0;
      case kRandomNormal:
        for (int64_t k = 0; k < count; ++k) static_cast<double*>(out)[k] = st.normal();
        return 0;
      case kRandomInt:
        if (lo >= hi) return 1;
        for (int64_t k = 0; k < count; ++k) static_cast<int64_t*>(out)[k] = st.uniform_int(lo, hi - 1);
        return 0;
      default: return 2;
    }
  } catch (...) {
    return 2;
  }
}

}  // namespace pipec
