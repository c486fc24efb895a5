// Recording fakes of cuDNN's backend API and of cuBLASLt, installed as the function tables the GPU
// training wrappers (runtime/train/gpu/cudnn_conv.h, cublaslt_dense.h) call through, so that their call
// sequences are tested without a GPU or a driver.
//
// Each fake records every call with its arguments, checks what the real library checks where a
// mistake would otherwise pass unseen (attribute value sizes, descriptors set after finalizing, shapes
// that do not fit, leading dimensions), and *computes*: device pointers are host pointers here, so
// cublasLtMatmul multiplies the matrices its layouts and transposes describe (with the epilogue), and
// cudnnBackendExecute runs the convolution its descriptors describe (dims, strides, pads, dilations),
// in double. The tests hold those results against the reference executor's kernels.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/gpu/cublaslt_api.h"
#include "runtime/gpu/cudnn_api.h"

namespace pipec::testing {

// ---------------------------------------------------------------------------------------------------
// cuDNN

struct FakeEngine {
  int64_t index = 0;           // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  std::vector<int32_t> notes;  // numerical notes
  bool builds = true;          // false: finalizing a plan on it fails with NOT_SUPPORTED
  int64_t workspace = 0;       // the plan's workspace size
};

/// One recorded attribute: its values by type (ints for INT64 and the enumeration types, floats for
/// FLOAT, descriptors as fake ids for BACKEND_DESCRIPTOR, raw pointers for VOID_PTR and HANDLE).
struct FakeAttribute {
  int32_t type = -1;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<int64_t> descriptors;
  std::vector<uint64_t> pointers;
};

struct FakeDescriptor {
  int64_t id = 0;
  int32_t type = -1;  // CUDNN_BACKEND_*_DESCRIPTOR
  bool finalized = false, destroyed = false;
  std::map<int32_t, FakeAttribute> attrs;
  int64_t engine = -1;     // ENGINECFG and ENGINE: the engine's position in its heuristic list
  int32_t heur_mode = -1;  // ENGINECFG / ENGINE: the list it came from
  int64_t source = 0;      // ENGINECFG / ENGINE: the heuristic descriptor it came from
};

struct CudnnCall {
  std::string fn;    // "cudnnBackendSetAttribute", ...
  int64_t desc = 0;  // the descriptor it acts on (fake id), 0 for none
  int32_t value =
      -1;  // the attribute (Set/Get), the descriptor type (Create), the heuristic mode (Finalize of a heuristic)
  FakeAttribute attr;  // Set: the values
};

class FakeCudnn {
 public:
  FakeCudnn();  // becomes the fake the table's functions record into (one at a time)
  ~FakeCudnn();
  FakeCudnn(const FakeCudnn&) = delete;
  FakeCudnn& operator=(const FakeCudnn&) = delete;

  /// The function table to give CudnnConv.
  const cudnn::CudnnApi& api() const;

  std::vector<FakeEngine> mode_a = {FakeEngine{7, {}, true, 0}};    // heuristics mode A's list
  std::vector<FakeEngine> fallback = {FakeEngine{0, {}, true, 0}};  // the fallback list
  /// A call (by function name, or "cudnnBackendFinalize:<descriptor type>") that fails with this status.
  std::map<std::string, cudnn::cudnnStatus_t> fail;

  std::vector<CudnnCall> calls;
  std::vector<FakeDescriptor> descriptors;  // by id - 1

  FakeDescriptor& descriptor(int64_t id) { return descriptors.at(static_cast<size_t>(id - 1)); }
  /// The ids of the descriptors of `type`, in creation order.
  std::vector<int64_t> of_type(int32_t type) const;
  /// Calls of `fn`, in order.
  std::vector<const CudnnCall*> calls_of(const std::string& fn) const;
  /// Descriptors created and not destroyed.
  int64_t live_descriptors() const;

  // The entry points (public for the table's trampolines).
  cudnn::cudnnStatus_t create(int32_t type, cudnn::cudnnBackendDescriptor_t* d);
  cudnn::cudnnStatus_t destroy(cudnn::cudnnBackendDescriptor_t d);
  cudnn::cudnnStatus_t finalize(cudnn::cudnnBackendDescriptor_t d);
  cudnn::cudnnStatus_t set(cudnn::cudnnBackendDescriptor_t d, int32_t attr, int32_t type, int64_t count,
                           const void* values);
  cudnn::cudnnStatus_t get(cudnn::cudnnBackendDescriptor_t d, int32_t attr, int32_t type, int64_t requested,
                           int64_t* count, void* values);
  cudnn::cudnnStatus_t execute(cudnn::cudnnHandle_t h, cudnn::cudnnBackendDescriptor_t plan,
                               cudnn::cudnnBackendDescriptor_t pack);
  std::string last_error;
  cuda::CUstream stream = nullptr;
  bool handle_live = false;

