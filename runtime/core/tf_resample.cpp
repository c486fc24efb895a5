#include "runtime/core/tf_resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/core/philox.h"

namespace pipec {

namespace {

// The same DEFAULT_GRAPH_SEED that keys Dataset.random (tf_sample_stream.cpp): an op seed without a
// global one is the pair (87654321, seed mod (2^31 - 1)).
constexpr uint64_t kDefaultGraphSeed = 87654321;
// GuardedPhiloxRandom::ReserveRandomOutputs(n, 256): each call of the op skips 256 blocks per output.
constexpr uint64_t kBlocksPerCall = 256;

}  // namespace

TfAcceptance tf_acceptance(const std::vector<float>& initial, const std::vector<float>& target) {
  std::vector<float> ratio(target.size());
  for (size_t i = 0; i < target.size(); ++i) ratio[i] = target[i] / (initial[i] + std::numeric_limits<float>::min());
  const float most = *std::max_element(ratio.begin(), ratio.end());
  const float least = *std::min_element(ratio.begin(), ratio.end());
  TfAcceptance out;
  out.original = least;
  // All ratios equal: 0 / 0, NaN, as in TensorFlow; no draw is below it, so the branch keeps nothing
  // (and m = 1 never picks it).
  for (float r : ratio) out.accept.push_back((r - least) / (most - least));
  return out;
}

std::vector<float> tf_estimated_distribution(const std::vector<int64_t>& counts) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  std::vector<float> dist;
  for (int64_t c : counts) dist.push_back(static_cast<float>(static_cast<double>(c) / static_cast<double>(total)));
  return dist;
}

float tf_static_original(const std::vector<float>& initial, const std::vector<float>& target) {
  float least = std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < target.size(); ++i) {
    const float r = target[i] / initial[i];
    if (std::isnan(r)) return r;
    least = std::min(least, r);
  }
  return least;
}

float tf_stateful_uniform(uint64_t seed2, uint64_t call) {
  const uint64_t block = call * kBlocksPerCall;
  const PhiloxCounter words =
      philox4x32_10({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), static_cast<uint32_t>(seed2),
                     static_cast<uint32_t>(seed2 >> 32)},
                    {static_cast<uint32_t>(kDefaultGraphSeed), static_cast<uint32_t>(kDefaultGraphSeed >> 32)});
  // TensorFlow's Uint32ToFloat: 23 random bits as the mantissa of a float in [1, 2), less 1.
  const uint32_t bits = 0x3f800000u | (words[0] & 0x7fffffu);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f - 1.0f;
}

}  // namespace pipec
