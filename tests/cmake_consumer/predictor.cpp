// Serves the `halve` train block of numbers.pipe from libhalver.so (pipec_add_library(... TRAIN halve
// WEIGHTS ...)): ten requests' predictions against value * 0.005, printed as "predicted 10 halves ok".
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "libhalver.h"

int main() {
  pipe_model* m = pipe_model_open(nullptr);
  if (!m) {
    std::fprintf(stderr, "%s\n", pipe_last_error());
    return 1;
  }
  // The request is range's field `value`: i64 [rows]; the map before batch scales it for the model.
  int64_t values[10] = {0, 11, 22, 33, 44, 55, 66, 77, 88, 99};
  int64_t shape[1] = {10};
  DLTensor in{values, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, shape, nullptr, 0};
  const DLTensor* inputs[HALVER_NUM_INPUTS] = {&in};
  DLManagedTensor* out = nullptr;
  if (pipe_predict(m, inputs, 1, &out) != 0) {
    std::fprintf(stderr, "%s\n", pipe_last_error());
    return 1;
  }
  const float* y = static_cast<const float*>(out->dl_tensor.data);
  bool ok = out->dl_tensor.ndim == 2 && out->dl_tensor.shape[0] == 10 && out->dl_tensor.shape[1] == 1;
  for (int i = 0; ok && i < 10; ++i) ok = std::fabs(y[i] - values[i] * 0.005f) < 2e-3f;
  if (!ok)
    for (int i = 0; i < 10; ++i) std::fprintf(stderr, "value %ld: %f\n", static_cast<long>(values[i]), y[i]);
  out->deleter(out);
  pipe_model_close(m);
  std::printf("predicted 10 halves %s\n", ok ? "ok" : "wrong");
  return ok ? 0 : 1;
}
