/* A C program reading batches from a library built by `pipec build`, compiled at test time against
 * the generated header. Built with -DLIB_HEADER="libNAME.h" -DUPPER=NAME -DLOWER=name.
 *
 *   capi_test read DUMP_DIR N [DATA_DIR]   reads N elements (fewer at the end of the data) and writes
 *       each field's bytes to DUMP_DIR/NNNNNN/FIELD.bin and its shape to FIELD.shape; checks field
 *       names, dtypes and ranks against the header, that save/restore gives the same elements again
 *       (in the same handle and in a fresh one), that a tensor outlives pipe_close, and that every
 *       tensor was released at the end.
 *   capi_test missing DATA_DIR TEXT        opening or reading with DATA_DIR must fail with an error
 *       that contains TEXT.
 * Exit code 0 when every check passes; each failure is printed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include LIB_HEADER

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NUM_FIELDS CAT(UPPER, _NUM_FIELDS)
#define FIELDS CAT(LOWER, _fields)

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

typedef struct {
  size_t bytes;
  unsigned char* data;
} Blob;

static size_t tensor_bytes(const DLTensor* t) {
  size_t n = (t->dtype.bits / 8) * t->dtype.lanes;
  for (int d = 0; d < t->ndim; ++d) n *= (size_t)t->shape[d];
  return n;
}

static Blob copy_tensor(const DLTensor* t) {
  Blob b;
  b.bytes = tensor_bytes(t);
  b.data = malloc(b.bytes ? b.bytes : 1);
  memcpy(b.data, (const unsigned char*)t->data + t->byte_offset, b.bytes);
  return b;
}

static void release_all(DLManagedTensor** f) {
  for (int i = 0; i < NUM_FIELDS; ++i) f[i]->deleter(f[i]);
}

/* Checks an element against the header's description of the fields. */
static void check_element(pipe_handle* h, DLManagedTensor** f) {
  for (int i = 0; i < NUM_FIELDS; ++i) {
    const DLTensor* t = &f[i]->dl_tensor;
    CHECK(t->device.device_type == kDLCPU, "field %d is not on the CPU", i);
    CHECK(t->dtype.code == FIELDS[i].dl_dtype.code && t->dtype.bits == FIELDS[i].dl_dtype.bits,
          "field %s has dtype code %d bits %d, the header says %d/%d", FIELDS[i].name, t->dtype.code, t->dtype.bits,
          FIELDS[i].dl_dtype.code, FIELDS[i].dl_dtype.bits);
    CHECK(t->ndim == FIELDS[i].ndim, "field %s has rank %d, the header says %d", FIELDS[i].name, t->ndim,
          FIELDS[i].ndim);
    for (int d = 0; d < t->ndim && d < FIELDS[i].ndim; ++d)
      CHECK(FIELDS[i].shape[d] < 0 || FIELDS[i].shape[d] == t->shape[d],
            "field %s dim %d is %lld, the header says %lld", FIELDS[i].name, d, (long long)t->shape[d],
            (long long)FIELDS[i].shape[d]);
    CHECK(t->strides == NULL, "field %s has strides", FIELDS[i].name);
  }
  (void)h;
}

static void dump(const char* dir, int index, DLManagedTensor** f) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%06d", dir, index);
  mkdir(path, 0755);
  for (int i = 0; i < NUM_FIELDS; ++i) {
    const DLTensor* t = &f[i]->dl_tensor;
    snprintf(path, sizeof path, "%s/%06d/%s.bin", dir, index, FIELDS[i].name);
    FILE* o = fopen(path, "wb");
    fwrite((const unsigned char*)t->data + t->byte_offset, 1, tensor_bytes(t), o);
    fclose(o);
    snprintf(path, sizeof path, "%s/%06d/%s.shape", dir, index, FIELDS[i].name);
    o = fopen(path, "w");
    for (int d = 0; d < t->ndim; ++d) fprintf(o, "%lld ", (long long)t->shape[d]);
    fprintf(o, "\n");
    fclose(o);
  }
}

