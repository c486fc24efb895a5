// Element-wise activations as plain loops: what the step's generated code does (compiler/codegen/llvm
// compiles maps at O3 for the host CPU and calls libm's tanhf/expf/erff). bench/train/eltwise_vs_loops
// measures them against oneDNN's eltwise primitives.
#pragma once

#include <cstdint>

namespace pipec::bench {

enum class Act { Relu, LeakyRelu, Tanh, Sigmoid, Gelu };

void loop_forward(Act a, const float* x, float* y, int64_t n);
/// dx = f'(.) * dy, from the output y for relu/leaky_relu/tanh/sigmoid and from the input for gelu.
void loop_backward(Act a, const float* x_or_y, const float* dy, float* dx, int64_t n);

}  // namespace pipec::bench
