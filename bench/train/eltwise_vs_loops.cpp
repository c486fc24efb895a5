// Element-wise activations: oneDNN's eltwise primitives (runtime/train/dnnl/eltwise.h) against plain
// loops (plain_loops.cpp, as the generated code would run them), forward and backward, one thread, on
// the chess net's conv activation size (512 x 8 x 8 x 64 = 2,097,152 floats) and its dense one
// (512 x 256). Times are the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID): on a shared machine
// the cost of the work, not of waiting for a core. Median of --reps calls after warm-up.
//
//   build/bench/train_eltwise_vs_loops [--reps R]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/train/plain_loops.h"
#include "runtime/train/dnnl/eltwise.h"

using namespace pipec::train;
using pipec::bench::Act;

namespace {

double thread_ms() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

template <class F>
double median_ms(int reps, F f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> v;
  for (int i = 0; i < reps; ++i) {
    double t0 = thread_ms();
    f();
    v.push_back(thread_ms() - t0);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 21;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
  struct Row {
    const char* name;
    Act act;
    Activation onednn;
  };
  const Row rows[] = {{"relu", Act::Relu, Activation::relu()},
                      {"leaky_relu(0.2)", Act::LeakyRelu, Activation::leaky_relu(0.2f)},
                      {"tanh", Act::Tanh, Activation::tanh()},
                      {"sigmoid", Act::Sigmoid, Activation::sigmoid()},
                      {"gelu (erf)", Act::Gelu, Activation::gelu()}};
  CpuKernels kernels({1});
  std::printf("ns per element, one thread (oneDNN %s, %s); backward from the output except gelu (from the input)\n",
              CpuKernels::version().c_str(), CpuKernels::isa().c_str());
  std::printf("%-16s %10s | %9s %9s %7s | %9s %9s %7s\n", "activation", "elements", "fwd loop", "fwd dnnl", "loop/dnnl",
              "bwd loop", "bwd dnnl", "loop/dnnl");
  for (int64_t n : {int64_t(512) * 8 * 8 * 64, int64_t(512) * 256}) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist{-4.0f, 4.0f};
    std::vector<float> x(n), y(n), dy(n), dx(n);
    for (int64_t i = 0; i < n; ++i) x[i] = dist(rng), dy[i] = dist(rng);
    for (const Row& r : rows) {
      EltwiseOp op(kernels, {r.onednn, n});
      const bool from_output = r.onednn.derivative_from_output();
      op.forward(x.data(), y.data());
      double fl = median_ms(reps, [&] { pipec::bench::loop_forward(r.act, x.data(), y.data(), n); });
      double fd = median_ms(reps, [&] { op.forward(x.data(), y.data()); });
      const float* v = from_output ? y.data() : x.data();
      double bl = median_ms(reps, [&] { pipec::bench::loop_backward(r.act, v, dy.data(), dx.data(), n); });
      double bd = median_ms(reps, [&] {
        if (from_output) op.backward_from_output(y.data(), dy.data(), dx.data());
        else op.backward_from_input(x.data(), dy.data(), dx.data());
      });
      auto ns = [&](double ms) { return ms * 1e6 / double(n); };
      std::printf("%-16s %10lld | %9.3f %9.3f %7.1fx | %9.3f %9.3f %7.1fx\n", r.name, (long long)n, ns(fl), ns(fd),
                  fl / fd, ns(bl), ns(bd), bl / bd);
    }
  }
  return 0;
}
