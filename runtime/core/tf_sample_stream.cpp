#include "runtime/core/tf_sample_stream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "runtime/core/philox.h"

namespace pipec {

namespace {

// TensorFlow's DEFAULT_GRAPH_SEED: the first seed of an op whose seed is set when no global seed is.
constexpr uint64_t kDefaultGraphSeed = 87654321;
// stateless_random_ops' fixed key, which the seed pair is scrambled with.
constexpr PhiloxKey kStatelessKey = {0x3ec8f720, 0x02461e29};

// TensorFlow's Uint64ToDouble: 20 bits of x0 and all of x1 as the mantissa of a double in [1, 2), less 1.
double u64_to_double(uint32_t x0, uint32_t x1) {
  const uint64_t mantissa = (static_cast<uint64_t>(x0 & 0xfffffu) << 32) | x1;
  const uint64_t bits = (uint64_t{1023} << 52) | mantissa;
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d - 1.0;
}

// The uniform double in [0, 1) that choice number `i` scales by the weights' total.
double choice_uniform(uint64_t seed2, uint64_t i) {
  // Dataset.random's u32 numbers 2i and 2i + 1: words 2 * (i % 2) and the next of block i / 2.
  const uint64_t block = i / 2;
  const PhiloxCounter random_counter = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                        static_cast<uint32_t>(seed2), static_cast<uint32_t>(seed2 >> 32)};
  const PhiloxKey random_key = {static_cast<uint32_t>(kDefaultGraphSeed),
                                static_cast<uint32_t>(kDefaultGraphSeed >> 32)};
  const PhiloxCounter words = philox4x32_10(random_counter, random_key);
  const uint32_t a = words[2 * (i % 2)], b = words[2 * (i % 2) + 1];
  // stateless_multinomial's key and counter from the seed pair [a, b] (each a u32 held in an int64).
  const PhiloxCounter mix = philox4x32_10({a, 0, b, 0}, kStatelessKey);
  const PhiloxCounter draw = philox4x32_10({0, 0, mix[2], mix[3]}, {mix[0], mix[1]});
  return u64_to_double(draw[0], draw[1]);
}

// The dataset a uniform `u` picks among the running sums `cdf`: d * total rounds to total itself with a
// chance of about 2^-53, where TensorFlow would name no dataset: the last one is taken then.
int64_t pick(const std::vector<double>& cdf, double u) {
  const auto k = std::upper_bound(cdf.begin(), cdf.end(), u * cdf.back()) - cdf.begin();
  return std::min<int64_t>(k, static_cast<int64_t>(cdf.size()) - 1);
}

}  // namespace

uint64_t TfSampleStream::truncated_seed(int64_t seed) {
  constexpr int64_t kMaxInt32 = 2147483647;
  const int64_t r = seed % kMaxInt32;
  return static_cast<uint64_t>(r < 0 ? r + kMaxInt32 : r);
}

TfSampleStream::TfSampleStream(const std::vector<float>& weights, int64_t seed) : seed2_(truncated_seed(seed)) {
  if (weights.empty()) throw std::invalid_argument("sample_from: no dataset to choose from");
  std::vector<float> logits;
  float most = std::numeric_limits<float>::lowest();
  for (float w : weights) {
    if (!(w > 0) || !std::isfinite(w)) throw std::invalid_argument("sample_from: a weight is not positive and finite");
    logits.push_back(std::log(w));
    most = std::max(most, logits.back());
  }
  double total = 0;
  for (float l : logits) {
    total += std::exp(static_cast<double>(l) - static_cast<double>(most));
    cdf_.push_back(total);
  }
}

int64_t TfSampleStream::choice(uint64_t i) const { return pick(cdf_, choice_uniform(seed2_, i)); }

std::optional<int64_t> TfSampleStream::choice_with(const std::vector<float>& weights, uint64_t seed2, uint64_t i) {
  // TensorFlow's multinomial: the largest finite logit (in f32), then exp(logit - it) summed over the
  // finite logits only; a logit that is not finite adds nothing, so it is never chosen.
  std::vector<float> logits;
  float most = std::numeric_limits<float>::lowest();
  bool any = false;
  for (float w : weights) {
    logits.push_back(std::log(w));
    if (!std::isfinite(logits.back())) continue;
    most = std::max(most, logits.back());
    any = true;
  }
  if (!any) return std::nullopt;
  std::vector<double> cdf;
  double total = 0;
  for (float l : logits) {
    if (std::isfinite(l)) total += std::exp(static_cast<double>(l) - static_cast<double>(most));
    cdf.push_back(total);
  }
  return pick(cdf, choice_uniform(seed2, i));
}

}  // namespace pipec
