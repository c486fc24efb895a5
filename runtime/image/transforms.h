// The pixel work of the image ops on one image [h, w, c] or a batch [n, h, w, c], as plain functions
// on tensors (the kernels in runtime/ops/image_ops.cpp wrap them). Semantics are TensorFlow's tf.image
// ops wherever TF has the op; tests/conformance/fixtures/images pins them.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/image/decode_options.h"

namespace pipec {

/// The window `win` of every image (any dtype).
Tensor crop_image(const Tensor& images, const CropWindow& win);

/// tf.image.resize_with_crop_or_pad: centre-crop, then zero-pad centred (extra row/column at the end).
Tensor crop_or_pad_image(const Tensor& images, int64_t th, int64_t tw);

/// Mirrors image i of the batch (or the single image when flip.size() == 1) where flip[i] is set.
/// horizontal: left-right; otherwise up-down.
Tensor flip_image(const Tensor& images, bool horizontal, const std::vector<bool>& flip);

/// tf.image.resize (v2, antialias off) with half-pixel centres. Bilinear: in = (out + 0.5) * in/out - 0.5,
/// the four neighbours clamped to the image, interpolated in f32 (TF's ResizeBilinear); result f32.
/// Nearest: in = min(floor((out + 0.5) * in/out), in - 1); keeps the dtype.
Tensor resize_image(const Tensor& images, int64_t th, int64_t tw, bool nearest);

/// tf.image.convert_image_dtype: int -> float x * (1 / max); float -> int x * (max + 0.5) truncated,
/// saturated to the range (TF leaves out-of-range values undefined unless saturate = True); widening
/// int -> int multiplies by (max_out + 1) / (max_in + 1), narrowing divides by the inverse (floor);
/// float -> float casts.
Tensor convert_image_dtype(const Tensor& images, DType to);

/// (x - mean) / std in f32; mean and std hold one value or one per channel.
Tensor normalize_image(const Tensor& images, const std::vector<float>& mean, const std::vector<float>& std);

/// tf.image.rgb_to_grayscale: [..., 3] -> [..., 1] in the same dtype. As TF: the pixels converted to
/// f32 (convert_image_dtype), 0.2989 R + 0.5870 G + 0.1140 B in f32, converted back.
Tensor rgb_to_grayscale_image(const Tensor& images);

/// one_hot_colors' colour -> classes lookup, a row of pixels at a time (the fused PNG decode writes its
/// rows with it too). A colour listed twice sets both channels, as TF's per-colour equality does.
class ColorClasses {
 public:
  explicit ColorClasses(const std::vector<std::array<uint8_t, 3>>& colors);
  int64_t classes() const { return classes_; }
  /// `n` RGB u8 pixels -> n * classes() floats, every one written (1 or 0). A long output (a whole
  /// label) goes to memory past the caches, which the writes skip when they can.
  void write(const uint8_t* rgb, int64_t n, float* out) const;

 private:
  int64_t classes_ = 0;
  std::vector<std::pair<uint32_t, int64_t>> table_;  // sorted 24-bit colour keys -> class
};

/// One f32 channel per colour: out[..., k] = 1 where the RGB pixel equals colors[k], else 0.
Tensor one_hot_colors_image(const Tensor& label, const std::vector<std::array<uint8_t, 3>>& colors);

}  // namespace pipec
