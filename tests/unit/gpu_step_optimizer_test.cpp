// The GPU executor's optimizer kernels (launch_optimizer_step) on the host against optimizer_step and
// LossScale bit for bit; dropout's mask against ref::dropout_mask bit for bit; the HWIO <-> KRSC
// transposes; the kernel source NVRTC compiles (every .cuh embedded, every kernel an entry of the PTX
// for sm_80 and sm_90); the host build's table and launcher.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/train/gpu/host_step_kernels.h"
#include "runtime/train/gpu/node_kernels.h"
#include "runtime/train/gpu/step_kernel_source.h"
#include "runtime/train/math/optimizer.h"
#include "runtime/train/ref/ref_kernels.h"
#include "tests/unit/cuda_host_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

template <class T>
gpu::DevPtr dev(T* p) {
  return reinterpret_cast<gpu::DevPtr>(p);
}

::testing::AssertionResult same_bits(const std::string& what, const std::vector<float>& got,
                                     const std::vector<float>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure() << what << "[" << i << "]: kernels " << fmt::format("{:.9g}", got[i])
                                           << ", optimizer_step " << fmt::format("{:.9g}", want[i]);
  return ::testing::AssertionSuccess();
}

// The device side of an optimizer on host memory.
struct DeviceOptimizer {
  std::vector<float> params, grads, m, v;
  std::array<float, 3> scalars{};
  std::array<double, gpu::kOptimizerStatusSlots> status{};
  std::array<double, gpu::kLossScaleSlots> loss_scale{};
  float loss = 0, loss_scale_value = 0;
  std::vector<double> scratch;
  int64_t iterations = 0;  // steps taken (not skipped), as OptimizerSlots::iterations
  gpu::HostKernelLauncher launcher;

  explicit DeviceOptimizer(const std::vector<float>& initial)
      : params(initial),
        grads(initial.size()),
        m(initial.size()),
        v(initial.size()),
        scratch(gpu::optimizer_scratch_bytes(static_cast<int64_t>(initial.size())) / sizeof(double) + 1) {}

  gpu::OptimizerStatus step(const OptimizerConfig& c, bool loss_scaled) {
    scalars = gpu::optimizer_step_scalars(c, iterations);
    gpu::OptimizerDeviceState s;
    s.n = static_cast<int64_t>(params.size());
    s.params = dev(params.data());
    s.grads = dev(grads.data());
    s.m = dev(m.data());
    s.v = dev(v.data());
    s.step_scalars = dev(scalars.data());
    s.status = dev(status.data());
    s.scratch = dev(scratch.data());
    if (loss_scaled) {
      s.loss = dev(&loss);
      s.loss_scale_state = dev(loss_scale.data());
      s.loss_scale_value = dev(&loss_scale_value);
    }
    gpu::launch_optimizer_step(launcher, c, s);
    gpu::OptimizerStatus st = gpu::optimizer_status(status);
    if (!st.skipped) ++iterations;
    return st;
  }
};

std::vector<float> random_floats(size_t n, std::mt19937_64& rng, double scale) {
  std::vector<float> v(n);
  std::normal_distribution<double> d(0, scale);
  for (float& x : v) x = static_cast<float>(d(rng));
  return v;
}

struct Named {
  std::string what;
  OptimizerConfig c;
};

