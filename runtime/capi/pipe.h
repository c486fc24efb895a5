/* pipe.h: the C ABI of a library built by `pipec build spec.pipe -o libNAME.so`.
 *
 * A built library carries one pipeline (its plan, compiled kernels and the pipec runtime), or with
 * --train a trained model ("Served models" below), and exports only the functions below, so several built libraries can
 * be loaded into one process with dlopen (RTLD_LOCAL, as Python's ctypes does) without clashing. `pipec build` also
 * writes libNAME.h, which includes this header and describes the output fields (names, dtypes, shapes).
 *
 * Typical use:
 *
 *   pipe_options o;
 *   pipe_options_init(&o);
 *   o.threads = 4;
 *   pipe_handle* h = pipe_open(&o);
 *   if (!h) { fprintf(stderr, "%s\n", pipe_last_error()); return 1; }
 *   DLManagedTensor* f[LIBNAME_NUM_FIELDS];
 *   int rc;
 *   while ((rc = pipe_next(h, f)) == 1) {
 *     ... f[i]->dl_tensor.data, .shape, .dtype ...
 *     for (int i = 0; i < LIBNAME_NUM_FIELDS; ++i) f[i]->deleter(f[i]);
 *   }
 *   if (rc < 0) fprintf(stderr, "%s\n", pipe_last_error());
 *   pipe_close(h);
 *
 * Threads: one handle must not be used by two threads at once; different handles are independent.
 * Errors: functions that fail return NULL or -1 and set a thread-local message (pipe_last_error) that
 * names the stage and its place in the spec, and the file and byte offset for bad input data.
 */
#ifndef PIPEC_CAPI_PIPE_H
#define PIPEC_CAPI_PIPE_H

#include <stddef.h>
#include <stdint.h>

/* ---- DLPack (ABI of DLPack 0.8; skipped when the real dlpack.h was included first) ---------------- */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#define DLPACK_VERSION 80
#define DLPACK_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
} DLDataTypeCode;

typedef struct {
  uint8_t code; /* DLDataTypeCode */
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides; /* NULL: compact row-major */
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

#ifdef __cplusplus
}
#endif
#endif /* DLPACK_DLPACK_H_ */

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this ABI; pipe_abi_version() returns the one the library was built with. */
#define PIPE_ABI_VERSION 1

typedef struct pipe_handle pipe_handle;

typedef struct pipe_options {
  /* Worker threads for parallel maps and reads; 0 = one per core. */
  int32_t threads;
  /* The run seed: shuffles and random ops without a seed of their own draw from it. */
  uint64_t seed;
  /* Sharding for several readers (data-parallel training): with shard_count = N > 1, a `shard(N,
   * shard_index)` stage is inserted right after every source, so this handle sees the source elements
   * whose index i satisfies i % N == shard_index, before any shuffle, map or batch. The N handles
   * together see every element once per epoch and zipped sources stay aligned. 0 or 1 = no sharding. */
  int64_t shard_count;
  int64_t shard_index;
  /* Where relative data paths in the spec resolve. NULL or "" = the spec's folder recorded by
   * `pipec build` (pipe_spec_dir()). */
  const char* data_dir;
} pipe_options;

/* Fills `o` with the defaults (all zero / NULL). */
void pipe_options_init(pipe_options* o);

/* PIPE_ABI_VERSION as the library saw it. */
int32_t pipe_abi_version(void);
/* The name of the pipeline the library carries. */
const char* pipe_pipeline_name(void);
/* The spec's folder recorded at build time (absolute). */
const char* pipe_spec_dir(void);

/* Starts a run. `options` may be NULL (the defaults). NULL on error (see pipe_last_error): bad
 * options, or data that cannot be found (a source's file list is made here, so a missing file is
 * usually reported by pipe_open, otherwise by the first pipe_next). */
pipe_handle* pipe_open(const pipe_options* options);

/* The output element's fields, in order. Names stay valid until pipe_close. */
int32_t pipe_num_fields(const pipe_handle* h);
const char* pipe_field_name(const pipe_handle* h, int32_t i);
/* A field's DLPack dtype, rank and dimensions as the spec types them (the batch dimension first when
 * the pipeline batches); a dimension is -1 when it is known only at run time (the last, smaller batch
 * or a variable-length field). pipe_field_dim returns -2 for bad arguments. */
DLDataType pipe_field_dtype(const pipe_handle* h, int32_t i);
int32_t pipe_field_ndim(const pipe_handle* h, int32_t i);
int64_t pipe_field_dim(const pipe_handle* h, int32_t i, int32_t d);

/* How many map/filter stages run compiled kernels (the rest run on the interpreter). */
int32_t pipe_compiled_kernels(const pipe_handle* h);

