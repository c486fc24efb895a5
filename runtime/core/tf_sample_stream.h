// The dataset choices of tf.data's sample_from_datasets, reproduced: which of n datasets element i of
// its selector picks, for given weights and seed, equal to what TensorFlow draws.
//
// tf.data builds the selector as `Dataset.random(seed).batch(2).map(stateless_multinomial(log(weights),
// 1, seed = pair))`: every choice is a categorical draw whose seed is the next pair of Dataset.random's
// values. Both streams are Philox4x32-10, and so is stateless_multinomial's: the i-th choice is a pure
// function of (weights, seed, i), which is why a checkpoint needs only the number of choices made.
//
//   Dataset.random(seed): TensorFlow's seeds (87654321, seed mod (2^31 - 1)) when no global seed is
//     set; u32 number k is word k % 4 of philox({k / 4 lo, k / 4 hi, seed2 lo, seed2 hi}, key = seed).
//     Each value is one u32 (never more than 2^32 - 1).
//   stateless_multinomial(logits, 1, [a, b]): key {0x3ec8f720, 0x02461e29} and counter {a lo, a hi, b lo,
//     b hi} are scrambled by one Philox block m into key {m0, m1}, counter {0, 0, m2, m3}; the first
//     block of that stream gives two u32, made a double in [0, 1) from 52 of their bits; times the sum of
//     exp(logit - max logit) (in double), its upper bound in the running sums is the choice.
//   The logits are log(weight) in f32 (TensorFlow's weights are f32 for Python floats).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace pipec {

class TfSampleStream {
 public:
  /// `weights`: one positive, finite weight per dataset that can be chosen (tf.data drops those of 0
  /// before drawing). `seed`: sample_from_datasets' seed argument.
  TfSampleStream(const std::vector<float>& weights, int64_t seed);

  /// The dataset choice number `i` picks, in [0, weights.size()).
  int64_t choice(uint64_t i) const;

  /// TensorFlow's op-level seed for `seed` (Python's `seed % (2**31 - 1)`, never negative).
  static uint64_t truncated_seed(int64_t seed);

  /// Choice number `i` of a selector whose weights change from draw to draw (sample_from_datasets given a
  /// dataset of weights, as rejection_resample's mixing is): `weights` are the ones of draw i, `seed2`
  /// truncated_seed(seed). A weight of 0 (its logit -inf), negative or not finite (NaN) is never chosen,
  /// as TensorFlow's multinomial skips logits that are not finite; nullopt when no weight can be.
  static std::optional<int64_t> choice_with(const std::vector<float>& weights, uint64_t seed2, uint64_t i);

 private:
  uint64_t seed2_;
  std::vector<double> cdf_;  // running sums of exp(logit - max logit)
};

}  // namespace pipec
