// What the JPEG window index costs and saves per image, one thread, bytes in memory: a full decode, a
// cropping decode of a random 256x256 window (what crop pushdown does every epoch without the index),
// the first epoch with the index (build it, then decode a window from it: the index entropy-decodes
// the rows down to the window and rewrites its MCUs), and the later epochs (another random window
// each, from an index that has served the epochs before). Prints a table of milliseconds per image
// (CPU time, median of ROUNDS passes) and the share of MCUs the index had rewritten by the last epoch.
//
//   jpeg_index_cost GLOB... [--rounds R]
//
// Build (from the repository root, after building pipec_runtime in build/; bench/images/run.sh does):
//   g++ -std=c++20 -O2 -DNDEBUG -I. bench/images/jpeg_index_cost.cpp build/runtime/libpipec_runtime.a
//       -lfmt -ljpeg -lpng -lz -lpthread -o build/bench/jpeg_index_cost
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
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

// Median over rounds of the mean milliseconds per file, in CPU time (the process runs one thread), so
// that other work on the machine does not count.
double per_image_ms(size_t files, int rounds, const std::function<void(size_t)>& work) {
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    const std::clock_t t0 = std::clock();
    for (size_t i = 0; i < files; ++i) work(i);
    ms.push_back(1000.0 * static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC / static_cast<double>(files));
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
  auto window_of = [](size_t i, int epoch) {
    DecodeOptions o;
    o.window = [i, epoch](int64_t h, int64_t w, CropWindow& win, std::string&) {
      RandomStream st(1, static_cast<uint64_t>(epoch), i, 0);
      win = random_crop_window(h, w, std::min<int64_t>(h, 256), std::min<int64_t>(w, 256), st);
      return true;
    };
    return o;
  };
  std::vector<std::shared_ptr<const JpegWindowIndex>> index(data.size());
  int direct = 0;
  size_t file_bytes = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    file_bytes += data[i].size();
    index[i] = JpegWindowIndex::build(data[i], kDefaultMaxPixels);
    if (!index[i]) {
      std::fprintf(stderr, "jpeg_index_cost: file %zu cannot be indexed\n", i);
      return 1;
    }
    direct += index[i]->rewritten_directly();
  }
  const double full = per_image_ms(data.size(), rounds, [&](size_t i) { decode_jpeg_image(data[i], {}); });
  const double crop = per_image_ms(data.size(), rounds, [&](size_t i) { decode_jpeg_image(data[i], window_of(i, 0)); });
  const double first = per_image_ms(data.size(), rounds, [&](size_t i) {
    auto fresh = JpegWindowIndex::build(data[i], kDefaultMaxPixels);
    if (!fresh || !decode_jpeg_window(*fresh, window_of(i, 0))) std::abort();
  });
  // Epochs 1, 2, ... on the indexes built above (their first window is epoch 0's).
  for (size_t i = 0; i < data.size(); ++i) decode_jpeg_window(*index[i], window_of(i, 0));
  int epoch = 0;
  const double later = per_image_ms(data.size(), rounds * 4, [&](size_t i) {
    if (i == 0) ++epoch;
    if (!decode_jpeg_window(*index[i], window_of(i, epoch))) std::abort();
  });
  size_t held = 0, counted = 0;
  int64_t rewritten = 0, mcus = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    held += index[i]->held_bytes();
    counted += index[i]->memory_bytes();
    rewritten += index[i]->rewritten_mcus();
    mcus += index[i]->mcus();
  }
  std::printf("%zu files (%d rewritten directly), %.1f MB, median of %d rounds, 1 thread\n", data.size(), direct,
              file_bytes / 1e6, rounds);
  std::printf("%-52s %10s\n", "work per image", "CPU ms");
  std::printf("%-52s %10.3f\n", "full decode", full);
  std::printf("%-52s %10.3f\n", "cropping decode, 256x256 window", crop);
  std::printf("%-52s %10.3f\n", "first epoch: index built, window from it", first);
  std::printf("%-52s %10.3f\n", "later epochs: another window from the index", later);
  std::printf("after %d epochs the indexes hold %.1f MB and have rewritten %.0f%% of the MCUs\n", epoch + 1, held / 1e6,
              100.0 * static_cast<double>(rewritten) / static_cast<double>(mcus));
  return 0;
}
