// The arithmetic of tf.data's rejection_resample, reproduced in TensorFlow's precisions so that the
// stage (runtime/exec/stages/stage_rejection_resample.cpp) keeps and mixes the same elements:
//
//   acceptance: ratio_i = target_i / (initial_i + FLT_MIN), m = min ratio, a_i = (ratio_i - m) /
//     (max ratio - m), all in f32 (_calculate_acceptance_probs_with_mixing). An element of class c is
//     kept by the filtered branch when a uniform draw u < a_c; the mixing takes the original stream with
//     weight m and the filtered one with weight 1 - m.
//   the estimate, without an initial distribution: counts start at 10 per class and take in 32 classes
//     at a time (every element of batch b = i / 32 counts for element i, the later ones included); the
//     distribution is count / total in f64, then made f32.
//   the uniform draw: the filter's random_uniform([], seed) is the stateful RandomUniform op, a Philox
//     stream keyed by TensorFlow's seed pair (87654321, seed mod (2^31 - 1)) whose every call reserves
//     256 blocks of 128 bits: call n reads word 0 of block 256 n, counter {256 n lo, 256 n hi, seed2 lo,
//     seed2 hi}, made a float as (0x3f800000 | (x & 0x7fffff)) - 1.
#pragma once

#include <cstdint>
#include <vector>

namespace pipec {

/// Per class, the chance that the filtered branch keeps an element of it, and the chance of taking the
/// next element from the original stream instead (TensorFlow's a_i and m).
struct TfAcceptance {
  std::vector<float> accept;
  float original = 0;
};

TfAcceptance tf_acceptance(const std::vector<float>& initial, const std::vector<float>& target);

/// The estimated distribution from the counts seen so far (each starting at the smoothing constant).
std::vector<float> tf_estimated_distribution(const std::vector<int64_t>& counts);

/// What tf.data decides before the run with a given initial distribution: min(target / initial) in f32,
/// without FLT_MIN (numpy's np.min: NaN when any ratio is, 0 / 0). 1: the input unchanged; 0: the
/// filtered branch only; anything else: both branches mixed.
float tf_static_original(const std::vector<float>& initial, const std::vector<float>& target);

/// The uniform float in [0, 1) that call number `call` of the filter's random_uniform([], seed) gives;
/// `seed2` is TfSampleStream::truncated_seed(seed).
float tf_stateful_uniform(uint64_t seed2, uint64_t call);

/// tf.data's batch size and smoothing constant of the estimate.
constexpr int64_t kTfEstimateBatch = 32;
constexpr int64_t kTfEstimateSmoothing = 10;

}  // namespace pipec
