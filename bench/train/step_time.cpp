// An executor's training step alone on a spec's model (the fast executor's unless --executor names
// another, or --device gpu asks for the GPU executor): compiles SPEC's train block (as `pipec check` does: no data is
// read; then its expr nodes and update by the JIT, as `pipec run` does), feeds it random batches of the block's batch
// size, and times whole steps (forward, loss, backward, update). The peer of bench/train/torch_models.py for the seeds
// whose data is not on the machine (deblur, segmentation).
//
//   build/bench/train_step_time SPEC [--train NAME] [--steps S] [--warmup W] [--threads T]
//                                    [--executor fast|reference] [--cpu-bf16 auto|native|emulated] [--nodes]
//                                    [--disable-pass NAME]... [--no-bf16-storage] [--device cpu|gpu|gpu-emulated]
//
// Prints one line, then `RESULT <median ms> <fastest ms> <median CPU ms>`. With --nodes, first a table of
// where a step's time went by node kind (ms per step over the timed steps; a layer's backward group is
// timed at the first of its nodes, which computes all three), largest first. On the GPU executor
// (--device gpu; gpu-emulated: its host emulation, for tests) --nodes times each node by waiting for the
// device after it (GpuExecutorOptions::time_nodes) and breaks the table down by kind, the node's output
// shape and what ran it (cuDNN, cuBLASLt, the step kernels, a generated kernel, the host). --disable-pass skips a step
// pass (or optimizer pass), as `pipec run --disable-pass` does: the step with and without it.
// --no-bf16-storage keeps every value in f32 on bf16 kernels (FastExecutorOptions::bf16_storage).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/attach_step_gpu_kernels.h"
#include "compiler/codegen/llvm/jit.h"
#include "compiler/compile/compile.h"
#include "runtime/core/philox.h"
#include "runtime/gpu/cuda_loader.h"
#include "runtime/train/fast/fast_executor.h"
#include "runtime/train/gpu/cuda_step_device.h"
#include "runtime/train/gpu/gpu_executor.h"
#include "runtime/train/gpu/host_step_device.h"
#include "runtime/train/reference/reference_executor.h"

