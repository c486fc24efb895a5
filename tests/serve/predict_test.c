/* A C program serving a model from a library built by `pipec build --train`, compiled at test time
 * against the generated header (-DLIB_HEADER="libNAME.h" -DUPPER=NAME). The model must have one input.
 *
 *   predict_test predict INPUT.bin ROWS OUT.bin [WEIGHTS]
 *       reads ROWS examples of the model's input (raw bytes, compact row-major) and writes the output's
 *       bytes. Checks the input's and output's description against the header, predicts the same request
 *       from 4 threads at once (every answer equal to the first, byte for byte), checks that every
 *       output tensor is released. WEIGHTS: a safetensors file loaded at open instead of the built-in
 *       weights.
 *   predict_test errors INPUT.bin ROWS
 *       a request of the wrong dtype, shape, count or rows is refused with a message naming the input,
 *       and pipe_open (a pipeline's entry) says the library carries a model.
 *   predict_test open_fails WEIGHTS TEXT
 *       pipe_model_open with WEIGHTS must fail with a message containing TEXT.
 * Exit code 0 when every check passes; each failure is printed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include LIB_HEADER

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NUM_INPUTS CAT(UPPER, _NUM_INPUTS)
#define OUTPUT_NUMEL CAT(UPPER, _OUTPUT_NUMEL)
#define OUTPUT_NDIM CAT(UPPER, _OUTPUT_NDIM)

static int failures = 0;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
      ++failures;                                          \
    }                                                      \
  } while (0)

static unsigned char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* data = malloc(n > 0 ? (size_t)n : 1);
  *size = fread(data, 1, (size_t)n, f);
  fclose(f);
  return data;
}

/* The model's input as a DLTensor over `data`: ROWS examples of the shape the model reports. */
typedef struct {
  DLTensor t;
  int64_t shape[8];
} Input;

static Input make_input(pipe_model* m, void* data, int64_t rows) {
  Input in;
  memset(&in, 0, sizeof in);
  int32_t nd = pipe_model_input_ndim(m, 0);
  in.shape[0] = rows;
  for (int32_t d = 0; d < nd; ++d) in.shape[d + 1] = pipe_model_input_dim(m, 0, d);
  in.t.data = data;
  in.t.device.device_type = kDLCPU;
  in.t.ndim = nd + 1;
  in.t.dtype = pipe_model_input_dtype(m, 0);
  return in;
}

/* make_input's tensor points at the copy's own shape (a struct copy would point at the original's). */
#define BIND(x) ((x).t.shape = (x).shape)

typedef struct {
  pipe_model* m;
  const DLTensor* in;
  size_t bytes;
  const unsigned char* want;
  int same;
} Job;

static void* predict_again(void* arg) {
  Job* j = arg;
  j->same = 1;
  for (int k = 0; k < 3; ++k) {
    DLManagedTensor* out = NULL;
    if (pipe_predict(j->m, &j->in, 1, &out) != 0) {
      fprintf(stderr, "thread: %s\n", pipe_last_error());
      j->same = 0;
      return NULL;
    }
    if (memcmp(out->dl_tensor.data, j->want, j->bytes) != 0) j->same = 0;
    out->deleter(out);
  }
  return NULL;
}

static int cmd_predict(const char* input, int64_t rows, const char* out_path, const char* weights) {
  size_t size = 0;
  unsigned char* data = read_file(input, &size);
  CHECK(data != NULL, "cannot read %s", input);
  if (!data) return 1;
  pipe_model_options o;
  pipe_model_options_init(&o);
  o.weights = weights;
  pipe_model* m = pipe_model_open(&o);
  CHECK(m != NULL, "pipe_model_open: %s", pipe_last_error());
  if (!m) return 1;
  CHECK(strcmp(pipe_model_name(), CAT(UPPER, _TRAIN)) == 0, "model name %s", pipe_model_name());
  CHECK(pipe_model_num_inputs(m) == NUM_INPUTS && NUM_INPUTS == 1, "inputs %d", pipe_model_num_inputs(m));
  CHECK(pipe_model_output_ndim(m) == OUTPUT_NDIM, "output ndim %d", pipe_model_output_ndim(m));
  Input in = make_input(m, data, rows);
  BIND(in);
  const DLTensor* inputs[1] = {&in.t};
  DLManagedTensor* out = NULL;
  int rc = pipe_predict(m, inputs, 1, &out);
  CHECK(rc == 0, "pipe_predict: %s", pipe_last_error());
  if (rc != 0) return 1;
  CHECK(out->dl_tensor.ndim == OUTPUT_NDIM + 1 && out->dl_tensor.shape[0] == rows, "output rank %d rows %lld",
        out->dl_tensor.ndim, (long long)out->dl_tensor.shape[0]);
  size_t bytes = (size_t)rows * OUTPUT_NUMEL * (out->dl_tensor.dtype.bits / 8);
  FILE* f = fopen(out_path, "wb");
  fwrite(out->dl_tensor.data, 1, bytes, f);
  fclose(f);

  /* The same request from 4 threads at once, 3 times each: every answer equal to the first. */
  Job jobs[4];
  pthread_t threads[4];
  for (int k = 0; k < 4; ++k) {
    jobs[k].m = m;
    jobs[k].in = &in.t;
    jobs[k].bytes = bytes;
    jobs[k].want = out->dl_tensor.data;
    pthread_create(&threads[k], NULL, predict_again, &jobs[k]);
  }
  for (int k = 0; k < 4; ++k) {
    pthread_join(threads[k], NULL);
    CHECK(jobs[k].same, "thread %d answered differently", k);
  }
  pipe_model_close(m);
  /* The output outlives the model. */
  CHECK(memcmp(out->dl_tensor.data, jobs[0].want, bytes) == 0, "output changed after close");
  out->deleter(out);
  CHECK(pipe_live_tensors() == 0, "%lld tensors not released", (long long)pipe_live_tensors());
  free(data);
  printf("predicted %lld rows\n", (long long)rows);
  return failures != 0;
}