std::vector<Named> optimizer_configs() {
  std::vector<Named> out;
  auto add = [&](std::string what, auto edit) {
    OptimizerConfig c;
    edit(c);
    c.schedule.initial = c.lr;
    out.push_back({std::move(what), c});
  };
  add("adam", [](OptimizerConfig&) {});
  add("adam, weight decay", [](OptimizerConfig& c) { c.weight_decay = 0.01; });
  add("adamw", [](OptimizerConfig& c) {
    c.kind = OptimizerKind::AdamW;
    c.weight_decay = 0.004;
    c.beta1 = 0.8;
    c.eps = 1e-6;
  });
  add("sgd", [](OptimizerConfig& c) {
    c.kind = OptimizerKind::Sgd;
    c.lr = 0.05;
  });
  add("sgd, momentum", [](OptimizerConfig& c) {
    c.kind = OptimizerKind::Sgd;
    c.lr = 0.05;
    c.momentum = 0.9;
  });
  add("sgd, momentum and weight decay", [](OptimizerConfig& c) {
    c.kind = OptimizerKind::Sgd;
    c.momentum = 0.5;
    c.weight_decay = 0.1;
  });
  // The gradients' norm is about sqrt(n) * 0.1 (~45): clipped at 1 every step, never at 1e6.
  add("adam, global_clipnorm 1", [](OptimizerConfig& c) { c.global_clipnorm = 1; });
  add("adamw, global_clipnorm 1e6", [](OptimizerConfig& c) {
    c.kind = OptimizerKind::AdamW;
    c.weight_decay = 0.004;
    c.global_clipnorm = 1e6;
  });
  add("sgd momentum, global_clipnorm 2", [](OptimizerConfig& c) {
    c.kind = OptimizerKind::Sgd;
    c.momentum = 0.9;
    c.global_clipnorm = 2;
  });
  add("adam, cosine_decay", [](OptimizerConfig& c) {
    c.schedule.kind = ScheduleKind::CosineDecay;
    c.schedule.decay_steps = 3;
    c.schedule.alpha = 0.1;
  });
  add("adam, cosine_decay with warm-up", [](OptimizerConfig& c) {
    c.lr = 1e-4;
    c.schedule.kind = ScheduleKind::CosineDecay;
    c.schedule.decay_steps = 4;
    c.schedule.has_warmup_target = true;
    c.schedule.warmup_target = 1e-3;
    c.schedule.warmup_steps = 2;
  });
  add("sgd, linear_warmup", [](OptimizerConfig& c) {
    c.kind = OptimizerKind::Sgd;
    c.lr = 0;
    c.schedule.kind = ScheduleKind::LinearWarmup;
    c.schedule.warmup_target = 0.1;
    c.schedule.warmup_steps = 3;
  });
  add("adamw, exponential_decay", [](OptimizerConfig& c) {
    c.kind = OptimizerKind::AdamW;
    c.weight_decay = 0.004;
    c.schedule.kind = ScheduleKind::ExponentialDecay;
    c.schedule.decay_steps = 2;
    c.schedule.decay_rate = 0.5;
  });
  return out;
}

// Several steps of every optimizer, every schedule, clipping and decay: the weights and slots equal
// optimizer_step's bit for bit after each step (n spans several kNormBlock blocks, so the norm's block
// order is exercised).
TEST(GpuStepOptimizer, UpdatesEqualOptimizerStepBitForBit) {
  const size_t n = 3 * kNormBlock + 1234;
  for (const Named& cfg : optimizer_configs()) {
    SCOPED_TRACE(cfg.what);
    std::mt19937_64 rng(42);
    std::vector<float> cpu_params = random_floats(n, rng, 0.5);
    OptimizerSlots<float> slots;
    DeviceOptimizer gpu(cpu_params);
    for (int step = 0; step < 5; ++step) {
      SCOPED_TRACE("step " + std::to_string(step + 1));
      const std::vector<float> grads = random_floats(n, rng, 0.1 * (step + 1));
      gpu.grads = grads;
      optimizer_step<float>(cfg.c, cpu_params, grads, slots);
      const gpu::OptimizerStatus st = gpu.step(cfg.c, false);
      EXPECT_FALSE(st.skipped);
      ASSERT_TRUE(same_bits("weights", gpu.params, cpu_params));
      ASSERT_TRUE(same_bits("first moment", gpu.m, slots.m));
      if (cfg.c.kind != OptimizerKind::Sgd) {
        ASSERT_TRUE(same_bits("second moment", gpu.v, slots.v));
      }
      EXPECT_TRUE(same_bits("gradients (read only)", gpu.grads, grads));
      EXPECT_EQ(gpu.iterations, slots.iterations);
      EXPECT_EQ(gpu.scalars[0], static_cast<float>(slots.last_lr));
      if (cfg.c.global_clipnorm > 0) {
        EXPECT_EQ(st.grad_norm, slots.last_grad_norm);  // the same f64 sums in the same order
        const bool clipped = slots.last_grad_norm > cfg.c.global_clipnorm;
        EXPECT_EQ(
            st.clip_scale,
            clipped ? static_cast<double>(static_cast<float>(cfg.c.global_clipnorm / slots.last_grad_norm)) : 1.0);
      }
    }
  }
}

