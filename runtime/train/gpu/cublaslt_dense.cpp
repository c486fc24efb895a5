#include "runtime/train/gpu/cublaslt_dense.h"

#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "runtime/gpu/gpu_error.h"

namespace pipec::gpu {

using namespace cublaslt;

const char* dense_call_name(DenseCall c) {
  switch (c) {
    case DenseCall::Forward: return "forward";
    case DenseCall::ForwardRelu: return "forward+relu";
    case DenseCall::BackwardInput: return "backward_input";
    case DenseCall::BackwardKernel: return "backward_kernel";
  }
  return "?";
}

namespace {

// One matmul as cuBLASLt sees it: each operand's stored (column-major) matrix and whether it is
// transposed, D = op(A) · op(B) (+ epilogue).
struct Gemm {
  int32_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  uint64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0, d_rows = 0, d_cols = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
};

Gemm gemm_of(DenseCall call, const DenseShape& s) {
  const uint64_t rows = static_cast<uint64_t>(s.rows), in = static_cast<uint64_t>(s.in),
                 out = static_cast<uint64_t>(s.out);
  Gemm g;
  switch (call) {
    case DenseCall::Forward:
    case DenseCall::ForwardRelu:
      // yᵀ[out, rows] = kernelᵀ[out, in] · xᵀ[in, rows]: the row-major kernel [in, out] is the
      // column-major [out, in] with ld = out, x [rows, in] is [in, rows] with ld = in.
      g.a_rows = out, g.a_cols = in, g.lda = s.out;
      g.b_rows = in, g.b_cols = rows, g.ldb = s.in;
      g.d_rows = out, g.d_cols = rows, g.ldd = s.out;
      g.epilogue = call == DenseCall::ForwardRelu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
      break;
    case DenseCall::BackwardInput:
      // dxᵀ[in, rows] = (kernel stored [out, in])ᵀ · dyᵀ[out, rows].
      g.trans_a = CUBLAS_OP_T;
      g.a_rows = out, g.a_cols = in, g.lda = s.out;
      g.b_rows = out, g.b_cols = rows, g.ldb = s.out;
      g.d_rows = in, g.d_cols = rows, g.ldd = s.in;
      break;
    case DenseCall::BackwardKernel:
      // dkernelᵀ[out, in] = dyᵀ[out, rows] · (x stored [in, rows])ᵀ.
      g.trans_b = CUBLAS_OP_T;
      g.a_rows = out, g.a_cols = rows, g.lda = s.out;
      g.b_rows = in, g.b_cols = rows, g.ldb = s.in;
      g.d_rows = out, g.d_cols = in, g.ldd = s.out;
      break;
  }
  return g;
}

cudaDataType_t cuda_type(GpuDType t) {
  switch (t) {
    case GpuDType::F32: return CUDA_R_32F;
    case GpuDType::F16: return CUDA_R_16F;
    case GpuDType::BF16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

}  // namespace

struct CublasLtDense::Plan {
  const CublasLtApi* api = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;

  ~Plan() {
    if (d) api->cublasLtMatrixLayoutDestroy(d);
    if (b) api->cublasLtMatrixLayoutDestroy(b);
    if (a) api->cublasLtMatrixLayoutDestroy(a);
    if (desc) api->cublasLtMatmulDescDestroy(desc);
  }
};

CublasLtDense::CublasLtDense(const CublasLtApi& api, cuda::CUstream stream, LibraryCallOptions options,
                             uint64_t max_workspace_bytes)
    : api_(api), stream_(stream), options_(options), max_workspace_(max_workspace_bytes) {
  cublasStatus_t s = api_.cublasLtCreate(&handle_);
  if (s != CUBLAS_STATUS_SUCCESS) {
    const char* name = api_.cublasLtGetStatusName(s);
    throw GpuError(fmt::format("cuBLASLt: cublasLtCreate failed with {}", name ? name : std::to_string(s)));
  }
}

CublasLtDense::~CublasLtDense() {
  plans_.clear();
  if (handle_) api_.cublasLtDestroy(handle_);
}

void CublasLtDense::check(cublasStatus_t status, const char* what, DenseCall call, const DenseShape& s,
                          const std::string& layer) const {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const char* name = api_.cublasLtGetStatusName(status);
  const char* text = api_.cublasLtGetStatusString(status);
  throw GpuError(fmt::format("cuBLASLt: {} failed with {} ({}) in dense {} of layer `{}` (rows {}, in {}, out {}, {})",
                             what, name ? name : std::to_string(status), text ? text : "no description",
                             dense_call_name(call), layer, s.rows, s.in, s.out, gpu_dtype_name(options_.dtype)));
}

CublasLtDense::Plan& CublasLtDense::plan(DenseCall call, const DenseShape& s, const std::string& layer) {
  if (s.rows <= 0 || s.in <= 0 || s.out <= 0)
    throw GpuError(fmt::format("cuBLASLt: dense {} of layer `{}` with an empty shape (rows {}, in {}, out {})",
                               dense_call_name(call), layer, s.rows, s.in, s.out));
  Key key{static_cast<int>(call), s.rows, s.in, s.out};
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;

  auto p = std::make_unique<Plan>();
  p->api = &api_;
  const Gemm g = gemm_of(call, s);
  const cudaDataType_t type = cuda_type(options_.dtype);
  const cublasComputeType_t compute =
      (options_.allow_tf32 || options_.tf32_exact_operands) && options_.dtype == GpuDType::F32
          ? CUBLAS_COMPUTE_32F_FAST_TF32
          : CUBLAS_COMPUTE_32F;
  check(api_.cublasLtMatmulDescCreate(&p->desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate", call, s, layer);
  check(api_.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &g.trans_a, sizeof g.trans_a),
        "cublasLtMatmulDescSetAttribute(TRANSA)", call, s, layer);
  check(api_.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &g.trans_b, sizeof g.trans_b),
        "cublasLtMatmulDescSetAttribute(TRANSB)", call, s, layer);
  check(api_.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &g.epilogue, sizeof g.epilogue),
        "cublasLtMatmulDescSetAttribute(EPILOGUE)", call, s, layer);
  if (g.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    // The heuristic reads the bias pointer's alignment without dereferencing it: a stand-in aligned
    // exactly as the real ones will be (each call sets the real one).
    const void* stand_in = reinterpret_cast<const void*>(static_cast<uintptr_t>(options_.alignment));
    check(api_.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &stand_in, sizeof stand_in),
          "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", call, s, layer);
  }
  check(api_.cublasLtMatrixLayoutCreate(&p->a, type, g.a_rows, g.a_cols, g.lda), "cublasLtMatrixLayoutCreate(A)", call,
        s, layer);
  check(api_.cublasLtMatrixLayoutCreate(&p->b, type, g.b_rows, g.b_cols, g.ldb), "cublasLtMatrixLayoutCreate(B)", call,
        s, layer);
  check(api_.cublasLtMatrixLayoutCreate(&p->d, type, g.d_rows, g.d_cols, g.ldd), "cublasLtMatrixLayoutCreate(D)", call,
        s, layer);