static void expect_refused(pipe_model* m, const DLTensor* const* in, int32_t n, const char* text) {
  DLManagedTensor* out = NULL;
  int rc = pipe_predict(m, in, n, &out);
  CHECK(rc == -1 && out == NULL, "a bad request was answered (%s expected)", text);
  CHECK(strstr(pipe_last_error(), text) != NULL, "error `%s` lacks `%s`", pipe_last_error(), text);
}

static int cmd_errors(const char* input, int64_t rows) {
  size_t size = 0;
  unsigned char* data = read_file(input, &size);
  pipe_model* m = pipe_model_open(NULL);
  CHECK(m != NULL, "pipe_model_open: %s", pipe_last_error());
  if (!m || !data) return 1;
  const char* name = pipe_model_input_name(m, 0);
  Input in = make_input(m, data, rows);
  BIND(in);
  const DLTensor* inputs[1] = {&in.t};

  Input wrong_dtype = in;
  BIND(wrong_dtype);
  wrong_dtype.t.dtype.code = kDLFloat;
  wrong_dtype.t.dtype.bits = 64;
  const DLTensor* w1[1] = {&wrong_dtype.t};
  expect_refused(m, w1, 1, name);
  expect_refused(m, w1, 1, "dtype");

  Input wrong_shape = in;
  BIND(wrong_shape);
  wrong_shape.shape[1] += 1;
  const DLTensor* w2[1] = {&wrong_shape.t};
  expect_refused(m, w2, 1, "shape");

  expect_refused(m, inputs, 2, "takes 1 inputs, 2 were given");
  const DLTensor* none[1] = {NULL};
  expect_refused(m, none, 1, "is NULL");

  Input no_rows = in;
  BIND(no_rows);
  no_rows.shape[0] = 0;
  const DLTensor* w3[1] = {&no_rows.t};
  expect_refused(m, w3, 1, "no examples");

  CHECK(pipe_model_input_dim(m, 0, 99) == -2, "a dimension out of range");
  CHECK(pipe_model_input_name(m, 5) == NULL, "an input out of range");
  CHECK(pipe_open(NULL) == NULL && strstr(pipe_last_error(), "no pipec plan") != NULL,
        "pipe_open on a model library: %s", pipe_last_error());
  pipe_model_close(m);
  free(data);
  printf("errors ok\n");
  return failures != 0;
}

static int cmd_open_fails(const char* weights, const char* text) {
  pipe_model_options o;
  pipe_model_options_init(&o);
  o.weights = weights;
  pipe_model* m = pipe_model_open(&o);
  CHECK(m == NULL, "opened with %s", weights);
  CHECK(strstr(pipe_last_error(), text) != NULL, "error `%s` lacks `%s`", pipe_last_error(), text);
  return failures != 0;
}

int main(int argc, char** argv) {
  if (argc >= 5 && strcmp(argv[1], "predict") == 0)
    return cmd_predict(argv[2], atoll(argv[3]), argv[4], argc >= 6 ? argv[5] : NULL);
  if (argc == 4 && strcmp(argv[1], "errors") == 0) return cmd_errors(argv[2], atoll(argv[3]));
  if (argc == 4 && strcmp(argv[1], "open_fails") == 0) return cmd_open_fails(argv[2], argv[3]);
  fprintf(stderr, "usage: predict_test predict|errors|open_fails ...\n");
  return 2;
}