/* Reads up to n elements into blobs[n][NUM_FIELDS]; returns how many came. */
static int read_blobs(pipe_handle* h, int n, Blob (*blobs)[NUM_FIELDS]) {
  DLManagedTensor* f[NUM_FIELDS];
  int got = 0;
  for (; got < n; ++got) {
    int rc = pipe_next(h, f);
    CHECK(rc >= 0, "pipe_next failed: %s", pipe_last_error());
    if (rc != 1) break;
    for (int i = 0; i < NUM_FIELDS; ++i) blobs[got][i] = copy_tensor(&f[i]->dl_tensor);
    release_all(f);
  }
  return got;
}

static void expect_same(Blob (*a)[NUM_FIELDS], Blob (*b)[NUM_FIELDS], int n, const char* what) {
  for (int k = 0; k < n; ++k)
    for (int i = 0; i < NUM_FIELDS; ++i)
      CHECK(a[k][i].bytes == b[k][i].bytes && memcmp(a[k][i].data, b[k][i].data, a[k][i].bytes) == 0,
            "%s: element %d field %s differs", what, k, FIELDS[i].name);
}

static void free_blobs(Blob (*b)[NUM_FIELDS], int n) {
  for (int k = 0; k < n; ++k)
    for (int i = 0; i < NUM_FIELDS; ++i) free(b[k][i].data);
}

static pipe_handle* open_with(const char* data_dir) {
  pipe_options o;
  pipe_options_init(&o);
  o.threads = 2;
  o.data_dir = data_dir;
  return pipe_open(&o);
}

