// The floor of the image benchmarks: libjpeg-turbo (or libpng) decoding the benchmark's files and
// nothing else, through pipec's decoder (runtime/image), on N threads, from bytes already in memory. No
// reading, no crop, no plan: the work a pipeline over these files cannot avoid when it decodes whole
// images. Prints images/s on stdout (one number; details on stderr).
//
//   decode_alone GLOB... [--threads N] [--rounds R]
//
// Build (from the repository root, after building pipec_runtime in build/):
//   mkdir -p build/bench && g++ -std=c++20 -O2 -DNDEBUG -I. bench/images/decode_alone.cpp
//       build/runtime/libpipec_runtime.a -lfmt -ljpeg -lpng -lz -lpthread -o build/bench/decode_alone
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/image/jpeg_decoder.h"
#include "runtime/image/png_decoder.h"
#include "runtime/image/sniff.h"
#include "runtime/io/file_glob.h"

int main(int argc, char** argv) {
  using namespace pipec;
  int threads = 2, rounds = 3;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else
      for (auto& f : expand_glob(argv[i])) files.push_back(f);
  }
  std::vector<std::string> data;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    data.push_back(ss.str());
  }
  if (data.empty()) {
    std::fprintf(stderr, "decode_alone: no files\n");
    return 2;
  }
  std::atomic<int64_t> next{0};
  const int64_t total = static_cast<int64_t>(data.size()) * rounds;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      DecodeOptions o;
      for (int64_t i; (i = next.fetch_add(1)) < total;) {
        const std::string& d = data[static_cast<size_t>(i) % data.size()];
        Tensor img = sniff_image_format(d) == ImageFormat::Png ? decode_png_image(d, o) : decode_jpeg_image(d, o);
        if (img.num_elements() == 0) std::abort();
      }
    });
  for (auto& t : pool) t.join();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "decode_alone: %lld images in %.3f s on %d threads\n", static_cast<long long>(total), s,
               threads);
  std::printf("%.1f\n", static_cast<double>(total) / s);
  return 0;
}
