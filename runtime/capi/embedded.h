// The symbols `pipec build` generates into every built library, read by pipe_open.
//
// The generated C file defines them (see compiler/driver/build_library.cpp); the runtime declares them
// weak so that programs linking the C ABI without a generated file (the unit tests) still link, and
// pipe_open then reports that no plan is embedded. Kernel symbols are listed in a table instead of
// being looked up with dlsym, so they can stay hidden like everything else in the library.
#pragma once

#include <cstdint>

#include "runtime/plan/native_kernel.h"

extern "C" {

struct pipec_embedded_kernel {
  const char* symbol;  // NULL ends the table
  pipec::PipecKernelFn fn;
};

extern const unsigned char pipec_embedded_plan[] __attribute__((weak));
extern const uint64_t pipec_embedded_plan_size __attribute__((weak));
extern const char pipec_embedded_spec_dir[] __attribute__((weak));
extern const struct pipec_embedded_kernel pipec_embedded_kernels[] __attribute__((weak));
}
