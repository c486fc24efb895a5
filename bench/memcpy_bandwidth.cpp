// Memory-copy bandwidth probe: how many bytes per second memcpy writes on this machine, the ceiling any
// pipeline that writes its output batches can approach. bench/chess/run.sh compares pipec's output
// bytes per second with it.
//
//   memcpy_bandwidth [MEGABYTES] [THREADS]     # default 256 MiB buffers, 1 thread
//
// Copies a MEGABYTES buffer (far larger than the caches) into another, repeatedly, with THREADS threads
// each copying its own slice; prints the best of the repetitions as bytes written per second (one
// number on stdout; details on stderr).
//
// Build: g++ -std=c++20 -O2 bench/memcpy_bandwidth.cpp -lpthread -o build/bench/memcpy_bandwidth
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  size_t mb = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  if (mb == 0 || threads < 1) {
    std::fprintf(stderr, "usage: memcpy_bandwidth [MEGABYTES > 0] [THREADS >= 1]\n");
    return 2;
  }
  size_t bytes = mb << 20;
  std::vector<char> src(bytes), dst(bytes);
  // Touch every page first, so the timing sees copies, not page faults.
  std::memset(src.data(), 1, bytes);
  std::memset(dst.data(), 2, bytes);
  double best = 0;
  for (int rep = 0; rep < 7; ++rep) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    size_t slice = bytes / static_cast<size_t>(threads);
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        size_t off = slice * static_cast<size_t>(t);
        size_t n = t + 1 == threads ? bytes - off : slice;
        std::memcpy(dst.data() + off, src.data() + off, n);
      });
    for (auto& th : pool) th.join();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(bytes) / secs);
  }
  std::fprintf(stderr, "memcpy %zu MiB x 7, %d thread(s): best %.2f GB/s written\n", mb, threads, best / 1e9);
  std::printf("%.0f\n", best);
  return dst[bytes / 2] == 1 ? 0 : 1;
}
