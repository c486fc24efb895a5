// Reads every batch of libnumbers.so through the C ABI and prints what it saw:
// "fields 2 batches 12 rows 96 sum 4560 halves ok".
#include <cstdio>

#include "libnumbers.h"

int main() {
  pipe_options o;
  pipe_options_init(&o);
  o.threads = 2;
  pipe_handle* h = pipe_open(&o);
  if (!h) {
    std::fprintf(stderr, "%s\n", pipe_last_error());
    return 1;
  }
  DLManagedTensor* f[NUMBERS_NUM_FIELDS];
  long batches = 0, rows = 0;
  double sum = 0;
  bool halves = true;
  int rc;
  while ((rc = pipe_next(h, f)) == 1) {
    const float* x = static_cast<const float*>(f[NUMBERS_FIELD_X]->dl_tensor.data);
    const float* half = static_cast<const float*>(f[NUMBERS_FIELD_HALF]->dl_tensor.data);
    const long n = f[NUMBERS_FIELD_X]->dl_tensor.shape[0];
    for (long i = 0; i < n; ++i) {
      sum += x[i];
      halves = halves && half[i] == x[i] * 0.5f;
    }
    rows += n;
    ++batches;
    for (int i = 0; i < NUMBERS_NUM_FIELDS; ++i) f[i]->deleter(f[i]);
  }
  if (rc < 0) std::fprintf(stderr, "%s\n", pipe_last_error());
  pipe_close(h);
  std::printf("fields %d batches %ld rows %ld sum %.0f halves %s\n", NUMBERS_NUM_FIELDS, batches, rows, sum,
              halves ? "ok" : "wrong");
  return rc < 0;
}