  cublasLtMatmulPreference_t pref = nullptr;
  check(api_.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", call, s, layer);
  struct PrefGuard {
    const CublasLtApi& api;
    cublasLtMatmulPreference_t pref;
    ~PrefGuard() { api.cublasLtMatmulPreferenceDestroy(pref); }
  } guard{api_, pref};
  const uint64_t max_ws = max_workspace_;
  // Split-K partial sums reduced by a separate kernel in a fixed order are deterministic; in place
  // (atomic counters deciding the order) they are not.
  const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
  const uint32_t alignment = options_.alignment;
  check(
      api_.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof max_ws),
      "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", call, s, layer);
  check(api_.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes,
                                                  sizeof schemes),
        "cublasLtMatmulPreferenceSetAttribute(REDUCTION_SCHEME_MASK)", call, s, layer);
  for (auto [attr, name] : {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, "MIN_ALIGNMENT_A_BYTES"},
                            std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, "MIN_ALIGNMENT_B_BYTES"},
                            std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, "MIN_ALIGNMENT_C_BYTES"},
                            std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, "MIN_ALIGNMENT_D_BYTES"}})
    check(api_.cublasLtMatmulPreferenceSetAttribute(pref, attr, &alignment, sizeof alignment),
          fmt::format("cublasLtMatmulPreferenceSetAttribute({})", name).c_str(), call, s, layer);

  constexpr int kRequested = 8;
  cublasLtMatmulHeuristicResult_t results[kRequested] = {};
  int returned = 0;
  check(api_.cublasLtMatmulAlgoGetHeuristic(handle_, p->desc, p->a, p->b, p->d, p->d, pref, kRequested, results,
                                            &returned),
        "cublasLtMatmulAlgoGetHeuristic", call, s, layer);
  int failed = 0, in_place = 0, too_big = 0;
  bool chosen = false;
  for (int i = 0; i < returned && i < kRequested && !chosen; ++i) {
    const cublasLtMatmulHeuristicResult_t& r = results[i];
    if (r.state != CUBLAS_STATUS_SUCCESS) {
      ++failed;
      continue;
    }
    if (r.workspaceSize > max_ws) {
      ++too_big;
      continue;
    }
    uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_NONE;
    size_t written = 0;
    check(api_.cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                                    sizeof scheme, &written),
          "cublasLtMatmulAlgoConfigGetAttribute(REDUCTION_SCHEME)", call, s, layer);
    if (scheme == CUBLASLT_REDUCTION_SCHEME_INPLACE) {
      ++in_place;
      continue;
    }
    p->algo = r.algo;
    p->workspace = r.workspaceSize;
    chosen = true;
  }
  if (!chosen)
    throw GpuError(fmt::format(
        "cuBLASLt: no deterministic algorithm for dense {} of layer `{}` (rows {}, in {}, out {}, {}): the heuristic "
        "offered {} ({} failed, {} reduce split-K in place, {} need more than {} bytes of workspace)",
        dense_call_name(call), layer, s.rows, s.in, s.out, gpu_dtype_name(options_.dtype), returned, failed, in_place,
        too_big, max_ws));
  return *plans_.emplace(key, std::move(p)).first->second;
}

