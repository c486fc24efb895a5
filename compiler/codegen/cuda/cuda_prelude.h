// The fixed text at the top of every generated CUDA kernel: scalar types, the operations whose
// semantics need more than one C operator (wrapping integer arithmetic, NaN-propagating min/max,
// saturating float->int casts) and Philox4x32-10 with pipec's stream mapping (runtime/core/philox.h).
//
// The same text is valid host C++: without __CUDACC_RTC__/__CUDACC__ the kernel is a plain function
// whose grid-stride loop covers every index in one call. Tests compile generated kernels with the host
// compiler and compare them with the interpreter, which checks the generator without a GPU.
#pragma once

#include <string_view>

namespace pipec::cuda_codegen {

/// The prelude text (ends with a newline).
std::string_view cuda_prelude();

}  // namespace pipec::cuda_codegen
