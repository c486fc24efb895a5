#include "runtime/train/gpu/host_step_kernels.h"

// The kernels' own dependencies first: they include nothing (NVRTC compiles them without headers).
#include <math.h>
#include <string.h>

#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

// The kernels as host C++ (their PIPEC_KERNEL is `static` here), in the order step_kernel_source()
// concatenates them. This file is compiled with -ffp-contract=off, as NVRTC compiles them with
// --fmad=false: every multiply and add rounds on its own, as in the CPU's loops.
namespace pipec::gpu::host_kernels {
#include "runtime/train/gpu/kernels/step_prelude.cuh"
// clang-format off
#include "runtime/train/gpu/kernels/conv_dense.cuh"
#include "runtime/train/gpu/kernels/pool_upsample.cuh"
#include "runtime/train/gpu/kernels/activation_softmax.cuh"
#include "runtime/train/gpu/kernels/normalization.cuh"
#include "runtime/train/gpu/kernels/dropout.cuh"
#include "runtime/train/gpu/kernels/loss.cuh"
#include "runtime/train/gpu/kernels/optimizer.cuh"
#include "runtime/train/gpu/kernels/round_layout.cuh"
#include "runtime/train/gpu/kernels/embedding.cuh"
// clang-format on
}  // namespace pipec::gpu::host_kernels

namespace pipec::gpu {

namespace {

// Calls `kernel` with each argument read from where params[i] points (cuLaunchKernel's convention).
template <class... Args, size_t... I>
void call_with(void (*kernel)(Args...), void** params, std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_cv_t<Args>*>(params[I])...);
}

template <class... Args>
constexpr size_t arity(void (*)(Args...)) {
  return sizeof...(Args);
}

template <auto Kernel>
void trampoline(void** params) {
  call_with(Kernel, params, std::make_index_sequence<arity(Kernel)>{});
}

// Each row's parameter types are the kernel's own (a row that disagrees does not compile, and a kernel
// without a row is an unused function, which -Werror refuses).
#define STEP_KERNEL(name, types)                                              \
  static_assert(std::is_same_v<decltype(&host_kernels::name), void(*) types>, \
                "runtime/train/gpu/kernels/step_kernels.def: the types of " #name " are not the kernel's");
#include "runtime/train/gpu/kernels/step_kernels.def"
#undef STEP_KERNEL

const std::unordered_map<std::string_view, HostStepKernel>& kernel_table() {
  static const std::unordered_map<std::string_view, HostStepKernel> table = {
#define STEP_KERNEL(name, types) {#name, &trampoline<&host_kernels::name>},
#include "runtime/train/gpu/kernels/step_kernels.def"
#undef STEP_KERNEL
  };
  return table;
}

}  // namespace

HostStepKernel host_step_kernel(std::string_view name) {
  auto it = kernel_table().find(name);
  if (it == kernel_table().end())
    throw std::invalid_argument(fmt::format("no step kernel `{}` (runtime/train/gpu/kernels/step_kernels.def)", name));
  return it->second;
}

const std::vector<std::string_view>& step_kernel_names() {
  static const std::vector<std::string_view> names = {
#define STEP_KERNEL(name, types) #name,
#include "runtime/train/gpu/kernels/step_kernels.def"
#undef STEP_KERNEL
  };
  return names;
}

void HostKernelLauncher::launch(const char* name, int64_t items, void** params) {
  HostStepKernel kernel = host_step_kernel(name);
  // Every kernel's first parameter is its item count, which sizes the grid on a GPU: they must agree.
  const long long first = *static_cast<const long long*>(params[0]);
  if (first != items)
    throw std::logic_error(
        fmt::format("step kernel {}: launched over {} items, its first argument says {}", name, items, first));
  ++launches_[name];
  kernel(params);
}

}  // namespace pipec::gpu
