// The rows and columns of an image that a strided window op reaches. oneDNN 2.6's 1x1 convolutions
// with a stride copy the input to unit stride in a buffer of their own, and write past that buffer when
// the windows leave the last rows or columns of the input unreached (valgrind shows the write; on 2
// threads the weight gradient came out wrong, call by call: tests/train_difftest found it through
// conv2d_transpose, whose oneDNN form is such a convolution). So conv2d and conv2d_transpose give oneDNN
// only the part of the image the windows reach, the top-left corner, and handle the rest themselves:
// those rows and columns take no part in a convolution's result and get a zero gradient, and in a
// transposed convolution's output they hold the bias alone.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace pipec::train {

/// An NHWC image batch [batch, height, width, channels] and the corner [0, part_h) x [0, part_w) of it
/// that a window op reaches.
struct ImageCorner {
  int64_t batch = 1, height = 1, width = 1, channels = 1;
  int64_t part_h = 1, part_w = 1;

  bool whole() const { return part_h == height && part_w == width; }
  int64_t part_elements() const { return batch * part_h * part_w * channels; }

  /// The corner of `full`, densely into `part`.
  void take(const float* full, float* part) const;
  /// `part` into the corner of `full`; every other element of `full` is `rest(channel)`.
  void put(const float* part, float* full, const std::function<float(int64_t)>& rest) const;
  /// Per channel, the sum of `full`'s elements outside the corner (in f64), added to `sums`.
  void add_outside(const float* full, std::vector<double>& sums) const;
};

/// How many of `in` rows a window op reaches: the last window ends (out - 1) * stride + window -
/// pad_before into the padded input, and no further than the input.
int64_t reached_rows(int64_t in, int64_t out, int64_t stride, int64_t window, int64_t pad_before);

}  // namespace pipec::train