namespace {

double cpu_seconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_stime.tv_sec + 1e-6 * (r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

pipec::Tensor random_f32(const pipec::Shape& shape, uint64_t key, double lo, double hi) {
  pipec::Tensor t = pipec::Tensor::empty(pipec::DType::F32, shape);
  pipec::RandomStream r(99, key, 0, 0);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = static_cast<float>(lo + (hi - lo) * r.uniform_double());
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pipec;
  std::string spec, train, executor = "fast", cpu_bf16 = "auto", device = "cpu";
  int steps = 3, warmup = 1, threads = 0;
  bool usage = false, nodes = false, bf16_storage = true;
  std::vector<std::string> disabled;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--train") train = next();
    else if (a == "--steps") steps = std::stoi(next());
    else if (a == "--warmup") warmup = std::stoi(next());
    else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--executor") executor = next();
    else if (a == "--cpu-bf16") cpu_bf16 = next();
    else if (a == "--nodes") nodes = true;
    else if (a == "--no-bf16-storage") bf16_storage = false;
    else if (a == "--disable-pass") disabled.push_back(next());
    else if (a == "--device") device = next();
    else if (spec.empty() && a[0] != '-') spec = a;
    else usage = true;
  }
  if (usage || (executor != "fast" && executor != "reference") || !parse_cpu_bf16(cpu_bf16) ||
      (device != "cpu" && device != "gpu" && device != "gpu-emulated")) {
    std::fprintf(stderr,
                 "usage: %s SPEC [--train NAME] [--steps S] [--warmup W] [--threads T] [--executor fast|reference] "
                 "[--cpu-bf16 auto|native|emulated] [--nodes] [--disable-pass NAME]... [--no-bf16-storage] "
                 "[--device cpu|gpu|gpu-emulated]\n",
                 argv[0]);
    return 2;
  }
  const bool on_gpu = device != "cpu";
  CompileRequest request;
  request.path = spec;
  request.target = CompileTarget::CheckOnly;
  request.options.passes.disabled = disabled;
  CompileResult r = compile(request);
  if (!r.ok() || r.trains.empty()) {
    std::fprintf(stderr, "%s: no train block compiled: %s\n", spec.c_str(), r.error.c_str());
    return 1;
  }
  const TrainProgram* t = &r.trains[0].program;
  for (const CompiledTrain& c : r.trains)
    if (c.program.name == train) t = &c.program;
  ModelGraph g = t->step;
  codegen::attach_step_kernels(g);  // as `pipec run` at -O1
  if (on_gpu) cuda_codegen::attach_step_gpu_kernels(g);
  const int64_t rows = g.batch > 0 ? g.batch : 1;
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < g.inputs.size(); ++k) inputs.push_back(random_f32(g.full_shape(g.inputs[k], rows), k, -1, 1));
  // Targets in [0, 1): valid for the regression losses and as class probabilities alike; integer class
  // labels (sparse cross_entropy) as whole numbers below the class count.
  Tensor target = random_f32(g.full_shape(g.target, rows), 77, 0, 1);
  for (const GraphNode& n : g.nodes)
    if (n.op == ModelOp::Loss && n.attrs_as<LossAttrs>().sparse.value_or(false)) {
      const double classes = static_cast<double>(g.values[n.inputs[0]].shape.back());
      float* p = target.data<float>();
      for (int64_t i = 0; i < target.num_elements(); ++i)
        p[i] = static_cast<float>(static_cast<int64_t>(p[i] * classes));
    }
  std::unique_ptr<StepExecutor> ex;
  gpu::GpuExecutor* gpu_ex = nullptr;
  if (on_gpu) {
    gpu::GpuExecutorOptions o;
    o.time_nodes = nodes;
    std::unique_ptr<gpu::StepDevice> dev;
    if (device == "gpu-emulated") {
      dev = gpu::make_host_emulation_device();
    } else {
      std::string why;
      const gpu::CudaDriver* driver = gpu::cuda_driver(&why);
      if (!driver) {
        std::fprintf(stderr, "--device gpu: no CUDA driver: %s\n", why.c_str());
        return 3;
      }
      dev = gpu::make_cuda_step_device(*driver);
    }
    auto made = std::make_unique<gpu::GpuExecutor>(g, 0, std::move(dev), o);
    gpu_ex = made.get();
    ex = std::move(made);
  } else if (executor == "fast") {
    FastExecutorOptions o;
    o.threads = threads;
    o.cpu_bf16 = *parse_cpu_bf16(cpu_bf16);
    o.bf16_storage = bf16_storage;
    ex = std::make_unique<FastExecutor>(g, 0, o);
  } else {
    ex = std::make_unique<ReferenceExecutor<float>>(g, 0);
  }
  // --nodes: the time from one node's end to the next's, by kind (expr nodes by phase).
  std::map<std::string, double> node_ms;
  std::map<std::string, int> node_count;
  bool timing_nodes = false;
  auto last = std::chrono::steady_clock::now();
  if (nodes && !on_gpu)
    ex->observe_nodes([&](size_t i) {
      const auto now = std::chrono::steady_clock::now();
      if (timing_nodes) {
        const GraphNode& n = g.nodes[i];
        std::string kind = model_op_name(n.op);
        if (n.op == ModelOp::Expr) kind += n.phase == OpCategory::Forward ? " (forward)" : " (backward)";
        node_ms[kind] += std::chrono::duration<double, std::milli>(now - last).count();
        ++node_count[kind];
      }
      last = now;
    });
  std::vector<double> wall, cpu;
  std::vector<double> gpu_warm;  // the GPU executor's node times after the warm-up steps
  for (int s = 0; s < warmup + steps; ++s) {
    timing_nodes = s >= warmup;
    if (gpu_ex && s == warmup) gpu_warm = gpu_ex->node_seconds();
    last = std::chrono::steady_clock::now();
    auto t0 = std::chrono::steady_clock::now();
    double c0 = cpu_seconds();
    ex->run(inputs, &target, static_cast<uint64_t>(s), OpCategory::Update);
    if (s < warmup) continue;
    wall.push_back(1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cpu.push_back(1e3 * (cpu_seconds() - c0));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  if (nodes && gpu_ex) {
    // Each node's own time on the device, by kind, output shape and what ran it.
    const std::vector<double>& total = gpu_ex->node_seconds();
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const GraphNode& n = g.nodes[i];
      std::string kind = model_op_name(n.op);
      if (n.op == ModelOp::Expr) kind += n.phase == OpCategory::Forward ? " (forward)" : " (backward)";
      if (!n.outputs.empty()) kind += " " + shape_to_string(g.full_shape(n.outputs[0], rows));
      kind += std::string(", ") + gpu::node_ran_on_name(gpu_ex->node_ran_on()[i]);
      node_ms[kind] += 1e3 * (total[i] - (gpu_warm.empty() ? 0.0 : gpu_warm[i]));
      node_count[kind] += steps;
    }
  }
  if (nodes) {
    std::vector<std::pair<double, std::string>> by_time;
    for (const auto& [kind, ms] : node_ms) by_time.emplace_back(ms / steps, kind);
    std::sort(by_time.rbegin(), by_time.rend());
    double all = 0;
    for (const auto& [ms, kind] : by_time) all += ms;
    std::printf("%-72s %6s %10s %6s\n", on_gpu ? "node kind, output, run by" : "node kind", "nodes", "ms/step",
                "share");
    for (const auto& [ms, kind] : by_time)
      std::printf("%-72s %6d %10.2f %5.1f%%\n", kind.c_str(), node_count[kind] / steps, ms,
                  all > 0 ? 100 * ms / all : 0.0);
  }
  std::printf("%s, train %s, batch %lld: %.1f ms per step (median of %d, fastest %.1f, CPU %.1f ms); %s\n",
              spec.c_str(), t->name.c_str(), static_cast<long long>(rows), median(wall), steps,
              *std::min_element(wall.begin(), wall.end()), median(cpu), ex->description().c_str());
  std::printf("RESULT %.3f %.3f %.3f\n", median(wall), *std::min_element(wall.begin(), wall.end()), median(cpu));
  return 0;
}
