/* Times a model library built by `pipec build --train` (one input, as the chess net's `d`): the latency
 * of one example and of a batch. Built by bench/serve/run.sh against the library's header.
 *
 *   predict_bench INPUT.bin ROWS_IN_FILE THREADS BATCH ITERS
 *
 * Requests are the first BATCH rows of INPUT.bin (BATCH <= ROWS_IN_FILE). After 3 warm-up calls, ITERS
 * timed calls; prints `RESULT <median ms> <fastest ms> <CPU ms per call>`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include LIB_HEADER

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double cpu_ms(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: predict_bench INPUT.bin ROWS_IN_FILE THREADS BATCH ITERS\n");
    return 2;
  }
  const long rows_in_file = atol(argv[2]), batch = atol(argv[4]), iters = atol(argv[5]);
  FILE* f = fopen(argv[1], "rb");
  if (!f || batch < 1 || batch > rows_in_file || iters < 1) {
    fprintf(stderr, "bad arguments\n");
    return 2;
  }
  pipe_model_options o;
  pipe_model_options_init(&o);
  o.threads = atoi(argv[3]);
  pipe_model* m = pipe_model_open(&o);
  if (!m) {
    fprintf(stderr, "%s\n", pipe_last_error());
    return 1;
  }
  int64_t shape[8] = {batch};
  int32_t nd = pipe_model_input_ndim(m, 0);
  size_t row_bytes = pipe_model_input_dtype(m, 0).bits / 8;
  for (int32_t d = 0; d < nd; ++d) {
    shape[d + 1] = pipe_model_input_dim(m, 0, d);
    row_bytes *= (size_t)shape[d + 1];
  }
  unsigned char* data = malloc(row_bytes * (size_t)rows_in_file);
  if (fread(data, row_bytes, (size_t)rows_in_file, f) != (size_t)rows_in_file) {
    fprintf(stderr, "%s holds fewer than %ld rows\n", argv[1], rows_in_file);
    return 2;
  }
  fclose(f);
  DLTensor t = {data, {kDLCPU, 0}, nd + 1, pipe_model_input_dtype(m, 0), shape, NULL, 0};
  const DLTensor* in[1] = {&t};
  double* ms = malloc(sizeof(double) * (size_t)iters);
  double cpu_start = 0;
  for (long k = -3; k < iters; ++k) {
    if (k == 0) cpu_start = cpu_ms();
    DLManagedTensor* out;
    double t0 = now_ms();
    if (pipe_predict(m, in, 1, &out) != 0) {
      fprintf(stderr, "%s\n", pipe_last_error());
      return 1;
    }
    if (k >= 0) ms[k] = now_ms() - t0;
    out->deleter(out);
  }
  double cpu = (cpu_ms() - cpu_start) / (double)iters;
  qsort(ms, (size_t)iters, sizeof(double), by_value);
  printf("RESULT %.4f %.4f %.4f\n", ms[iters / 2], ms[0], cpu);
  pipe_model_close(m);
  free(ms);
  free(data);
  return 0;
}
