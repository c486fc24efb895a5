// What the JPEG window index costs and saves per image, one thread, bytes in memory: a full decode, a
// cropping decode of a random 256x256 window (what crop pushdown does every epoch without the index),
// building the index (the first epoch's extra work), and decoding the same window from the index
// (every later epoch). Prints a table of milliseconds per image (median of ROUNDS passes).
//
//   jpeg_index_cost GLOB... [--rounds R]
//
// Build (from the repository root, after building pipec_runtime in build/; bench/images/run.sh does):
//   g++ -std=c++20 -O2 -DNDEBUG -I. bench/images/jpeg_index_cost.cpp build/runtime/libpipec_runtime.a
//       -lfmt -ljpeg -lpng -lz -lpthread -o build/bench/jpeg_index_cost
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/core/philox.h"
#include "runtime/image/crop_window.h"
#include "runtime/image/jpeg_decoder.h"
#include "runtime/image/jpeg_window_index.h"
#include "runtime/io/file_glob.h"

namespace {

using Clock = std::chrono::steady_clock;

// Median over rounds of the mean milliseconds per file.
double per_image_ms(size_t files, int rounds, const std::function<void(size_t)>& work) {
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = Clock::now();
    for (size_t i = 0; i < files; ++i) work(i);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / static_cast<double>(files));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pipec;
  int rounds = 3;
  std::vector<std::string> data;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
      continue;
    }
    for (const auto& f : expand_glob(argv[i])) {
      std::ifstream in(f, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      data.push_back(ss.str());
    }
  }
  if (data.empty()) {
    std::fprintf(stderr, "jpeg_index_cost: no files\n");
    return 2;
  }
  std::vector<std::shared_ptr<const JpegWindowIndex>> index(data.size());
  int direct = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    index[i] = JpegWindowIndex::build(data[i], kDefaultMaxPixels);
    if (!index[i]) {
      std::fprintf(stderr, "jpeg_index_cost: file %zu cannot be indexed\n", i);
      return 1;
    }
    direct += index[i]->rewritten_directly();
  }
  auto window_of = [](size_t i) {
    DecodeOptions o;
    o.window = [i](int64_t h, int64_t w, CropWindow& win, std::string&) {
      RandomStream st(1, 0, i, 0);
      win = random_crop_window(h, w, std::min<int64_t>(h, 256), std::min<int64_t>(w, 256), st);
      return true;
    };
    return o;
  };
  size_t file_bytes = 0, index_bytes = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    file_bytes += data[i].size();
    index_bytes += index[i]->memory_bytes();
  }
  const double full = per_image_ms(data.size(), rounds, [&](size_t i) { decode_jpeg_image(data[i], {}); });
  const double crop = per_image_ms(data.size(), rounds, [&](size_t i) { decode_jpeg_image(data[i], window_of(i)); });
  const double build =
      per_image_ms(data.size(), rounds, [&](size_t i) { JpegWindowIndex::build(data[i], kDefaultMaxPixels); });
  const double cut = per_image_ms(data.size(), rounds, [&](size_t i) { decode_jpeg_window(*index[i], window_of(i)); });
  std::printf("%zu files (%d rewritten directly), index %.1f MB for %.1f MB of files, median of %d rounds, 1 thread\n",
              data.size(), direct, index_bytes / 1e6, file_bytes / 1e6, rounds);
  std::printf("%-44s %10s\n", "work per image", "ms");
  std::printf("%-44s %10.3f\n", "full decode", full);
  std::printf("%-44s %10.3f\n", "cropping decode, 256x256 window", crop);
  std::printf("%-44s %10.3f\n", "index build (first epoch, extra)", build);
  std::printf("%-44s %10.3f\n", "same window from the index (later epochs)", cut);
  return 0;
}
