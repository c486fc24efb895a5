// The comparison of the training difftest: the fast executor against the reference executor on one
// case, in two ways (docs/design.md, "Differential testing of training", states and justifies the
// bounds).
//
// 1. Step by step from the same state. The reference trains the case's steps and keeps its state
//    before each (weights, moving statistics, optimizer slots, loss scale). For each step the fast
//    executor is set to that state and takes the same step; then
//      - its loss and the model's output are within a forward bound of the reference's,
//      - each parameter's gradient is within a gradient bound of the reference's,
//      - its moving statistics after the step are within a forward bound of the reference's,
//      - its update is the optimizer's update from its own gradients, bit for bit: the weights, the
//        slots, the step count and the loss scale are what the reference's optimizer loop computes
//        from the state before the step and the fast executor's gradients.
//    A rounding-level difference cannot grow within one step, so these bounds are tight, and a wrong
//    gradient cannot hide behind Adam's normalization (which turns a gradient error into a large weight
//    error when eps is tiny, and into a small one when it is not).
// 2. The whole trajectory: the fast executor trains all the steps on its own from the initial weights;
//    the RMS of its losses' relative differences from the reference's, and the RMS of its final
//    weights' differences relative to how far training moved them, are within looser bounds.
// 3. Inference (checked between 1 and 2): the model's inference graph (what evaluation and a served
//    model run: batch_norm on its moving statistics, dropout off) with the reference's trained weights,
//    the fast executor's output within the forward bound of the reference's.
//
// Each bound is a fixed part plus K times the largest distance of three *witnesses* from the
// reference: what the same step (or trajectory) gives where only rounding differs.
//   - The random twin: the reference executor with each node's f32 outputs moved by delta * u * the
//     element's scale (u uniform in [-1, 1]; the scale is the larger of the element and its tensor's
//     rms, and for a result that cancels, the magnitude of the terms it sums: softmax's and the
//     normalizations' backward passes, gelu's erf), as the fast executor's kernels round differently.
//   - The tie twin: the reference with exact ties in a max pool's input broken the other way.
//   - The exact step: the reference in f64 from the same state.
// An ill-conditioned quantity (a sum that cancels, a gradient through a saturated sigmoid, a loss of a
// 16-bit prediction that equals its target) moves there too and gets a bound to match; a
// well-conditioned one keeps the fixed part, which a wrong kernel exceeds. Where the reference's loss,
// weights or moving statistics stop being finite, the case ends at that step, as `pipec run` stops.
// Where a witness's trajectory stops being finite and the reference's does not, rounding alone can end
// the run: the trajectory has no bound, is not checked, and the case is counted and named as such.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "runtime/core/tensor.h"
#include "runtime/model/train_program.h"
#include "runtime/train/step_executor.h"
#include "tests/train_difftest/model_generator.h"

namespace pipec::train_difftest {

/// The bounds of one precision (docs/design.md gives the reasons for each figure). Every check allows
/// its fixed part plus `noise_factor` times how far the noise twin's value is from the reference's.
struct Bounds {
  double noise_delta;   // the noise twin's relative perturbation of weights, states and inputs
  double noise_factor;  // K: the fast executor may be K times as far from the reference as the twin
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
Bounds bounds_for(Precision precision);

struct CaseOutcome {
  bool ok = true;
  std::string failure;           // the first check that failed, with its figures
  std::string fast_description;  // the fast executor's description after the steps (ISA, conv algorithm)
  int64_t steps_compared = 0;    // one by one; fewer than the case's steps when the reference's loss stops
                                 // being finite (fp32, mixed_bf16: where `pipec run` would stop) or a weight
                                 // or moving statistic overflows
  bool stopped_nonfinite = false;
  /// Non-empty when a witness's trajectory stopped being finite where the reference's did not: rounding
  /// alone can end the run, so the trajectory was not checked (every step still was). Says which and where.
  std::string trajectory_unbounded;
  /// When a step's check failed: the same step on the reference executor in f64 (the graph made f64 by
  /// with_float_dtype, from the same state), and how far each f32 executor is from it there.
  std::string triage;
  /// Per check, the largest (measured / bound) seen: 1 is the bound, above fails.
  std::map<std::string, double> worst;
};

/// A change made to the fast executor's results, for the harness's self-check: each must fail the case
/// (so the harness cannot pass by comparing nothing).
struct Perturbation {
  enum class Kind { None, Loss, Gradient, Update, Inference };
  Kind kind = Kind::None;
  /// Loss: the loss times (1 + amount); Gradient: the first parameter's gradient times (1 + amount) on
  /// the first step; Update: one weight one ulp further after the first step's update; Inference: the
  /// inference graph's output times (1 + amount).
  double amount = 0;
};

/// Runs both executors on `t` with the case's data (by field: steps x batch rows) from the weights in
/// `init_path` (loaded as `pipec run --init` loads them).
CaseOutcome compare_training(const TrainProgram& t, const std::map<std::string, Tensor>& data,
                             const std::string& init_path, const CaseSettings& s, const Bounds& b,
                             const Perturbation& perturb = {});

}  // namespace pipec::train_difftest