 private:
  FakeDescriptor* lookup(cudnn::cudnnBackendDescriptor_t d);
  cudnn::cudnnStatus_t failing(const std::string& what);
  cudnn::cudnnStatus_t error(cudnn::cudnnStatus_t status, const std::string& message);
  cudnn::CudnnApi api_;
};

/// A fake descriptor's handle value (what the wrappers hold) and back.
cudnn::cudnnBackendDescriptor_t fake_descriptor_handle(int64_t id);

// ---------------------------------------------------------------------------------------------------
// cuBLASLt

struct FakeAlgo {
  int32_t id = 0;
  uint32_t reduction_scheme = cublaslt::CUBLASLT_REDUCTION_SCHEME_NONE;
  size_t workspace = 0;
  cublaslt::cublasStatus_t state = cublaslt::CUBLAS_STATUS_SUCCESS;
};

struct FakeMatmulDesc {
  int32_t compute = -1, scale = -1;
  int32_t trans_a = cublaslt::CUBLAS_OP_N, trans_b = cublaslt::CUBLAS_OP_N;
  uint32_t epilogue = cublaslt::CUBLASLT_EPILOGUE_DEFAULT;
  uint64_t bias = 0;
  bool destroyed = false;
};

struct FakeLayout {
  int32_t type = -1;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  bool destroyed = false;
};

struct FakePreference {
  uint64_t max_workspace = 0;
  uint32_t reduction_mask = 0x7;
  uint32_t alignment[4] = {256, 256, 256, 256};  // A, B, C, D
  bool destroyed = false;
};

struct MatmulCall {
  int64_t desc = 0;                    // FakeMatmulDesc index
  FakeMatmulDesc desc_state;           // its settings at the call
  int64_t a = 0, b = 0, c = 0, d = 0;  // FakeLayout indexes
  uint64_t a_ptr = 0, b_ptr = 0, c_ptr = 0, d_ptr = 0;
  float alpha = 0, beta = 0;
  int32_t algo = -1;
  uint64_t workspace = 0;
  size_t workspace_bytes = 0;
  cuda::CUstream stream = nullptr;
};

class FakeCublasLt {
 public:
  FakeCublasLt();
  ~FakeCublasLt();
  FakeCublasLt(const FakeCublasLt&) = delete;
  FakeCublasLt& operator=(const FakeCublasLt&) = delete;

  const cublaslt::CublasLtApi& api() const;

  /// What cublasLtMatmulAlgoGetHeuristic returns, in order.
  std::vector<FakeAlgo> algos = {
      FakeAlgo{1, cublaslt::CUBLASLT_REDUCTION_SCHEME_NONE, 0, cublaslt::CUBLAS_STATUS_SUCCESS}};
  /// A function (by name) that fails with this status.
  std::map<std::string, cublaslt::cublasStatus_t> fail;
  /// Return algorithms whatever the preference's reduction scheme mask says (a library that ignores it).
  bool ignore_reduction_mask = false;

  std::vector<std::string> calls;  // function names in order
  std::vector<FakeMatmulDesc> descs;
  std::vector<FakeLayout> layouts;
  std::vector<FakePreference> preferences;
  std::vector<MatmulCall> matmuls;
  int heuristic_calls = 0;
  bool handle_live = false;

  int64_t live_objects() const;

  // Entry points.
  cublaslt::cublasStatus_t desc_set(cublaslt::cublasLtMatmulDesc_t d, int32_t attr, const void* buf, size_t bytes);
  cublaslt::cublasStatus_t pref_set(cublaslt::cublasLtMatmulPreference_t p, int32_t attr, const void* buf,
                                    size_t bytes);
  cublaslt::cublasStatus_t heuristic(cublaslt::cublasLtMatmulDesc_t d, cublaslt::cublasLtMatrixLayout_t a,
                                     cublaslt::cublasLtMatrixLayout_t b, cublaslt::cublasLtMatrixLayout_t c,
                                     cublaslt::cublasLtMatrixLayout_t dd, cublaslt::cublasLtMatmulPreference_t p,
                                     int requested, cublaslt::cublasLtMatmulHeuristicResult_t* results, int* returned);
  cublaslt::cublasStatus_t matmul(cublaslt::cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                                  cublaslt::cublasLtMatrixLayout_t al, const void* b,
                                  cublaslt::cublasLtMatrixLayout_t bl, const void* beta, const void* c,
                                  cublaslt::cublasLtMatrixLayout_t cl, void* d, cublaslt::cublasLtMatrixLayout_t dl,
                                  const cublaslt::cublasLtMatmulAlgo_t* algo, void* ws, size_t ws_bytes,
                                  cuda::CUstream stream);
  cublaslt::cublasStatus_t failing(const std::string& fn);

 private:
  cublaslt::CublasLtApi api_;
};

}  // namespace pipec::testing
