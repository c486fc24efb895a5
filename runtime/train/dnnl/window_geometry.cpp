#include "runtime/train/dnnl/window_geometry.h"

#include <algorithm>

namespace pipec::train {

WindowDim window_dim(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, Padding padding) {
  WindowDim d;
  int64_t window = (kernel - 1) * dilation + 1;
  if (padding == Padding::Same) {
    d.out = (in + stride - 1) / stride;
    int64_t total = std::max<int64_t>((d.out - 1) * stride + window - in, 0);
    d.pad_before = total / 2;
    d.pad_after = total - d.pad_before;
  } else {
    d.out = in < window ? 0 : (in - window) / stride + 1;
  }
  return d;
}

WindowDim transpose_dim(int64_t in, int64_t kernel, int64_t stride, Padding padding) {
  WindowDim d;
  if (padding == Padding::Same) {
    d.out = in * stride;
    d.pad_before = std::max<int64_t>((in - 1) * stride + kernel - d.out, 0) / 2;
  } else {
    d.out = in * stride + std::max<int64_t>(kernel - stride, 0);
  }
  d.pad_after = (in - 1) * stride + kernel - d.out - d.pad_before;
  return d;
}

const char* padding_name(Padding p) { return p == Padding::Same ? "same" : "valid"; }

}  // namespace pipec::train
