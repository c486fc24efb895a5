// The chess net's compute limit: forward + backward of its layers alone (examples/chess/chess.pipe's
// model: conv2d(64, 3, same) -> relu -> conv2d(64, 3, same) -> relu -> flatten + concat flags[10] ->
// dense(256) -> relu -> dense(1) -> tanh) on the oneDNN kernels of runtime/train/dnnl, batch 512, f32.
// No input pipeline, loss or optimizer: what a trainer built on these kernels can at best reach.
//
//   build/bench/train_chess_step [--threads N] [--layout nhwc|any] [--conv auto|direct] [--steps S] [--warmup W]
//                                [--breakdown]
//
// Prints the median and the fastest step in ms, the median CPU time per step, GFLOP/s at the median, and with
// --breakdown the median time of each call in one step. The last line is machine-readable for bench/train/run.sh:
//   RESULT <median ms> <fastest ms> <median CPU ms> <GFLOP per step>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "runtime/train/dnnl/conv2d.h"
#include "runtime/train/dnnl/dense.h"
#include "runtime/train/dnnl/eltwise.h"

using namespace pipec::train;

namespace {

constexpr int64_t kBatch = 512, kSide = 8, kPlanes = 24, kFilters = 64, kFlags = 10, kHidden = 256;
constexpr int64_t kFlat = kSide * kSide * kFilters;  // 4096
constexpr int64_t kDenseIn = kFlat + kFlags;         // 4106

std::vector<float> random_vector(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist{-scale, scale};
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// User + system CPU time of the process, in ms: on a shared machine the cost of a step that wall clock
// hides (time other processes had the cores). With several threads it includes OpenMP's spin-waits.
double cpu_ms() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Multiply-adds of each product the step computes (forward, backward-data except the first layer's,
// backward-weights), times 2 for FLOP. Bias, activations and copies are not counted (memory-bound).
double step_gflop() {
  double conv1 = double(kBatch) * kSide * kSide * kFilters * 3 * 3 * kPlanes;
  double conv2 = double(kBatch) * kSide * kSide * kFilters * 3 * 3 * kFilters;
  double dense1 = double(kBatch) * kDenseIn * kHidden;
  double dense2 = double(kBatch) * kHidden * 1;
  double forward = conv1 + conv2 + dense1 + dense2;
  double backward_data = conv2 + dense1 + dense2;  // the input needs no gradient
  double backward_weights = forward;
  return 2 * (forward + backward_data + backward_weights) / 1e9;
}

struct Timer {
  std::map<std::string, std::vector<double>> samples;
  std::vector<std::string> order;
  bool on = false;
  void time(const std::string& name, const std::function<void()>& f) {
    if (!on) return f();
    auto t0 = std::chrono::steady_clock::now();
    f();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!samples.count(name)) order.push_back(name);
    samples[name].push_back(ms);
  }
};

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, steps = 20, warmup = 3;
  bool breakdown = false;
  ActivationLayout layout = ActivationLayout::Nhwc;
  ConvAlgorithm conv = ConvAlgorithm::Auto;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--threads") threads = std::atoi(next().c_str());
    else if (a == "--steps") steps = std::atoi(next().c_str());
    else if (a == "--warmup") warmup = std::atoi(next().c_str());
    else if (a == "--breakdown") breakdown = true;
    else if (a == "--conv") conv = next() == "direct" ? ConvAlgorithm::Direct : ConvAlgorithm::Auto;
    else if (a == "--layout") layout = next() == "any" ? ActivationLayout::Any : ActivationLayout::Nhwc;
    else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--layout nhwc|any] [--conv auto|direct] [--steps S] [--warmup W] "
                   "[--breakdown]\n",
                   argv[0]);
      return 2;
    }
  }

  CpuKernels kernels({threads, layout, conv});
  Conv2dDesc c1;
  c1.batch = kBatch, c1.height = c1.width = kSide, c1.in_channels = kPlanes, c1.filters = kFilters;
  c1.kernel_h = c1.kernel_w = 3, c1.padding = Padding::Same, c1.activation = Activation::relu();
  Conv2dDesc c2 = c1;
  c2.in_channels = kFilters;
  DenseDesc d1{kBatch, kDenseIn, kHidden, true, Activation::relu()};
  DenseDesc d2{kBatch, kHidden, 1, true, Activation::tanh()};
  Conv2dOp conv1(kernels, c1), conv2(kernels, c2);
  DenseOp dense1(kernels, d1), dense2(kernels, d2);
  EltwiseOp relu_conv(kernels, {Activation::relu(), kBatch * kFlat});
  EltwiseOp relu_dense(kernels, {Activation::relu(), kBatch * kHidden});
  EltwiseOp tanh_out(kernels, {Activation::tanh(), kBatch});

  // Parameters (glorot-like scales), inputs, activations and gradients.
  auto w1 = random_vector(9 * kPlanes * kFilters, 1, 0.1f), b1 = random_vector(kFilters, 2, 0.1f);
  auto w2 = random_vector(9 * kFilters * kFilters, 3, 0.06f), b2 = random_vector(kFilters, 4, 0.1f);
  auto w3 = random_vector(kDenseIn * kHidden, 5, 0.04f), b3 = random_vector(kHidden, 6, 0.1f);
  auto w4 = random_vector(kHidden, 7, 0.15f), b4 = random_vector(1, 8, 0.1f);
  auto board = random_vector(kBatch * kSide * kSide * kPlanes, 9, 1.0f),
       flags = random_vector(kBatch * kFlags, 10, 1.0f);
  auto dy = random_vector(kBatch, 11, 1.0f);  // the loss gradient at the output
  std::vector<float> a1(kBatch * kFlat), a2(kBatch * kFlat), h(kBatch * kDenseIn), a3(kBatch * kHidden), y(kBatch);
  std::vector<float> dz4(kBatch), da3(kBatch * kHidden), dz3(kBatch * kHidden), dh(kBatch * kDenseIn);
  std::vector<float> da2(kBatch * kFlat), dz2(kBatch * kFlat), da1(kBatch * kFlat), dz1(kBatch * kFlat);
  std::vector<float> dw1(w1.size()), db1(b1.size()), dw2(w2.size()), db2(b2.size());
  std::vector<float> dw3(w3.size()), db3(b3.size()), dw4(w4.size()), db4(b4.size());

  Timer timer;
  auto step = [&] {
    timer.time("conv1 forward (+ bias, relu)", [&] { conv1.forward(board.data(), w1.data(), b1.data(), a1.data()); });
    timer.time("conv2 forward (+ bias, relu)", [&] { conv2.forward(a1.data(), w2.data(), b2.data(), a2.data()); });
    timer.time("flatten + concat flags", [&] {
      for (int64_t r = 0; r < kBatch; ++r) {
        std::memcpy(&h[r * kDenseIn], &a2[r * kFlat], kFlat * sizeof(float));
        std::memcpy(&h[r * kDenseIn + kFlat], &flags[r * kFlags], kFlags * sizeof(float));
      }
    });
    timer.time("dense1 forward (+ bias, relu)", [&] { dense1.forward(h.data(), w3.data(), b3.data(), a3.data()); });
    timer.time("dense2 forward (+ bias, tanh)", [&] { dense2.forward(a3.data(), w4.data(), b4.data(), y.data()); });
    timer.time("tanh backward (from y)", [&] { tanh_out.backward_from_output(y.data(), dy.data(), dz4.data()); });
    timer.time("dense2 backward",
               [&] { dense2.backward(a3.data(), w4.data(), dz4.data(), da3.data(), dw4.data(), db4.data()); });
    timer.time("relu backward (dense1)", [&] { relu_dense.backward_from_output(a3.data(), da3.data(), dz3.data()); });
    timer.time("dense1 backward",
               [&] { dense1.backward(h.data(), w3.data(), dz3.data(), dh.data(), dw3.data(), db3.data()); });
    timer.time("split the flags off", [&] {
      for (int64_t r = 0; r < kBatch; ++r) std::memcpy(&da2[r * kFlat], &dh[r * kDenseIn], kFlat * sizeof(float));
    });
    timer.time("relu backward (conv2)", [&] { relu_conv.backward_from_output(a2.data(), da2.data(), dz2.data()); });
    timer.time("conv2 backward",
               [&] { conv2.backward(a1.data(), w2.data(), dz2.data(), da1.data(), dw2.data(), db2.data()); });
    timer.time("relu backward (conv1)", [&] { relu_conv.backward_from_output(a1.data(), da1.data(), dz1.data()); });
    timer.time("conv1 backward (no input gradient)",
               [&] { conv1.backward(board.data(), w1.data(), dz1.data(), nullptr, dw1.data(), db1.data()); });
    kernels.weights_changed();  // as after an optimizer step: every step reorders the weights again
  };

  for (int i = 0; i < warmup; ++i) step();
  std::vector<double> ms, cpu;
  timer.on = breakdown;
  for (int i = 0; i < steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    double c0 = cpu_ms();
    step();
    cpu.push_back(cpu_ms() - c0);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const double gflop = step_gflop(), med = median(ms), best = *std::min_element(ms.begin(), ms.end());
  std::printf(
      "oneDNN %s (%s), %d thread%s, layout %s, conv %s: %.1f ms per step (median of %d, fastest %.1f, CPU %.1f ms), "
      "%.1f GFLOP/s, %.0f examples/s\n",
      CpuKernels::version().c_str(), CpuKernels::isa().c_str(), threads, threads == 1 ? "" : "s", layout_name(layout),
      conv_algorithm_name(conv), med, steps, best, median(cpu), gflop / (med / 1e3), kBatch / (med / 1e3));
  if (breakdown) {
    std::printf("  %-36s %9s\n", "call", "median ms");
    for (const std::string& name : timer.order)
      std::printf("  %-36s %9.2f\n", name.c_str(), median(timer.samples[name]));
    std::printf("  implementations: conv2 %s / %s / %s, dense1 %s / %s / %s\n", conv2.implementation_forward().c_str(),
                conv2.implementation_backward_data().c_str(), conv2.implementation_backward_weights().c_str(),
                dense1.implementation_forward().c_str(), dense1.implementation_backward_data().c_str(),
                dense1.implementation_backward_weights().c_str());
  }
  std::printf("RESULT %.3f %.3f %.3f %.4f\n", med, best, median(cpu), gflop);
  return 0;
}
