// Compiling train blocks from spec text in tests, and deterministic batches for them.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "compiler/codegen/llvm/jit.h"
#include "compiler/compile/compile.h"
#include "runtime/core/philox.h"
#include "runtime/core/tensor.h"
#include "runtime/model/model_graph.h"
#include "runtime/train/dnnl/cpu_kernels.h"

namespace pipec::testing {

/// `spec` checked as `pipec check` checks it: every train block compiled to its step graph.
/// The end of the summary's precision line for a mixed_bf16 run on this CPU's fast executor: bf16
/// kernels where the CPU has bf16 instructions, the emulation elsewhere.
inline std::string cpu_bf16_precision_text() {
  return train::CpuKernels::native_bf16()
             ? "conv2d, conv2d_transpose and dense multiplied in bf16 on the CPU's bf16 kernels, the rest in f32"
             : "computed in f32 on the CPU";
}

// The chess example's network (two 3x3 convolutions of `filters`, a dense layer of `units`, one out) as
// a train block on batches of `batch` from x.tfrecord; `train` is the rest of the train block after the
// loss (optimizer, steps, precision, ...).
inline std::string chess_net_spec(int batch, int filters, int units, const std::string& train) {
  return fmt::format(
      R"(source s = tfrecord("x.tfrecord") {{ board: f32[8, 8, 24], flags: f32[10], score: f32[1] }}
pipeline data = s | batch({0}, drop_remainder = true)
model chess_net(board: f32[8, 8, 24], flags: f32[10]) -> f32[1] {{
  x = board | conv2d({1}, 3, padding = same) | relu | conv2d({1}, 3, padding = same) | relu
  x = concat([flatten(x), flags])
  x | dense({2}) | relu | dense(1) | tanh
}}
train t = {{ data = data, model = chess_net(board, flags), loss = mse(score), {3} }}
)",
      batch, filters, units, train);
}

// The chess example's network at its own widths as a train block of 3 Adam steps on batches of 32, at
// `precision` ("fp32", "mixed_bf16", ...).
inline std::string chess_train_spec(const std::string& precision) {
  return chess_net_spec(32, 64, 256, "optimizer = adam(lr = 1e-3), steps = 3, precision = " + precision);
}

inline CompileResult check_train_spec(const std::string& spec) {
  CompileRequest request;
  request.path = "train_test.pipe";
  request.text = spec;
  request.target = CompileTarget::CheckOnly;
  return compile(request);
}

/// The train block `name` of `spec`, compiled; fails the test (and returns an empty program) on errors.
inline TrainProgram compile_train(const std::string& spec, const std::string& name = "t") {
  CompileResult r = check_train_spec(spec);
  std::ostringstream diags;
  r.program->diags.print(diags, false);
  EXPECT_TRUE(r.ok()) << diags.str() << r.error;
  for (CompiledTrain& t : r.trains)
    if (t.program.name == name) return std::move(t.program);
  ADD_FAILURE() << "no train block `" << name << "` compiled\n" << diags.str();
  return {};
}

/// compile_train, then the step graph's expr nodes compiled by the JIT, as `pipec run` compiles them
/// for the fast executor (the reference executor ignores the kernels).
inline TrainProgram compile_train_jit(const std::string& spec, const std::string& name = "t") {
  TrainProgram t = compile_train(spec, name);
  codegen::attach_step_kernels(t.step);
  if (t.eval) codegen::attach_step_kernels(t.eval->graph);
  return t;
}

/// The diagnostics `pipec check` prints for `spec` (train blocks compiled too).
inline std::string train_diagnostics(const std::string& spec) {
  CompileResult r = check_train_spec(spec);
  std::ostringstream out;
  r.program->diags.print(out, false);
  return out.str();
}

/// A tensor of `shape` with values from a Philox stream: uniform in [lo, hi).
inline Tensor random_tensor(DType dtype, const Shape& shape, uint64_t key, double lo = -1, double hi = 1) {
  Tensor t = Tensor::empty(dtype, shape);
  RandomStream r(1234, key, 0, 0);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = lo + (hi - lo) * r.uniform_double();
    if (dtype == DType::F64) t.data<double>()[i] = v;
    else if (dtype == DType::F32) t.data<float>()[i] = static_cast<float>(v);
    else if (dtype == DType::I64) t.data<int64_t>()[i] = static_cast<int64_t>(v);
    else if (dtype == DType::I32) t.data<int32_t>()[i] = static_cast<int32_t>(v);
  }
  return t;
}

/// Runs `steps` update steps of `ex` (an executor of `g`) on random batches of 32: step s's inputs and
/// target are drawn from keys s * 10 + k and s * 10 + 9, so two executors of one graph see the same
/// batches. Returns the losses.
template <class Executor>
std::vector<double> run_random_update_steps(Executor& ex, const ModelGraph& g, int steps) {
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < g.inputs.size(); ++k)
      inputs.push_back(random_tensor(DType::F32, g.full_shape(g.inputs[k], 32), s * 10 + k));
    Tensor target = random_tensor(DType::F32, g.full_shape(g.target, 32), s * 10 + 9, -0.5, 0.5);
    losses.push_back(ex.run(inputs, &target, s, OpCategory::Update));
  }
  return losses;
}

}  // namespace pipec::testing
