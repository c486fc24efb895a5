#include "runtime/train/dnnl/cpu_kernels.h"

#include <fmt/format.h>
#include <omp.h>

#include "runtime/train/dnnl/dnnl_common.h"

namespace pipec::train {

CpuKernels::CpuKernels(CpuKernelOptions options) : options_(options), impl_(std::make_unique<Impl>()) {}

CpuKernels::~CpuKernels() = default;

void CpuKernels::set_threads(int threads) { options_.threads = threads; }

int CpuKernels::threads() const { return options_.threads > 0 ? options_.threads : omp_get_max_threads(); }

size_t CpuKernels::cached_primitive_sets() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->cache.size();
}

KernelMemory CpuKernels::shared_memory() const {
  KernelMemory m;
  m.scratchpad = static_cast<int64_t>(impl_->scratchpad.bytes());
  m.staging = static_cast<int64_t>(impl_->staging.planned_bytes());
  return m;
}

std::string CpuKernels::isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

bool CpuKernels::native_bf16() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

bool CpuKernels::bf16_kernels_exist() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core:
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_amx: return true;
    default: return false;
  }
}

std::string CpuKernels::version() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
}

}  // namespace pipec::train
