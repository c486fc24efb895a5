// The training step's kernels (runtime/train/gpu/kernels/) on a GPU against their host build, which CI
// checks against the reference executor (tests/unit/gpu_step_kernels_test.cpp): every kind's random
// single-node cases through launch_node, on the GPU with a full grid and with a grid of one block of 32
// threads, and the optimizer with mixed_fp16's loss scaling.
//
// Expectations: the two grids give the same bits for every kernel (each item is computed by one thread
// in a fixed order, whatever the grid). The GPU gives the host build's bits for every kernel that uses
// only + - * / sqrt, floor and ceil (IEEE, correctly rounded, fused multiply-add off on both sides); the
// kernels calling exp, log, log1p or erf in f64 (gelu, softmax, the losses) get CUDA's functions, within
// 2 ulp of the f64 result, so their f32 results may differ in the last bit: within 2^-22 of the
// tensor's largest magnitude. Without a GPU (PIPEC_GPU_DRY_RUN=1) the tests are skipped, saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/gpu/cuda_loader.h"
#include "runtime/gpu/nvrtc_loader.h"
#include "runtime/train/gpu/host_step_kernels.h"
#include "runtime/train/gpu/node_kernels.h"
#include "runtime/train/gpu/step_kernel_source.h"
#include "tests/unit/gpu_step_cases.h"

namespace pipec {
namespace {

using namespace step_cases;

bool dry_run() {  // tests/gpu/gpu_harness.h's rule, read here so that this file needs only the runtime
  const char* v = std::getenv("PIPEC_GPU_DRY_RUN");
  return v && std::string(v) == "1";
}

// The step kernels compiled by NVRTC and loaded on device 0, launched by name.
class CudaStepKernels {
 public:
  static CudaStepKernels* get(std::string* why) {
    static std::string reason;
    static CudaStepKernels* instance = []() -> CudaStepKernels* {
      const gpu::CudaDriver* d = gpu::cuda_driver(&reason);
      if (!d) return nullptr;
      const gpu::Nvrtc* nvrtc = gpu::Nvrtc::get(&reason);
      if (!nvrtc) return nullptr;
      gpu::PtxResult ptx =
          nvrtc->compile(std::string(gpu::step_kernel_source()), "step_kernels.cu", d->arch, gpu::exact_math_options());
      if (!ptx.ok) {
        reason = "NVRTC failed: " + ptx.log;
        return nullptr;
      }
      auto* k = new CudaStepKernels(*d);
      d->make_current();
      d->check(d->cuModuleLoadData(&k->module_, ptx.ptx.c_str()), "cuModuleLoadData (step kernels)");
      std::cout << "[ step-kernels ] " << d->device_name << " (sm_" << d->arch << ", " << d->multiprocessors
                << " SMs), NVRTC " << nvrtc->version() << "\n";
      return k;
    }();
    if (why) *why = reason;
    return instance;
  }

  const gpu::CudaDriver& driver() const { return d_; }

  cuda::CUfunction function(const std::string& name) {
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
    cuda::CUfunction f = nullptr;
    d_.check(d_.cuModuleGetFunction(&f, module_, name.c_str()), name.c_str());
    return functions_[name] = f;
  }

 private:
  explicit CudaStepKernels(const gpu::CudaDriver& d) : d_(d) {}
  const gpu::CudaDriver& d_;
  cuda::CUmodule module_ = nullptr;
  std::map<std::string, cuda::CUfunction> functions_;
};

// Launches with `threads` per block and at most `max_blocks` blocks (the grid-stride loops cover the rest).
class CudaLauncher : public gpu::KernelLauncher {
 public:
  CudaLauncher(CudaStepKernels& k, unsigned threads, long long max_blocks)
      : k_(k), threads_(threads), max_blocks_(max_blocks) {}
  void launch(const char* name, int64_t items, void** params) override {
    const long long blocks = std::min<long long>((items + threads_ - 1) / threads_, max_blocks_);
    const gpu::CudaDriver& d = k_.driver();
    d.check(d.cuLaunchKernel(k_.function(name), static_cast<unsigned>(blocks), 1, 1, threads_, 1, 1, 0, nullptr, params,
                             nullptr),
            name);
  }

