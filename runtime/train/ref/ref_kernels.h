// The reference executor's kernels: plain loops over raw NHWC / HWIO arrays with double accumulators,
// for T = float (training) and T = double (gradient checks). Correctness first: they are the oracle the
// fast executors are tested against. Every kernel writes its outputs (it never accumulates into them).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/core/parallel_for.h"
#include "runtime/model/model_graph.h"

namespace pipec::ref {

/// A 2-D window op over [batch, height, width, channels]: the input, output and window geometry.
/// Convolutions read `in` and write `out`; their backward kernels go the other way. Pools use
/// in_c == out_c.
struct Window2d {
  int64_t batch = 1;
  int64_t in_h = 0, in_w = 0, in_c = 0;
  int64_t out_h = 0, out_w = 0, out_c = 0;
  int64_t k_h = 1, k_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_left = 0;
};

/// TensorFlow's padding before the first row (or column): `same` pads (out - 1) * stride + window - in
/// in total, the odd one at the end; `valid` pads nothing.
int64_t pad_before(bool same, int64_t in, int64_t out, int64_t window, int64_t stride);

/// The geometry of a conv2d (or of its backward nodes) from its attributes: x [h, w, c] -> y [oh, ow,
/// filters], kernel HWIO, for `rows` examples.
Window2d conv_window(const Conv2dAttrs& a, const Shape& x, const Shape& y, const Shape& kernel, int64_t rows);
/// conv2d_transpose is the backward-data pass of a conv2d from its output [oh, ow, filters] to its input
/// [h, w, in]: the kernel [kh, kw, filters, in] is that conv2d's HWIO kernel, and the window goes from y
/// to x.
Window2d transpose_window(const Conv2dTransposeAttrs& a, const Shape& x, const Shape& y, const Shape& kernel,
                          int64_t rows);
/// A pool's window (x [h, w, c] -> y [oh, ow, c]); without attributes (upsampling) only the images.
Window2d pool_window(const Pool2dAttrs* a, const Shape& x, const Shape& y, int64_t rows);

// Convolution, kernel [k_h, k_w, in_c, out_c]. bias may be null.
template <class T>
void conv2d(const Window2d& g, const T* x, const T* kernel, const T* bias, T* y);
template <class T>
void conv2d_backward_input(const Window2d& g, const T* dy, const T* kernel, T* dx);
template <class T>
void conv2d_backward_kernel(const Window2d& g, const T* x, const T* dy, T* dkernel);

// Dense over `rows` rows: y[r, o] = sum_i x[r, i] kernel[i, o] + bias[o].
template <class T>
void dense(int64_t rows, int64_t in, int64_t out, const T* x, const T* kernel, const T* bias, T* y);
template <class T>
void dense_backward_input(int64_t rows, int64_t in, int64_t out, const T* dy, const T* kernel, T* dx);
template <class T>
void dense_backward_kernel(int64_t rows, int64_t in, int64_t out, const T* x, const T* dy, T* dkernel);

/// db[c] = sum over rows of dy[r, c].
template <class T>
void bias_backward(int64_t rows, int64_t channels, const T* dy, T* db);
/// Adds bias[c] to every row of y.
template <class T>
void add_bias(int64_t rows, int64_t channels, const T* bias, T* y);

// Pools over windows (padding is neither a maximum nor part of an average: TensorFlow's rules).
template <class T>
void max_pool2d(const Window2d& g, const T* x, T* y);
template <class T>
void max_pool2d_backward(const Window2d& g, const T* x, const T* dy, T* dx);
template <class T>
void avg_pool2d(const Window2d& g, const T* x, T* y);
template <class T>
void avg_pool2d_backward(const Window2d& g, const T* dy, T* dx);
// Global pools: [batch, pixels, channels] -> [batch, channels].
template <class T>
void global_avg_pool(int64_t batch, int64_t pixels, int64_t channels, const T* x, T* y);
template <class T>
void global_avg_pool_backward(int64_t batch, int64_t pixels, int64_t channels, const T* dy, T* dx);
template <class T>
void global_max_pool(int64_t batch, int64_t pixels, int64_t channels, const T* x, T* y);
template <class T>
void global_max_pool_backward(int64_t batch, int64_t pixels, int64_t channels, const T* x, const T* dy, T* dx);
/// Upsampling [batch, in_h, in_w, c] -> [batch, out_h, out_w, c], nearest or bilinear (TensorFlow's
/// resize with half-pixel centres, which Keras' UpSampling2D uses).
template <class T>
void upsample2d(const Window2d& g, bool bilinear, const T* x, T* y);
template <class T>
void upsample2d_backward(const Window2d& g, bool bilinear, const T* dy, T* dx);

// Element-wise activations over n values.
template <class T>
void leaky_relu(int64_t n, double alpha, const T* x, T* y);
template <class T>
void leaky_relu_backward(int64_t n, double alpha, const T* x, const T* dy, T* dx);
template <class T>
void gelu(int64_t n, const T* x, T* y);
template <class T>
void gelu_backward(int64_t n, const T* x, const T* dy, T* dx);
/// Softmax along an axis of `len` values with `inner` values after it, repeated `outer` times.
template <class T>
void softmax(int64_t outer, int64_t len, int64_t inner, const T* x, T* y);
template <class T>
void softmax_backward(int64_t outer, int64_t len, int64_t inner, const T* y, const T* dy, T* dx);

// Normalization over the last axis (`channels` values), `rows` rows.
// batch_norm: statistics per channel over every row; mean and variance are [channels].
template <class T>
void batch_norm(int64_t rows, int64_t channels, double epsilon, const T* x, const T* gamma, const T* beta, T* y,
                T* mean, T* variance);
// batch_norm in inference mode (Keras' training=False): normalized with the moving statistics, which
// `mean` and `variance` receive.
template <class T>
void batch_norm_inference(int64_t rows, int64_t channels, double epsilon, const T* x, const T* gamma, const T* beta,
                          const T* moving_mean, const T* moving_variance, T* y, T* mean, T* variance);
template <class T>
void batch_norm_backward(int64_t rows, int64_t channels, double epsilon, const T* x, const T* dy, const T* gamma,
                         const T* mean, const T* variance, T* dx, T* dgamma, T* dbeta);
// layer_norm: statistics per row; mean and variance are [rows].
template <class T>
void layer_norm(int64_t rows, int64_t channels, double epsilon, const T* x, const T* gamma, const T* beta, T* y,
                T* mean, T* variance);
template <class T>
void layer_norm_backward(int64_t rows, int64_t channels, double epsilon, const T* x, const T* dy, const T* gamma,
                         const T* mean, const T* variance, T* dx, T* dgamma, T* dbeta);

/// Dropout's mask for `batch` examples of `per_example` values: 1 / (1 - rate) where kept, 0 where
/// dropped. Example e of the step (the global index first_example + e, which data-parallel replicas
/// offset by their share's start) draws per_example uniform floats from RandomStream(seed,
/// kDropoutStreamBase + stream, first_example + e, step) and keeps value i when its draw is >= rate.
constexpr uint64_t kDropoutStreamBase = 0x64726f70ull << 32;  // "drop"
template <class T>
void dropout_mask(int64_t batch, int64_t per_example, double rate, uint64_t seed, uint64_t stream, uint64_t step,
                  T* mask, int64_t first_example = 0);
template <class T>
void multiply(int64_t n, const T* a, const T* b, T* out);

/// embedding over `positions` ids: y[p, :] = table[ids[p], :], a table of input_dim rows of output_dim.
/// Throws std::runtime_error naming `layer`, the example and the id when an id is not in [0, input_dim).
/// The positions are split over `parallel` (each writes its own row).
template <class T>
void embedding(int64_t positions, int64_t input_dim, int64_t output_dim, const int64_t* ids, const T* table, T* y,
               const std::string& layer, int64_t positions_per_example, const ParallelFor& parallel = nullptr);
/// Its gradient: dtable[v, :] = the sum of dy[p, :] over the positions p whose id is v (f64 sums in
/// position order, so any split of the columns over `parallel` gives the same bits), 0 for the rows no
/// id names. Ids are checked as the forward checks them.
template <class T>
void embedding_backward(int64_t positions, int64_t input_dim, int64_t output_dim, const int64_t* ids, const T* dy,
                        T* dtable, const std::string& layer, int64_t positions_per_example,
                        const ParallelFor& parallel = nullptr);

/// The losses of model_ops.def's `loss`: the mean over the batch (and over the last axis, as Keras),
/// and the gradient of that mean with respect to the prediction.
struct LossSpec {
  LossKind kind = LossKind::Mse;
  bool from_logits = false;
  bool sparse = false;  // cross_entropy with class labels
  double delta = 1.0;   // huber
  int64_t batch = 0;
  int64_t per_example = 0;  // prediction values per example
  int64_t classes = 1;      // cross_entropy: the length of the last axis
};

/// The loss; throws std::runtime_error naming the example when a class label is not a class.
template <class T>
double loss(const LossSpec& s, const T* prediction, const T* target);
template <class T>
void loss_backward(const LossSpec& s, const T* prediction, const T* target, T* dprediction);

/// Keras' epsilon, which clips probabilities in the cross-entropies computed from probabilities.
constexpr double kProbabilityEpsilon = 1e-7;

}  // namespace pipec::ref
