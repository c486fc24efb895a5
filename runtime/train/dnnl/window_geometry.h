// Output sizes and paddings of windowed ops (conv2d, pools, conv2d_transpose) along one spatial
// dimension, as TensorFlow computes them. Pure arithmetic, no oneDNN: the kernels and their tests share
// it, and compiler/sema's shape rules give the same output sizes.
#pragma once

#include <cstdint>

namespace pipec::train {

enum class Padding { Valid, Same };

/// One spatial dimension of a window op: the output size and the padding before and after the input.
/// For conv2d_transpose, `pad_after` may be negative: the last -pad_after output rows get no input
/// (TensorFlow's output is larger than the windows cover when kernel < stride).
struct WindowDim {
  int64_t out = 0;
  int64_t pad_before = 0;
  int64_t pad_after = 0;
};

/// conv2d and pools: `same` gives ceil(in / stride) and pads max((out - 1) * stride + window - in, 0),
/// the smaller half before (TensorFlow puts the odd pixel after); `valid` gives
/// ceil((in - window + 1) / stride) with no padding. `window` is the dilated kernel,
/// (kernel - 1) * dilation + 1. out is 0 when a valid window does not fit.
WindowDim window_dim(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, Padding padding);

/// conv2d_transpose (Keras' deconv_output_length without output_padding): `same` gives in * stride,
/// `valid` in * stride + max(kernel - stride, 0). The padding is that of the convolution whose gradient
/// it is (from `out` back to `in`), so pad_after = (in - 1) * stride + kernel - out - pad_before.
WindowDim transpose_dim(int64_t in, int64_t kernel, int64_t stride, Padding padding);

const char* padding_name(Padding p);

}  // namespace pipec::train
