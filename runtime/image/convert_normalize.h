// convert_image_dtype to f32, then normalize, of u8 pixels (maybe flipped first) in one pass: the fused
// op of compiler/passes/convert_normalize_fusion.h. Each value is computed with the operations of the
// two ops in their order and rounding, row by row (a mirrored row read into a small buffer first), and
// written where the caller says (the interpreter's row of the stacked result): one read of the u8
// pixels and one write of the floats, where the separate ops make three whole-image passes.
#pragma once

#include <vector>

#include "runtime/core/tensor.h"

namespace pipec {

struct ConvertNormalizeOptions {
  bool horizontal = true;                    // what a set flip[i] mirrors: left-right, otherwise up-down
  std::vector<bool> flip;                    // one per image (flip_image's choices); empty: none flips
  const std::vector<float>* mean = nullptr;  // with std: normalize after the convert (one or one per channel)
  const std::vector<float>* std = nullptr;
  Tensor into;  // when it is an f32 tensor of the images' shape, the result is written there
};

/// normalize_image(convert_image_dtype(flip_image(images, horizontal, flip), F32), mean, std), or
/// without the normalize when mean is null, for a u8 image [h, w, c] or batch [n, h, w, c]; the same
/// bits and the same ImageErrors.
Tensor convert_normalize_image(const Tensor& images, const ConvertNormalizeOptions& o);

}  // namespace pipec