// mixed_fp16: the finite check, the skip, the unscaling and the scale's halving and doubling decided on
// the device, against LossScale::unscale_or_skip and optimizer_step over 2004 steps (the scale doubles
// after 2000 finite steps in a row); the state's round trip through its device form.
TEST(GpuStepOptimizer, DynamicLossScalingEqualsLossScale) {
  OptimizerConfig c;  // adam
  const size_t n = 5000;
  std::mt19937_64 rng(7);
  std::vector<float> cpu_params = random_floats(n, rng, 0.5);
  OptimizerSlots<float> slots;
  LossScale cpu_scale;
  DeviceOptimizer gpu(cpu_params);
  gpu.loss_scale = gpu::loss_scale_to_device(cpu_scale);
  gpu.loss_scale_value = static_cast<float>(cpu_scale.scale);
  int skipped = 0, doubled = 0;
  for (int step = 0; step < 2004; ++step) {
    SCOPED_TRACE("step " + std::to_string(step + 1));
    // The backward pass's gradients, scaled by the device's current loss scale.
    std::vector<float> grads = random_floats(n, rng, 1e-3);
    for (float& g : grads) g *= gpu.loss_scale_value;
    double loss = 0.25;
    if (step == 1) grads[n - 1] = INFINITY;  // an f16 overflow: skip, halve
    if (step == 2) grads[17] = NAN;
    if (step == 3) loss = NAN;
    gpu.grads = grads;
    gpu.loss = static_cast<float>(loss);
    const double before = cpu_scale.scale;
    const bool go = cpu_scale.unscale_or_skip(loss, grads);
    if (go) optimizer_step<float>(c, cpu_params, grads, slots);
    const gpu::OptimizerStatus st = gpu.step(c, true);
    EXPECT_EQ(st.skipped, !go);
    skipped += !go;
    doubled += cpu_scale.scale > before;
    const LossScale device = gpu::loss_scale_from_device(gpu.loss_scale);
    ASSERT_EQ(device.scale, cpu_scale.scale);
    ASSERT_EQ(device.good_steps, cpu_scale.good_steps);
    ASSERT_EQ(device.skipped, cpu_scale.skipped);
    ASSERT_EQ(device.last_skipped, cpu_scale.last_skipped);
    ASSERT_EQ(gpu.loss_scale_value, static_cast<float>(cpu_scale.scale));
    ASSERT_TRUE(same_bits("gradients (unscaled in place)", gpu.grads, grads));
    ASSERT_TRUE(same_bits("weights", gpu.params, cpu_params));
    if (!slots.m.empty()) {
      ASSERT_TRUE(same_bits("first moment", gpu.m, slots.m));
    }
    ASSERT_EQ(gpu.iterations, slots.iterations);
  }
  EXPECT_EQ(skipped, 3);
  EXPECT_EQ(doubled, 1);
  EXPECT_EQ(gpu::loss_scale_from_device(gpu.loss_scale).scale, LossScale::kInitial / 8 * 2);
}

// Dropout's mask on the device is ref::dropout_mask's bit for bit: streams, seeds and steps past 32 bits
// (the Philox key takes the step's high word, the counter its low word), odd example sizes.
TEST(GpuStepKernels, DropoutMaskEqualsTheCpuStreamBitForBit) {
  std::mt19937_64 rng(3);
  gpu::HostKernelLauncher launcher;
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t rows = 1 + trial % 4, per = 1 + static_cast<int64_t>(rng() % 1500);
    const double rate = 0.05 + 0.9 * static_cast<double>(rng() % 1000) / 1000;
    const uint64_t seed = rng(), stream = rng() % 7, step = trial % 2 ? rng() : rng() % 100000;
    SCOPED_TRACE(
        fmt::format("rows {} per example {} rate {} seed {} stream {} step {}", rows, per, rate, seed, stream, step));
    ModelGraph g;
    GraphValue x;
    x.shape = {per};
    const int xi = g.add_value(x), yi = g.add_value(x), mi = g.add_value(x);
    GraphNode n;
    n.op = ModelOp::Dropout;
    n.inputs = {xi};
    n.outputs = {yi, mi};
    n.attrs = DropoutAttrs{rate, static_cast<int64_t>(stream), Flag{}};
    g.add_node(n);
    std::vector<float> in = random_floats(static_cast<size_t>(rows * per), rng, 1), y(in.size()), mask(in.size());
    // The step and the first example's global index (a data-parallel replica's share starts past 0).
    const int64_t first = trial % 3 == 0 ? 0 : static_cast<int64_t>(rng() % 100000);
    uint64_t step_on_device[2] = {step, static_cast<uint64_t>(first)};
    gpu::NodeOperands o;
    o.graph = &g;
    o.node = &g.nodes[0];
    o.rows = rows;
    o.seed = seed;
    o.step = step;
    o.step_counter = dev(step_on_device);
    o.inputs = {dev(in.data())};
    o.outputs = {dev(y.data()), dev(mask.data())};
    gpu::launch_node(launcher, o);
    std::vector<float> want(mask.size());
    ref::dropout_mask<float>(rows, per, rate, seed, stream, step, want.data(), first);
    ASSERT_TRUE(same_bits("mask", mask, want));
    int64_t kept = 0;
    for (size_t i = 0; i < mask.size(); ++i) {
      kept += mask[i] != 0;
      ASSERT_EQ(y[i], in[i] * mask[i]) << i;
    }
    if (rows * per > 1000) {
      EXPECT_NEAR(static_cast<double>(kept) / (rows * per), 1 - rate, 0.08);
    }
  }
}