size_t CublasLtDense::workspace_bytes(DenseCall call, const DenseShape& s, const std::string& layer) {
  return plan(call, s, layer).workspace;
}

void CublasLtDense::run(DenseCall call, const DenseShape& s, DevPtr a, DevPtr b, DevPtr d, DevPtr bias,
                        DeviceWorkspace ws, const std::string& layer) {
  Plan& p = plan(call, s, layer);
  const bool has_bias = call == DenseCall::Forward || call == DenseCall::ForwardRelu;
  for (auto [ptr, what] : {std::pair{a, "A"}, std::pair{b, "B"}, std::pair{d, "D"}, std::pair{bias, "bias"}}) {
    if (!has_bias && std::string_view(what) == "bias") continue;
    if (ptr == 0 || ptr % options_.alignment != 0)
      throw GpuError(
          fmt::format("cuBLASLt: dense {} of layer `{}`: operand {} at {:#x} is not a non-null multiple "
                      "of {} bytes",
                      dense_call_name(call), layer, what, ptr, options_.alignment));
  }
  if (ws.bytes < p.workspace || (p.workspace > 0 && ws.ptr == 0))
    throw GpuError(fmt::format("cuBLASLt: dense {} of layer `{}` needs {} bytes of workspace, was given {}",
                               dense_call_name(call), layer, p.workspace, ws.bytes));
  if (has_bias) {
    const void* bias_ptr = reinterpret_cast<const void*>(static_cast<uintptr_t>(bias));
    check(api_.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof bias_ptr),
          "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", call, s, layer);
  }
  const float alpha = 1.0f, beta = 0.0f;
  auto ptr = [](DevPtr v) { return reinterpret_cast<void*>(static_cast<uintptr_t>(v)); };
  check(api_.cublasLtMatmul(handle_, p.desc, &alpha, ptr(a), p.a, ptr(b), p.b, &beta, ptr(d), p.d, ptr(d), p.d, &p.algo,
                            p.workspace > 0 ? ptr(ws.ptr) : nullptr, p.workspace > 0 ? ws.bytes : 0, stream_),
        "cublasLtMatmul", call, s, layer);
}

void CublasLtDense::forward(const DenseShape& s, bool relu, DevPtr x, DevPtr kernel, DevPtr bias, DevPtr y,
                            DeviceWorkspace workspace, const std::string& layer) {
  run(relu ? DenseCall::ForwardRelu : DenseCall::Forward, s, kernel, x, y, bias, workspace, layer);
}

void CublasLtDense::backward_input(const DenseShape& s, DevPtr dy, DevPtr kernel, DevPtr dx, DeviceWorkspace workspace,
                                   const std::string& layer) {
  run(DenseCall::BackwardInput, s, kernel, dy, dx, 0, workspace, layer);
}

void CublasLtDense::backward_kernel(const DenseShape& s, DevPtr x, DevPtr dy, DevPtr dkernel, DeviceWorkspace workspace,
                                    const std::string& layer) {
  run(DenseCall::BackwardKernel, s, dy, x, dkernel, 0, workspace, layer);
}

}  // namespace pipec::gpu
