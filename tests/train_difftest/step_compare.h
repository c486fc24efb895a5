// The comparison of the training difftest: the fast executor against the reference executor on one
// case, in two ways (docs/design.md, "Differential testing of training", states and justifies the
// bounds).
//
// 1. Step by step from the same state. The reference trains the case's steps and keeps its state
//    before each (weights, moving statistics, optimizer slots, loss scale). For each step the fast
//    executor is set to that state and takes the same step; then
//      - its loss and the model's output are within a forward bound of the reference's,
//      - each parameter's gradient is within a gradient bound of the reference's,
//      - its moving statistics are within the forward bound of the reference's after the step,
//      - its update is the optimizer's update from its own gradients, bit for bit: the weights, the
//        slots, the step count and the loss scale are what the reference's optimizer loop computes
//        from the state before the step and the fast executor's gradients.
//    A rounding-level difference cannot grow within one step, so these bounds are tight, and a wrong
//    gradient cannot hide behind Adam's normalization (which maps a small gradient error to a large
//    weight error when eps is tiny, and to a small one when it is not).
// 2. The whole trajectory: the fast executor trains all the steps on its own from the initial weights;
//    its losses are within an RMS bound of the reference's, and so are its final weights, relative to
//    how far training moved them.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "runtime/core/tensor.h"
#include "runtime/model/train_program.h"
#include "runtime/train/step_executor.h"
#include "tests/train_difftest/model_generator.h"

namespace pipec::train_difftest {

/// The bounds of one precision (docs/design.md gives the reasons for each figure).
struct Bounds {
  // One step from the same state.
  double loss_rtol;    // |loss_fast - loss_ref| <= loss_rtol * |loss_ref|
  double output_rtol;  // every output element within output_rtol x the output's largest magnitude
  double grad_rtol;    // every element of a gradient within grad_rtol x that gradient's largest magnitude
  double grad_floor;   //   + grad_floor x the largest magnitude of any gradient of the step
  double state_rtol;   // moving statistics, relative to each state tensor's largest magnitude
  // The whole trajectory.
  double trajectory_loss;     // RMS over the steps of (loss_fast - loss_ref) / |loss_ref|
  double trajectory_weights;  // RMS(w_fast - w_ref) / RMS(w_ref - w_initial) after the last step
};

/// The bounds for a train block's precision (fp32, mixed_bf16, mixed_fp16).
Bounds bounds_for(const std::string& precision);

struct CaseOutcome {
  bool ok = true;
  std::string failure;           // the first check that failed, with its figures
  std::string fast_description;  // the fast executor's description after the steps (ISA, conv algorithm)
  int64_t steps_compared = 0;    // one by one; fewer than the case's steps when the reference's loss stops
                                 // being finite (fp32, mixed_bf16: where `pipec run` would stop)
  bool stopped_nonfinite = false;
  /// Per check, the largest (measured / bound) seen: 1 is the bound, above fails.
  std::map<std::string, double> worst;
};

/// A change made to the fast executor's results, for the harness's self-check: each must fail the case
/// (so the harness cannot pass by comparing nothing).
struct Perturbation {
  enum class Kind { None, Loss, Gradient, Update };
  Kind kind = Kind::None;
  /// Loss: the loss times (1 + amount); Gradient: the first parameter's gradient times (1 + amount) on
  /// the first step; Update: one weight one ulp further after the first step's update.
  double amount = 0;
};

/// Runs both executors on `t` with the case's data (by field: steps x batch rows) from the weights in
/// `init_path` (loaded as `pipec run --init` loads them).
CaseOutcome compare_training(const TrainProgram& t, const std::map<std::string, Tensor>& data,
                             const std::string& init_path, const CaseSettings& s, const Bounds& b,
                             const Perturbation& perturb = {});

}  // namespace pipec::train_difftest