/* The next output element (a batch, when the pipeline batches). On 1, out_fields[0..num_fields) each
 * hold a new DLManagedTensor on the CPU, compact row-major, pointing into the runtime's buffer without
 * a copy; the caller releases each with `t->deleter(t)` when done (in any order, from any thread; the
 * buffer stays valid until then, also after pipe_close). Returns 1 for an element, 0 at the end of the
 * data, -1 on error (out_fields untouched). */
int pipe_next(pipe_handle* h, DLManagedTensor** out_fields);

/* The iterator state: the position in every file, shuffle buffers, partial batches, ... so a run can
 * continue exactly where it was. *buf is owned by the caller and freed with pipe_free_state. A state
 * can only be restored by a handle of the same library opened with the same seed and shard options.
 * Both return 0 on success, -1 on error. */
int pipe_save_state(pipe_handle* h, void** buf, size_t* len);
void pipe_free_state(void* buf);
int pipe_restore_state(pipe_handle* h, const void* buf, size_t len);
/* A state of another library, seed or shard, or a damaged one, is refused before anything changes.
 * A state whose data files changed since (fewer records) can fail half-way: close that handle. */

/* Stops the run and frees the handle (NULL is allowed). Tensors still held stay valid. */
void pipe_close(pipe_handle* h);

/* The last error on this thread, "" when none. Valid until the next failing call on this thread. */
const char* pipe_last_error(void);

/* DLManagedTensors handed out and not yet released (for leak checks in tests). */
int64_t pipe_live_tensors(void);

/* ---- Served models ---------------------------------------------------------------------------------
 *
 * A library built by `pipec build spec.pipe --train T --weights W.safetensors -o libT.so` carries a
 * trained model instead of a pipeline (pipe_open then fails): the preprocessing of train block T's data
 * (its source's fields in, through the maps before `batch`, to the model's inputs) and the model's
 * forward pass in inference mode (batch_norm on its moving statistics, no dropout), with the weights of
 * W compiled in. A request is a batch of records as the source reads them (for `tfrecord` features
 * `d: bytes[194]` and `s: i64`, the model's preprocessing may need only `d`, as u8 [rows, 194]); the
 * answer is the model's output for each, [rows, ...]. libT.h names the inputs and the output.
 *
 *   pipe_model* m = pipe_model_open(NULL);
 *   const DLTensor* in[1] = {&d};                 // u8 [rows, 194], compact row-major, on the CPU
 *   DLManagedTensor* out;
 *   if (pipe_predict(m, in, 1, &out) != 0) fprintf(stderr, "%s\n", pipe_last_error());
 *   ... out->dl_tensor.data: f32 [rows, 1] ...
 *   out->deleter(out);
 *   pipe_model_close(m);
 *
 * Threads: pipe_predict may be called from several threads on one model at once (each call computes
 * on an executor of its own). */
typedef struct pipe_model pipe_model;

typedef struct pipe_model_options {
  /* Threads of each request's kernels; 0 = one per core. */
  int32_t threads;
  /* NULL or "": the weights compiled into the library. Else a safetensors file of the same model (as
   * `pipec run --save` writes), loaded here; one that does not fit the model is refused. */
  const char* weights;
} pipe_model_options;

void pipe_model_options_init(pipe_model_options* o);

/* The train block the library serves. */
const char* pipe_model_name(void);

/* Loads the model. `options` may be NULL (the defaults). NULL on error (see pipe_last_error). */
pipe_model* pipe_model_open(const pipe_model_options* options);

/* The request's inputs, in the order pipe_predict takes them: name, DLPack dtype and one example's
 * shape (without the rows dimension; -1 for a dimension of any size). pipe_model_input_dim returns -2
 * for bad arguments. */
int32_t pipe_model_num_inputs(const pipe_model* m);
const char* pipe_model_input_name(const pipe_model* m, int32_t i);
DLDataType pipe_model_input_dtype(const pipe_model* m, int32_t i);
int32_t pipe_model_input_ndim(const pipe_model* m, int32_t i);
int64_t pipe_model_input_dim(const pipe_model* m, int32_t i, int32_t d);
/* The output: one example's dtype and shape. */
DLDataType pipe_model_output_dtype(const pipe_model* m);
int32_t pipe_model_output_ndim(const pipe_model* m);
int64_t pipe_model_output_dim(const pipe_model* m, int32_t d);

/* Predicts: inputs[0..num_inputs) are the request's inputs (each [rows, ...], the same rows, on the
 * CPU, compact row-major or with strides of a compact layout; only read). On 0, *output is a new
 * DLManagedTensor [rows, ...] the caller releases with its deleter. -1 on error (a wrong count, dtype or
 * shape, named with its input; data the preprocessing rejects), *output untouched. */
int pipe_predict(pipe_model* m, const DLTensor* const* inputs, int32_t num_inputs, DLManagedTensor** output);

/* Frees the model (NULL is allowed). Outputs still held stay valid. */
void pipe_model_close(pipe_model* m);

#ifdef __cplusplus
}
#endif

#endif /* PIPEC_CAPI_PIPE_H */
