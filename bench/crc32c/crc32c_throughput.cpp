// CRC32C throughput of each implementation (runtime/io/crc32c.h), in GB/s, over buffers of the sizes
// TFRecord checksums: 8-byte length fields, records of a few hundred bytes (the chess positions are
// ~250), image records of tens of KiB, and large blocks. "one chain" is the single serial chain of
// `crc32` instructions (what crc32c_extend used before the three-chain version); "three chains" is
// what crc32c_extend runs on CPUs with SSE4.2 and PCLMULQDQ now.
//
//   build/bench/crc32c_throughput [MIN_MS]      # default 200 ms per cell, best of 5 repetitions
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "runtime/io/crc32c.h"

namespace {

using Fn = uint32_t (*)(uint32_t, const void*, size_t);

// Bytes per second of `fn` over buffers of `size` bytes (consecutive, unaligned by 1, in cache for
// the small sizes), the best of several repetitions each lasting at least `min_ms`.
double throughput(Fn fn, const std::vector<uint8_t>& data, size_t size, double min_ms, uint32_t& sink) {
  const size_t slots = std::max<size_t>(1, std::min<size_t>(64, (data.size() - 1) / size));
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    size_t calls = 0;
    const auto start = std::chrono::steady_clock::now();
    double ms = 0;
    do {
      for (int k = 0; k < 256; ++k, ++calls) sink ^= fn(sink, data.data() + 1 + (calls % slots) * size, size);
      ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    } while (ms < min_ms);
    best = std::max(best, static_cast<double>(calls * size) / (ms * 1e-3));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const double min_ms = argc > 1 ? std::atof(argv[1]) : 200;
  std::vector<uint8_t> data((1 << 20) + 64);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 9));
  std::vector<std::pair<const char*, Fn>> fns{{"portable (tables)", pipec::crc32c_extend_portable}};
  if (pipec::crc32c_have_sse42()) fns.push_back({"sse4.2 one chain", pipec::crc32c_extend_sse42});
  if (pipec::crc32c_have_sse42_clmul()) fns.push_back({"sse4.2 three chains", pipec::crc32c_extend_sse42_3way});
  if (fns.size() < 3) std::printf("(this CPU lacks SSE4.2 or PCLMULQDQ: not every row runs)\n");
  const size_t sizes[] = {8, 64, 250, 1024, 4096, 65536, 1 << 20};
  std::printf("CRC32C throughput, GB/s (best of 5 x %.0f ms per cell)\n\n", min_ms);
  std::printf("| %-20s |", "bytes per call");
  for (size_t s : sizes) std::printf(" %8zu |", s);
  std::printf("\n|----------------------|");
  for (size_t i = 0; i < std::size(sizes); ++i) std::printf("----------|");
  std::printf("\n");
  uint32_t sink = 0;
  std::vector<std::vector<double>> rows;
  for (auto [name, fn] : fns) {
    std::printf("| %-20s |", name);
    rows.emplace_back();
    for (size_t s : sizes) {
      rows.back().push_back(throughput(fn, data, s, min_ms, sink) / 1e9);
      std::printf(" %8.2f |", rows.back().back());
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  if (rows.size() == 3) {
    std::printf("| %-20s |", "three / one chain");
    for (size_t i = 0; i < std::size(sizes); ++i) std::printf(" %7.2fx |", rows[2][i] / rows[1][i]);
    std::printf("\n");
  }
  volatile uint32_t keep = sink;  // the results are used, so no call can be optimized away
  (void)keep;
  return 0;
}
