#include "runtime/core/philox.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

namespace pipec {

namespace {

constexpr uint32_t kMul0 = 0xD2511F53;
constexpr uint32_t kMul1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85;  // sqrt(3) - 1

inline PhiloxCounter philox_round(const PhiloxCounter& c, const PhiloxKey& k) {
  const uint64_t p0 = uint64_t{kMul0} * c[0];
  const uint64_t p1 = uint64_t{kMul1} * c[2];
  const auto hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
  const auto hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  counter = philox_round(counter, key);
  for (int r = 1; r < 10; ++r) {
    // The key schedule is a Weyl sequence: bumped between rounds, not before the first.
    key[0] += kWeyl0;
    key[1] += kWeyl1;
    counter = philox_round(counter, key);
  }
  return counter;
}

PhiloxKey RandomStream::derive_key(uint64_t seed, uint64_t op_id, uint64_t epoch) {
  const PhiloxCounter in{static_cast<uint32_t>(op_id), static_cast<uint32_t>(op_id >> 32),
                         static_cast<uint32_t>(epoch >> 32), kKeyDomain};
  const PhiloxCounter out = philox4x32_10(in, {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  return {out[0], out[1]};
}

RandomStream::RandomStream(uint64_t seed, uint64_t op_id, uint64_t element_index, uint64_t epoch)
    : key_(derive_key(seed, op_id, epoch)),
      counter_{static_cast<uint32_t>(element_index), static_cast<uint32_t>(element_index >> 32),
               static_cast<uint32_t>(epoch), 0} {}

RandomStream::RandomStream(const PhiloxKey& key, uint64_t element_index, uint64_t epoch)
    : key_(key),
      counter_{static_cast<uint32_t>(element_index), static_cast<uint32_t>(element_index >> 32),
               static_cast<uint32_t>(epoch), 0} {}

void RandomStream::refill() {
  if (counter_[3] == std::numeric_limits<uint32_t>::max()) {
    // Wrapping would silently repeat the stream from block 0.
    throw std::length_error("RandomStream: exhausted 2^32 blocks for one element");
  }
  block_ = philox4x32_10(counter_, key_);
  ++counter_[3];
  used_ = 0;
}

uint32_t RandomStream::next_u32() {
  if (used_ == 4) refill();
  return block_[used_++];
}

uint64_t RandomStream::next_u64() {
  const uint64_t lo = next_u32();
  const uint64_t hi = next_u32();
  return lo | (hi << 32);
}

float RandomStream::uniform_float() { return static_cast<float>(next_u32() >> 8) * 0x1.0p-24f; }

double RandomStream::uniform_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

int64_t RandomStream::uniform_int(int64_t lo, int64_t hi) {
  if (lo > hi) throw std::invalid_argument("RandomStream::uniform_int: lo > hi");
  // Work in unsigned arithmetic: hi - lo can exceed INT64_MAX.
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);  // n - 1
  uint64_t offset;
  if (span <= std::numeric_limits<uint32_t>::max()) {
    const uint64_t n = span + 1;  // 1 .. 2^32
    if (n == (uint64_t{1} << 32)) {
      offset = next_u32();
    } else {
      // 2^32 mod n values at the bottom would give the low residues one extra preimage; skip them.
      const auto n32 = static_cast<uint32_t>(n);
      const uint32_t reject_below = static_cast<uint32_t>(-n32) % n32;
      uint32_t x;
      do x = next_u32();
      while (x < reject_below);
      offset = x % n32;
    }
  } else if (span == std::numeric_limits<uint64_t>::max()) {
    offset = next_u64();
  } else {
    const uint64_t n = span + 1;
    const uint64_t reject_below = (0 - n) % n;  // 2^64 mod n
    uint64_t x;
    do x = next_u64();
    while (x < reject_below);
    offset = x % n;
  }
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + offset);
}

double RandomStream::normal(double mean, double stddev) {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return mean + stddev * spare_normal_;
  }
  // u1 in (0, 1] so log(u1) is finite.
  const double u1 = 1.0 - uniform_double();
  const double u2 = uniform_double();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * std::numbers::pi * u2;
  spare_normal_ = r * std::sin(theta);
  has_spare_normal_ = true;
  return mean + stddev * (r * std::cos(theta));
}

}  // namespace pipec
