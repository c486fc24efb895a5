// TensorFlow's output sizes and paddings, from worked examples (the numbers tf.nn.conv2d /
// tf.nn.conv2d_transpose give; tests/unit_train_kernels/keras_fixtures_test.cpp checks whole outputs
// against Keras).
#include "runtime/train/dnnl/window_geometry.h"

#include <gtest/gtest.h>

namespace pipec::train {
namespace {

void expect_dim(WindowDim got, int64_t out, int64_t before, int64_t after) {
  EXPECT_EQ(got.out, out);
  EXPECT_EQ(got.pad_before, before);
  EXPECT_EQ(got.pad_after, after);
}

TEST(WindowGeometry, SamePutsTheOddPaddingPixelAfter) {
  expect_dim(window_dim(8, 3, 1, 1, Padding::Same), 8, 1, 1);  // the chess net's convolutions
  expect_dim(window_dim(5, 2, 1, 1, Padding::Same), 5, 0, 1);  // even kernel
  expect_dim(window_dim(7, 3, 2, 1, Padding::Same), 4, 1, 1);
  expect_dim(window_dim(6, 3, 2, 1, Padding::Same), 3, 0, 1);
  expect_dim(window_dim(6, 4, 2, 1, Padding::Same), 3, 1, 1);
  expect_dim(window_dim(9, 3, 1, 2, Padding::Same), 9, 2, 2);  // dilation 2: a 5-wide window
  expect_dim(window_dim(5, 1, 3, 1, Padding::Same), 2, 0, 0);  // stride past the window: no padding
  expect_dim(window_dim(3, 5, 1, 1, Padding::Same), 3, 2, 2);  // kernel larger than the image
}

TEST(WindowGeometry, ValidKeepsWholeWindowsOnly) {
  expect_dim(window_dim(7, 3, 2, 1, Padding::Valid), 3, 0, 0);
  expect_dim(window_dim(8, 3, 2, 1, Padding::Valid), 3, 0, 0);
  expect_dim(window_dim(7, 2, 1, 2, Padding::Valid), 5, 0, 0);  // dilated window 3
  expect_dim(window_dim(2, 3, 1, 1, Padding::Valid), 0, 0, 0);  // does not fit
}

TEST(WindowGeometry, TransposeFollowsKerasOutputLengths) {
  expect_dim(transpose_dim(4, 3, 2, Padding::Same), 8, 0, 1);   // (4-1)*2 + 3 - 8 = 1 cropped, after
  expect_dim(transpose_dim(3, 3, 2, Padding::Valid), 7, 0, 0);  // (3-1)*2 + 3
  expect_dim(transpose_dim(3, 4, 2, Padding::Same), 6, 1, 1);
  expect_dim(transpose_dim(3, 1, 2, Padding::Valid), 6, 0, -1);  // kernel < stride: the last row gets no window
  expect_dim(transpose_dim(3, 2, 3, Padding::Same), 9, 0, -1);
  expect_dim(transpose_dim(5, 2, 1, Padding::Same), 5, 0, 1);
}

}  // namespace
}  // namespace pipec::train
