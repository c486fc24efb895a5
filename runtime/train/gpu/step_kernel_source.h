// The text NVRTC compiles into the GPU training step's kernels: runtime/train/gpu/kernels' prelude and
// every kernel file, embedded at build time (cmake/embed_text.cmake; runtime/CMakeLists.txt lists the
// files). Each file starts with a #line directive naming it, so NVRTC's messages point at the file.
#pragma once

#include <string_view>

namespace pipec::gpu {

std::string_view step_kernel_source();

}  // namespace pipec::gpu
