// Keras' dense layer on cuBLASLt: y[rows, out] = x[rows, in] · kernel[in, out] + bias[out] (then relu
// when the node has `activation = relu`), and its two gradients, over pipec's row-major buffers.
//
// cuBLASLt is column-major, and a row-major [r, c] buffer is the column-major [c, r] matrix, so each
// call is the transposed product (m, n, k are cuBLASLt's; every layout is the buffer as it is):
//   forward          yᵀ[out, rows]  = kernelᵀ[out, in] · xᵀ[in, rows]      + bias   (epilogue BIAS or RELU_BIAS)
//   backward_input   dxᵀ[in, rows]  = (kernelᵀ)ᵀ[in, out] · dyᵀ[out, rows]           (TRANSA = T)
//   backward_kernel  dkᵀ[out, in]   = dyᵀ[out, rows] · (xᵀ)ᵀ[rows, in]               (TRANSB = T)
// The bias gradient (a sum over rows) is not computed here: it is a reduction node of its own.
//
// Products are f32 (CUBLAS_COMPUTE_32F; _FAST_TF32 only for f32 data with allow_tf32 or
// tf32_exact_operands) and deterministic: split-K algorithms whose partial sums meet in place
// (CUBLASLT_REDUCTION_SCHEME_INPLACE, which orders them with atomic counters) are never chosen, so a step
// repeats bit for bit. Each shape's algorithm is chosen once by cublasLtMatmulAlgoGetHeuristic and cached.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "runtime/gpu/cublaslt_api.h"
#include "runtime/train/gpu/library_types.h"

namespace pipec::gpu {

struct DenseShape {
  int64_t rows = 0, in = 0, out = 0;
};

enum class DenseCall { Forward, ForwardRelu, BackwardInput, BackwardKernel };

const char* dense_call_name(DenseCall c);  // "forward", "forward+relu", "backward_input", "backward_kernel"

class CublasLtDense {
 public:
  /// Creates a cuBLASLt handle (cublasLtCreate) on the functions of `api` (the loaded library's, or a
  /// test's recording fake); every matmul is queued on `stream`. `max_workspace_bytes` is the most
  /// workspace a call may ask for (cuBLASLt's Hopper kernels want up to 32 MiB).
  CublasLtDense(const cublaslt::CublasLtApi& api, cuda::CUstream stream, LibraryCallOptions options,
                uint64_t max_workspace_bytes = uint64_t(32) << 20);
  ~CublasLtDense();
  CublasLtDense(const CublasLtDense&) = delete;
  CublasLtDense& operator=(const CublasLtDense&) = delete;

  /// The workspace the call needs (0 or more, at most max_workspace_bytes); chooses and caches the
  /// algorithm for the shape. `layer` names the layer in errors.
  size_t workspace_bytes(DenseCall call, const DenseShape& s, const std::string& layer);

  /// y = x · kernel + bias, relu(...) when `relu`. x [rows, in], kernel [in, out] (Keras' layout),
  /// bias [out], y [rows, out], all row-major and of the options' storage type (cuBLASLt reads the bias
  /// in y's type).
  void forward(const DenseShape& s, bool relu, DevPtr x, DevPtr kernel, DevPtr bias, DevPtr y,
               DeviceWorkspace workspace, const std::string& layer);
  /// dx [rows, in] = dy [rows, out] · kernelᵀ.
  void backward_input(const DenseShape& s, DevPtr dy, DevPtr kernel, DevPtr dx, DeviceWorkspace workspace,
                      const std::string& layer);
  /// dkernel [in, out] = xᵀ · dy (overwritten, not accumulated).
  void backward_kernel(const DenseShape& s, DevPtr x, DevPtr dy, DevPtr dkernel, DeviceWorkspace workspace,
                       const std::string& layer);

  size_t cached_algorithms() const { return plans_.size(); }

 private:
  struct Plan;
  using Key = std::tuple<int, int64_t, int64_t, int64_t>;
  Plan& plan(DenseCall call, const DenseShape& s, const std::string& layer);
  void run(DenseCall call, const DenseShape& s, DevPtr a, DevPtr b, DevPtr d, DevPtr bias, DeviceWorkspace ws,
           const std::string& layer);
  void check(cublaslt::cublasStatus_t status, const char* what, DenseCall call, const DenseShape& s,
             const std::string& layer) const;

  const cublaslt::CublasLtApi& api_;
  cuda::CUstream stream_;
  LibraryCallOptions options_;
  uint64_t max_workspace_;
  cublaslt::cublasLtHandle_t handle_ = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace pipec::gpu