 private:
  CudaStepKernels& k_;
  unsigned threads_;
  long long max_blocks_;
};

// Device copies of host buffers, freed at the end.
class DeviceMemory {
 public:
  explicit DeviceMemory(const gpu::CudaDriver& d) : d_(d) {}
  ~DeviceMemory() {
    for (cuda::CUdeviceptr p : owned_) d_.cuMemFree(p);
  }
  template <class T>
  gpu::DevPtr copy_of(const std::vector<T>& v) {
    const size_t bytes = std::max<size_t>(v.size() * sizeof(T), 8);
    cuda::CUdeviceptr p = 0;
    d_.check(d_.cuMemAlloc(&p, bytes), "cuMemAlloc");
    owned_.push_back(p);
    if (!v.empty()) d_.check(d_.cuMemcpyHtoDAsync(p, v.data(), v.size() * sizeof(T), nullptr), "cuMemcpyHtoD");
    return p;
  }
  template <class T>
  void read(gpu::DevPtr p, std::vector<T>& v) {
    d_.check(d_.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
    if (!v.empty()) d_.check(d_.cuMemcpyDtoHAsync(v.data(), p, v.size() * sizeof(T), nullptr), "cuMemcpyDtoH");
    d_.check(d_.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
  }

 private:
  const gpu::CudaDriver& d_;
  std::vector<cuda::CUdeviceptr> owned_;
};

CudaStepKernels* kernels_or_skip() {
  std::string why;
  CudaStepKernels* k = CudaStepKernels::get(&why);
  if (!k && !dry_run()) ADD_FAILURE() << "no GPU for the step kernels: " << why;
  return k;
}

// Kernels whose results go through CUDA's exp, log, log1p or erf.
bool transcendental(ModelOp op) {
  switch (op) {
    case ModelOp::Gelu:
    case ModelOp::GeluBackward:
    case ModelOp::Softmax:
    case ModelOp::SoftmaxBackward:
    case ModelOp::Loss:
    case ModelOp::LossBackward: return true;
    default: return false;
  }
}

struct Outputs {
  std::vector<std::vector<float>> outs;
  std::vector<float> state;  // moving_average's state, written in place
};

Outputs run_on_host(const Case& c, const std::vector<std::vector<float>>& inputs) {
  const GraphNode& n = c.g.nodes.at(0);
  std::vector<std::vector<float>> ins = inputs;
  Outputs r;
  for (int v : n.outputs) r.outs.emplace_back(shape_num_elements(c.g.full_shape(v, c.rows)), std::nanf(""));
  std::vector<double> scratch(gpu::node_scratch_bytes(c.g, n, c.rows) / sizeof(double) + 1);
  uint64_t step[2] = {c.step, 0};  // the step, the batch's first example
  float loss_scale = 1024;
  gpu::NodeOperands o;
  o.graph = &c.g;
  o.node = &n;
  o.rows = c.rows;
  o.seed = c.seed;
  o.step = c.step;
  o.step_counter = reinterpret_cast<gpu::DevPtr>(step);
  o.loss_scale = reinterpret_cast<gpu::DevPtr>(&loss_scale);
  o.scratch = reinterpret_cast<gpu::DevPtr>(scratch.data());
  for (auto& in : ins) o.inputs.push_back(reinterpret_cast<gpu::DevPtr>(in.data()));
  for (auto& out : r.outs) o.outputs.push_back(reinterpret_cast<gpu::DevPtr>(out.data()));
  gpu::HostKernelLauncher launcher;
  gpu::launch_node(launcher, o);
  if (n.op == ModelOp::MovingAverage) r.state = ins[0];
  return r;
}

Outputs run_on_gpu(CudaStepKernels& k, const Case& c, const std::vector<std::vector<float>>& inputs,
                   gpu::KernelLauncher& launcher) {
  const GraphNode& n = c.g.nodes.at(0);
  DeviceMemory mem(k.driver());
  Outputs r;
  gpu::NodeOperands o;
  o.graph = &c.g;
  o.node = &n;
  o.rows = c.rows;
  o.seed = c.seed;
  o.step = c.step;
  o.step_counter = mem.copy_of(std::vector<uint64_t>{c.step, 0});  // the step, the batch's first example
  o.loss_scale = mem.copy_of(std::vector<float>{1024});
  o.scratch = mem.copy_of(std::vector<double>(gpu::node_scratch_bytes(c.g, n, c.rows) / sizeof(double) + 1));
  for (const auto& in : inputs) o.inputs.push_back(mem.copy_of(in));
  for (int v : n.outputs) {
    r.outs.emplace_back(shape_num_elements(c.g.full_shape(v, c.rows)), std::nanf(""));
    o.outputs.push_back(mem.copy_of(r.outs.back()));
  }
  gpu::launch_node(launcher, o);
  for (size_t j = 0; j < r.outs.size(); ++j) mem.read(o.outputs[j], r.outs[j]);
  if (n.op == ModelOp::MovingAverage) {
    r.state.resize(inputs[0].size());
    mem.read(o.inputs[0], r.state);
  }
  return r;
}

// Bit-equal, or (tolerant) within 2^-22 of the largest magnitude; counts the elements that differ at all.
::testing::AssertionResult compare(const std::string& what, const std::vector<float>& got,
                                   const std::vector<float>& want, bool tolerant, int64_t* differing) {
  double scale = 0;
  for (float w : want) scale = std::max(scale, std::fabs(static_cast<double>(w)));
  const double limit = std::ldexp(scale, -22);
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = std::memcmp(&got[i], &want[i], 4) == 0 || (std::isnan(got[i]) && std::isnan(want[i]));
    if (same) continue;
    ++*differing;
    if (!tolerant || !(std::fabs(static_cast<double>(got[i]) - want[i]) <= limit))
      return ::testing::AssertionFailure()
             << what << "[" << i << "]: GPU " << fmt::format("{:.9g}", got[i]) << ", host "
             << fmt::format("{:.9g}", want[i]) << (tolerant ? fmt::format(" (limit {:.3g})", limit) : " (bit-equal)");
  }
  return ::testing::AssertionSuccess();
}

TEST(GpuStepKernelsDevice, EveryKindEqualsTheHostBuildOnAnyGrid) {
  CudaStepKernels* k = kernels_or_skip();
  if (!k) GTEST_SKIP() << "dry run: the step kernels need a GPU";
  CudaLauncher full(*k, 256, 4096), tiny(*k, 32, 1);
  Random r(20261127);
  const auto start = std::chrono::steady_clock::now();
  int64_t cases = 0, values = 0, differing = 0;
  for (const ModelOpInfo& info : all_model_ops()) {
    if (info.op == ModelOp::Expr || info.op == ModelOp::OptimizerStep) continue;
    int64_t kind_differing = 0;
    for (const Case& c : cases_for(info.op, r)) {
      SCOPED_TRACE(c.what);
      const std::vector<std::vector<float>> inputs = node_inputs(c);
      const Outputs host = run_on_host(c, inputs);
      const Outputs gpu = run_on_gpu(*k, c, inputs, full);
      const Outputs gpu_tiny = run_on_gpu(*k, c, inputs, tiny);
      ++cases;
      for (size_t j = 0; j < host.outs.size(); ++j) {
        int64_t grid_differing = 0;
        EXPECT_TRUE(compare(fmt::format("output {} (one block of 32 threads against a full grid)", j), gpu_tiny.outs[j],
                            gpu.outs[j], false, &grid_differing));
        EXPECT_TRUE(
            compare(fmt::format("output {}", j), gpu.outs[j], host.outs[j], transcendental(info.op), &kind_differing));
        values += static_cast<int64_t>(host.outs[j].size());
      }
      if (info.op == ModelOp::MovingAverage) {
        EXPECT_TRUE(compare("state", gpu.state, host.state, false, &kind_differing));
      }
    }
    differing += kind_differing;
    if (kind_differing)
      std::cout << "[ step-kernels ] " << info.name << ": " << kind_differing
                << " value(s) differ from the host build in the last bits (CUDA's exp/log/erf)\n";
  }
  std::cout << "[ step-kernels ] " << cases << " cases, " << values << " values, " << differing
            << " not bit-equal to the host build, "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
}

// The optimizer on the GPU gives the host build's weights and slots bit for bit (and so optimizer_step's:
// tests/unit/gpu_step_optimizer_test.cpp), clipping and mixed_fp16's loss scaling included.
TEST(GpuStepKernelsDevice, OptimizerEqualsTheHostBuild) {
  CudaStepKernels* k = kernels_or_skip();
  if (!k) GTEST_SKIP() << "dry run: the step kernels need a GPU";
  CudaLauncher cuda(*k, 256, 4096);
  gpu::HostKernelLauncher host;
  const int64_t n = 3 * kNormBlock + 1234;
  struct Config {
    const char* what;
    OptimizerConfig c;
    bool loss_scaled;
  };
  std::vector<Config> configs(4);
  configs[0] = {"adam, global_clipnorm 1", {}, false};
  configs[0].c.global_clipnorm = 1;
  configs[1] = {"sgd, momentum, weight decay", {}, false};
  configs[1].c.kind = OptimizerKind::Sgd;
  configs[1].c.momentum = 0.9;
  configs[1].c.weight_decay = 0.01;
  configs[2] = {"adamw, exponential_decay, global_clipnorm 1e6", {}, false};
  configs[2].c.kind = OptimizerKind::AdamW;
  configs[2].c.weight_decay = 0.004;
  configs[2].c.global_clipnorm = 1e6;
  configs[2].c.schedule.kind = ScheduleKind::ExponentialDecay;
  configs[2].c.schedule.decay_steps = 2;
  configs[2].c.schedule.decay_rate = 0.5;
  configs[3] = {"adam, mixed_fp16", {}, true};
  for (const Config& cfg : configs) {
    SCOPED_TRACE(cfg.what);
    std::mt19937_64 rng(5);
    std::vector<float> w(n), m(n), v(n);
    for (float& x : w) x = static_cast<float>(std::normal_distribution<double>(0, 0.5)(rng));
    DeviceMemory mem(k->driver());
    gpu::OptimizerDeviceState d, h;
    std::vector<float> hw = w, hm = m, hv = v, hg(n);
    std::vector<double> hscratch(gpu::optimizer_scratch_bytes(n) / 8 + 1);
    std::array<double, 4> hstatus{}, hls = gpu::loss_scale_to_device(LossScale{});
    float hloss = 0.5f, hscale = 32768;
    d.n = h.n = n;
    d.params = mem.copy_of(w);
    d.m = mem.copy_of(m);
    d.v = mem.copy_of(v);
    d.grads = mem.copy_of(hg);
    d.status = mem.copy_of(std::vector<double>(4));
    d.scratch = mem.copy_of(hscratch);
    h.params = reinterpret_cast<gpu::DevPtr>(hw.data());
    h.m = reinterpret_cast<gpu::DevPtr>(hm.data());
    h.v = reinterpret_cast<gpu::DevPtr>(hv.data());
    h.grads = reinterpret_cast<gpu::DevPtr>(hg.data());
    h.status = reinterpret_cast<gpu::DevPtr>(hstatus.data());
    h.scratch = reinterpret_cast<gpu::DevPtr>(hscratch.data());
    std::vector<double> ls(hls.begin(), hls.end());
    if (cfg.loss_scaled) {
      d.loss_scale_state = mem.copy_of(ls);
      d.loss_scale_value = mem.copy_of(std::vector<float>{hscale});
      h.loss_scale_state = reinterpret_cast<gpu::DevPtr>(hls.data());
      h.loss_scale_value = reinterpret_cast<gpu::DevPtr>(&hscale);
      h.loss = reinterpret_cast<gpu::DevPtr>(&hloss);
    }
    int64_t iterations = 0;
    for (int step = 0; step < 4; ++step) {
      SCOPED_TRACE("step " + std::to_string(step + 1));
      std::vector<float> g(n);
      for (float& x : g)
        x = static_cast<float>(std::normal_distribution<double>(0, 0.1)(rng) * (cfg.loss_scaled ? hscale : 1));
      if (cfg.loss_scaled && step == 1) g[n / 2] = INFINITY;
      hg = g;
      std::array<float, 3> scalars = gpu::optimizer_step_scalars(cfg.c, iterations);
      h.step_scalars = reinterpret_cast<gpu::DevPtr>(scalars.data());
      d.step_scalars = mem.copy_of(std::vector<float>(scalars.begin(), scalars.end()));
      d.grads = mem.copy_of(g);
      if (cfg.loss_scaled) d.loss = mem.copy_of(std::vector<float>{hloss});
      gpu::launch_optimizer_step(host, cfg.c, h);
      gpu::launch_optimizer_step(cuda, cfg.c, d);
      std::vector<float> dw(n), dm(n), dv(n), dg(n);
      std::vector<double> dstatus(4);
      mem.read(d.params, dw);
      mem.read(d.m, dm);
      mem.read(d.v, dv);
      mem.read(d.grads, dg);
      mem.read(d.status, dstatus);
      int64_t differing = 0;
      ASSERT_TRUE(compare("weights", dw, hw, false, &differing));
      ASSERT_TRUE(compare("first moment", dm, hm, false, &differing));
      ASSERT_TRUE(compare("second moment", dv, hv, false, &differing));
      ASSERT_TRUE(compare("gradients", dg, hg, false, &differing));
      for (int s = 0; s < 4; ++s) EXPECT_EQ(dstatus[s], hstatus[s]) << "status slot " << s;
      if (cfg.loss_scaled) {
        std::vector<double> dls(4);
        mem.read(d.loss_scale_state, dls);
        for (int s = 0; s < 4; ++s) EXPECT_EQ(dls[s], hls[s]) << "loss scale slot " << s;
        EXPECT_EQ(gpu::optimizer_status(hstatus).skipped, step == 1);
      }
      if (!gpu::optimizer_status(hstatus).skipped || !cfg.loss_scaled) ++iterations;
    }
  }
}

}  // namespace
}  // namespace pipec
