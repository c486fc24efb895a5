/* difftest_read_lib LIB.so OUT_DIR [TAKE]: reads every element of a library built by `pipec build`
 * through its C ABI (runtime/capi/pipe.h) and writes it as OUT_DIR/NNNNNN/<field>.npy, the layout of
 * `pipec run --output`, so the differential harness compares it like any other variant.
 *
 * It loads the library with dlopen and looks the functions up by name, declaring the few DLPack types
 * it reads itself (the DLPack ABI is fixed), so it builds in trees where pipe.h does not exist yet.
 * Exit codes: 0 done, 1 the library reported an error (printed), 2 usage or I/O errors. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
  int32_t device_type;
  int32_t device_id;
} Device;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DataType;
typedef struct {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensorView;
typedef struct Managed {
  DLTensorView t;
  void* ctx;
  void (*deleter)(struct Managed*);
} Managed;

typedef void* (*open_fn)(const void*);
typedef int32_t (*num_fields_fn)(const void*);
typedef const char* (*field_name_fn)(const void*, int32_t);
typedef int (*next_fn)(void*, Managed**);
typedef void (*close_fn)(void*);
typedef const char* (*last_error_fn)(void);

/* The NumPy descr of a DLPack dtype; NULL when .npy has none (bf16). */
static const char* descr(DataType d) {
  if (d.code == 6 || (d.code == 1 && d.bits == 1)) return "|b1"; /* kDLBool */
  if (d.code == 0)
    return d.bits == 8 ? "|i1" : d.bits == 16 ? "<i2" : d.bits == 32 ? "<i4" : d.bits == 64 ? "<i8" : NULL;
  if (d.code == 1)
    return d.bits == 8 ? "|u1" : d.bits == 16 ? "<u2" : d.bits == 32 ? "<u4" : d.bits == 64 ? "<u8" : NULL;
  if (d.code == 2) return d.bits == 16 ? "<f2" : d.bits == 32 ? "<f4" : d.bits == 64 ? "<f8" : NULL;
  return NULL;
}

static int write_npy(const char* path, const DLTensorView* t) {
  const char* d = descr(t->dtype);
  if (!d) {
    fprintf(stderr, "difftest_read_lib: %s: dtype code %d bits %d has no .npy form\n", path, t->dtype.code,
            t->dtype.bits);
    return 2;
  }
  char shape[512] = "(";
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim; ++i) {
    char dim[32];
    snprintf(dim, sizeof dim, "%lld%s", (long long)t->shape[i], t->ndim == 1 ? "," : (i + 1 < t->ndim ? ", " : ""));
    strncat(shape, dim, sizeof shape - strlen(shape) - 1);
    n *= t->shape[i];
  }
  strncat(shape, ")", sizeof shape - strlen(shape) - 1);
  char header[700];
  int len = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", d, shape);
  int total = 10 + len + 1;
  int pad = (64 - total % 64) % 64;
  FILE* f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "difftest_read_lib: cannot write %s\n", path);
    return 2;
  }
  uint16_t hlen = (uint16_t)(len + pad + 1);
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fputc(hlen & 0xff, f);
  fputc(hlen >> 8, f);
  fwrite(header, 1, (size_t)len, f);
  for (int i = 0; i < pad; ++i) fputc(' ', f);
  fputc('\n', f);
  size_t item = t->dtype.bits == 1 ? 1 : t->dtype.bits / 8;
  fwrite((const char*)t->data + t->byte_offset, item, (size_t)n, f);
  return fclose(f) == 0 ? 0 : 2;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: difftest_read_lib LIB.so OUT_DIR [TAKE]\n");
    return 2;
  }
  long long take = argc > 3 ? atoll(argv[3]) : -1;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "difftest_read_lib: %s\n", dlerror());
    return 2;
  }
  open_fn p_open = (open_fn)dlsym(lib, "pipe_open");
  num_fields_fn p_num = (num_fields_fn)dlsym(lib, "pipe_num_fields");
  field_name_fn p_name = (field_name_fn)dlsym(lib, "pipe_field_name");
  next_fn p_next = (next_fn)dlsym(lib, "pipe_next");
  close_fn p_close = (close_fn)dlsym(lib, "pipe_close");
  last_error_fn p_err = (last_error_fn)dlsym(lib, "pipe_last_error");
  if (!p_open || !p_num || !p_name || !p_next || !p_close || !p_err) {
    fprintf(stderr, "difftest_read_lib: %s lacks a pipe_* function\n", argv[1]);
    return 2;
  }
  /* Options NULL: one thread per core, run seed 0, the spec's own folder: what `pipec run` does. */
  void* h = p_open(NULL);
  if (!h) {
    fprintf(stderr, "difftest_read_lib: %s\n", p_err());
    return 1;
  }
  int32_t nf = p_num(h);
  Managed* fields[256];
  if (nf < 0 || nf > 256) {
    fprintf(stderr, "difftest_read_lib: %d fields\n", nf);
    return 2;
  }
  mkdir(argv[2], 0777);
  int rc = 0, status = 0;
  long long e = 0;
  while ((take < 0 || e < take) && (rc = p_next(h, fields)) == 1) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%06lld", argv[2], e);
    mkdir(dir, 0777);
    for (int32_t i = 0; i < nf; ++i) {
      char path[4400];
      snprintf(path, sizeof path, "%s/%s.npy", dir, p_name(h, i));
      if (!status) status = write_npy(path, &fields[i]->t);
      fields[i]->deleter(fields[i]);
    }
    ++e;
  }
  if ((take < 0 || e < take) && rc < 0) {
    fprintf(stderr, "difftest_read_lib: %s\n", p_err());
    status = 1;
  }
  p_close(h);
  return status;
}
