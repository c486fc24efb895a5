#include "runtime/train/gpu/step_kernel_source.h"

namespace pipec::gpu {

std::string_view step_kernel_source() {
  static constexpr std::string_view kText =
#include "step_kernel_text.inc"
      ;
  return kText;
}

}  // namespace pipec::gpu