// HWIO <-> KRSC: each element where the layouts put it, and back to where it was.
TEST(GpuStepKernels, KernelLayoutTransposes) {
  gpu::HostKernelLauncher launcher;
  const int64_t kh = 3, kw = 2, in = 5, out = 4;
  std::vector<float> hwio(kh * kw * in * out), krsc(hwio.size()), back(hwio.size());
  for (size_t i = 0; i < hwio.size(); ++i) hwio[i] = static_cast<float>(i);
  gpu::launch_hwio_to_krsc(launcher, dev(hwio.data()), dev(krsc.data()), kh, kw, in, out);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t y = 0; y < kh; ++y)
      for (int64_t x = 0; x < kw; ++x)
        for (int64_t c = 0; c < in; ++c)
          ASSERT_EQ(krsc[((o * kh + y) * kw + x) * in + c], hwio[((y * kw + x) * in + c) * out + o]);
  gpu::launch_krsc_to_hwio(launcher, dev(krsc.data()), dev(back.data()), kh, kw, in, out);
  EXPECT_EQ(back, hwio);
}

// The host table: every row of step_kernels.def, an error naming an unknown kernel, and a launch whose
// item count disagrees with the kernel's first argument refused.
TEST(GpuStepKernels, HostTableAndLauncherChecks) {
  EXPECT_GE(gpu::step_kernel_names().size(), 50u);
  for (std::string_view name : gpu::step_kernel_names()) EXPECT_NE(gpu::host_step_kernel(name), nullptr) << name;
  try {
    gpu::host_step_kernel("conv3d_forward");
    ADD_FAILURE() << "an unknown kernel was found";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("conv3d_forward"), std::string::npos) << e.what();
  }
  gpu::HostKernelLauncher launcher;
  std::vector<float> y(4);
  long long items = 4;
  float value = 2;
  float* p = y.data();
  void* params[] = {&items, &p, &value};
  launcher.launch("fill", 4, params);
  EXPECT_EQ(y, std::vector<float>(4, 2.0f));
  EXPECT_EQ(launcher.launches().at("fill"), 1);
  EXPECT_THROW(launcher.launch("fill", 5, params), std::logic_error);
}

// The embedded source is every kernel file, each after a #line naming it; host_step_kernels.cpp
// includes the same files.
TEST(GpuStepKernels, SourceEmbedsEveryKernelFile) {
  const std::string text(gpu::step_kernel_source());
  const fs::path dir = fs::path(PIPEC_SOURCE_DIR) / "runtime/train/gpu/kernels";
  std::ifstream host_file(fs::path(PIPEC_SOURCE_DIR) / "runtime/train/gpu/host_step_kernels.cpp");
  std::stringstream host;
  host << host_file.rdbuf();
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".cuh") continue;
    ++files;
    const std::string rel = "runtime/train/gpu/kernels/" + entry.path().filename().string();
    std::ifstream f(entry.path());
    std::stringstream content;
    content << f.rdbuf();
    EXPECT_NE(text.find(fmt::format("#line 1 \"{}\"\n{}", rel, content.str())), std::string::npos)
        << rel << " is not embedded as it is (runtime/CMakeLists.txt's PIPEC_STEP_KERNEL_FILES)";
    EXPECT_NE(host.str().find(fmt::format("#include \"{}\"", rel)), std::string::npos)
        << rel << " is not in the host build (host_step_kernels.cpp)";
  }
  EXPECT_GE(files, 9);
  EXPECT_EQ(text.find("#include"), std::string::npos) << "NVRTC compiles the kernels without headers";
}

// NVRTC compiles the kernels for sm_80 and sm_90 with the exact-math options (no fused multiply-add),
// without a warning, and the PTX has an entry for every row of step_kernels.def.
TEST(GpuStepKernels, NvrtcCompilesEveryKernel) {
  const gpu::Nvrtc* nvrtc = testing::nvrtc_or_fail();
  if (!nvrtc) GTEST_SKIP() << "NVRTC is not installed (PIPEC_ALLOW_NO_NVRTC=1)";
  const std::string source(gpu::step_kernel_source());
  for (int arch : {80, 90}) {
    SCOPED_TRACE(fmt::format("sm_{}", arch));
    gpu::PtxResult r = nvrtc->compile(source, "step_kernels.cu", arch, gpu::exact_math_options());
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_EQ(r.log.find("warning"), std::string::npos) << r.log;
    EXPECT_NE(r.ptx.find(fmt::format(".target sm_{}", arch)), std::string::npos);
    std::set<std::string> entries;
    std::istringstream ptx(r.ptx);
    for (std::string line; std::getline(ptx, line);) {
      const size_t at = line.find(".entry ");
      if (at == std::string::npos) continue;
      const size_t start = at + 7, end = line.find('(', start);
      entries.insert(line.substr(start, end == std::string::npos ? std::string::npos : end - start));
    }
    std::set<std::string> rows;
    for (std::string_view name : gpu::step_kernel_names()) rows.insert(std::string(name));
    EXPECT_EQ(entries, rows);
  }
}

}  // namespace
}  // namespace pipec