static int do_read(const char* dump_dir, int n, const char* data_dir) {
  pipe_handle* h = open_with(data_dir);
  if (!h) {
    fprintf(stderr, "FAIL pipe_open: %s\n", pipe_last_error());
    return 1;
  }
  int kernels = pipe_compiled_kernels(h);
  CHECK(pipe_abi_version() == PIPE_ABI_VERSION, "ABI version %d", pipe_abi_version());
  CHECK(strcmp(pipe_pipeline_name(), CAT(UPPER, _PIPELINE)) == 0, "pipeline name %s", pipe_pipeline_name());
  CHECK(pipe_num_fields(h) == NUM_FIELDS, "pipe_num_fields %d, header %d", pipe_num_fields(h), NUM_FIELDS);
  for (int i = 0; i < NUM_FIELDS; ++i) {
    CHECK(strcmp(pipe_field_name(h, i), FIELDS[i].name) == 0, "field %d is %s, header %s", i, pipe_field_name(h, i),
          FIELDS[i].name);
    DLDataType dt = pipe_field_dtype(h, i);
    CHECK(dt.code == FIELDS[i].dl_dtype.code && dt.bits == FIELDS[i].dl_dtype.bits, "pipe_field_dtype %d", i);
    CHECK(pipe_field_ndim(h, i) == FIELDS[i].ndim, "pipe_field_ndim %d", i);
    for (int d = 0; d < FIELDS[i].ndim; ++d)
      CHECK(pipe_field_dim(h, i, d) == FIELDS[i].shape[d], "pipe_field_dim %d %d", i, d);
  }
  CHECK(pipe_field_name(h, NUM_FIELDS) == NULL && strstr(pipe_last_error(), "field index") != NULL, "bad index: %s",
        pipe_last_error());

  /* The first half, dumped for comparison with `pipec run --output`. */
  int half = n / 2, total = 0;
  DLManagedTensor* f[NUM_FIELDS];
  DLManagedTensor* held = NULL;
  Blob held_copy = {0, NULL};
  for (; total < half; ++total) {
    int rc = pipe_next(h, f);
    if (rc != 1) {
      CHECK(rc == 0, "pipe_next: %s", pipe_last_error());
      break;
    }
    check_element(h, f);
    dump(dump_dir, total, f);
    if (total == 0) {
      /* Keep field 0 of element 0 past pipe_close: its buffer must stay valid. */
      held = f[0];
      held_copy = copy_tensor(&held->dl_tensor);
      for (int i = 1; i < NUM_FIELDS; ++i) f[i]->deleter(f[i]);
    } else {
      release_all(f);
    }
  }
  CHECK(pipe_live_tensors() == (held ? 1 : 0), "live tensors %lld after releasing", (long long)pipe_live_tensors());

  void* state = NULL;
  size_t state_len = 0;
  CHECK(pipe_save_state(h, &state, &state_len) == 0, "pipe_save_state: %s", pipe_last_error());
  int rest = n - half;
  Blob(*first)[NUM_FIELDS] = calloc((size_t)rest + 1, sizeof *first);
  Blob(*again)[NUM_FIELDS] = calloc((size_t)rest + 1, sizeof *again);
  Blob(*fresh)[NUM_FIELDS] = calloc((size_t)rest + 1, sizeof *fresh);
  int got = read_blobs(h, rest, first);
  for (int k = 0; k < got; ++k) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%06d", dump_dir, total + k);
    mkdir(path, 0755);
    for (int i = 0; i < NUM_FIELDS; ++i) {
      snprintf(path, sizeof path, "%s/%06d/%s.bin", dump_dir, total + k, FIELDS[i].name);
      FILE* o = fopen(path, "wb");
      fwrite(first[k][i].data, 1, first[k][i].bytes, o);
      fclose(o);
    }
  }
  /* Restoring in the same handle gives the same elements again. */
  CHECK(pipe_restore_state(h, state, state_len) == 0, "pipe_restore_state: %s", pipe_last_error());
  int got_again = read_blobs(h, rest, again);
  CHECK(got_again == got, "after restore %d elements, before %d", got_again, got);
  expect_same(first, again, got < got_again ? got : got_again, "restore in the same handle");

  /* And in a fresh handle. */
  pipe_handle* h2 = open_with(data_dir);
  CHECK(h2 != NULL, "second pipe_open: %s", pipe_last_error());
  int got_fresh = 0;
  if (h2) {
    CHECK(pipe_restore_state(h2, state, state_len) == 0, "pipe_restore_state in a fresh handle: %s", pipe_last_error());
    got_fresh = read_blobs(h2, rest, fresh);
    CHECK(got_fresh == got, "fresh handle: %d elements, before %d", got_fresh, got);
    expect_same(first, fresh, got < got_fresh ? got : got_fresh, "restore in a fresh handle");
    /* A damaged state is refused with a message, not a crash. */
    ((unsigned char*)state)[state_len / 2] ^= 0x5a;
    CHECK(pipe_restore_state(h2, state, state_len) == -1 && strstr(pipe_last_error(), "CRC32") != NULL,
          "a damaged state: %s", pipe_last_error());
    pipe_close(h2);
  }
  pipe_free_state(state);
  free_blobs(first, got);
  free_blobs(again, got_again);
  free_blobs(fresh, got_fresh);
  free(first);
  free(again);
  free(fresh);

  pipe_close(h);
  if (held) {
    CHECK(memcmp(held->dl_tensor.data, held_copy.data, held_copy.bytes) == 0, "a held tensor changed after pipe_close");
    held->deleter(held);
    free(held_copy.data);
  }
  CHECK(pipe_live_tensors() == 0, "%lld tensors leaked", (long long)pipe_live_tensors());
  printf("read %d elements\n", total + got);
  printf("compiled kernels %d\n", kernels);
  return failures ? 1 : 0;
}

static int do_missing(const char* data_dir, const char* text) {
  pipe_handle* h = open_with(data_dir);
  int rc = -1;
  if (h) {
    DLManagedTensor* f[NUM_FIELDS];
    rc = pipe_next(h, f);
    if (rc == 1) release_all(f);
  }
  CHECK(rc == -1, "reading with missing data returned %d", rc);
  CHECK(strstr(pipe_last_error(), text) != NULL, "the error does not name %s: %s", text, pipe_last_error());
  printf("error: %s\n", pipe_last_error());
  pipe_close(h);
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc >= 4 && strcmp(argv[1], "read") == 0) return do_read(argv[2], atoi(argv[3]), argc > 4 ? argv[4] : NULL);
  if (argc == 4 && strcmp(argv[1], "missing") == 0) return do_missing(argv[2], argv[3]);
  fprintf(stderr, "usage: capi_test read DUMP_DIR N [DATA_DIR] | missing DATA_DIR TEXT\n");
  return 2;
}
