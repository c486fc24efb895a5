#include "runtime/exec/stage_stats.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

namespace pipec {
namespace {

using namespace std::chrono_literals;

TEST(StageStats, ConcurrentCountsAreExact) {
  StageStats stats("decode");
  EXPECT_EQ(stats.name(), "decode");
  constexpr int kThreads = 4, kIters = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIters; ++i) {
        stats.add_in();
        stats.add_out(2);
        stats.add_bytes(3);
        stats.add_busy_ns(5);
      }
    });
  }
  for (auto& t : threads) t.join();
  const StageStatsSnapshot s = stats.snapshot();
  EXPECT_EQ(s.elements_in, uint64_t{kThreads} * kIters);
  EXPECT_EQ(s.elements_out, 2 * uint64_t{kThreads} * kIters);
  EXPECT_EQ(s.bytes, 3 * uint64_t{kThreads} * kIters);
  EXPECT_EQ(s.busy_ns, 5 * uint64_t{kThreads} * kIters);
}

TEST(StageStats, BusyTimerAddsElapsedTime) {
  StageStats stats("map");
  {
    StageStats::BusyTimer timer(stats);
    std::this_thread::sleep_for(20ms);
  }
  const uint64_t busy = stats.snapshot().busy_ns;
  EXPECT_GE(busy, 20'000'000u);
  EXPECT_LT(busy, 5'000'000'000u);
}

TEST(StageStats, ParseProcStatus) {
  const std::string text =
      "Name:\tpipec\nVmPeak:\t  200000 kB\nVmHWM:\t   12345 kB\nVmRSS:\t    6789 kB\nThreads:\t3\n";
  EXPECT_EQ(parse_proc_status_kb(text, "VmHWM"), 12345u * 1024);
  EXPECT_EQ(parse_proc_status_kb(text, "VmRSS"), 6789u * 1024);
  EXPECT_EQ(parse_proc_status_kb(text, "VmSwap"), std::nullopt);
  EXPECT_EQ(parse_proc_status_kb(text, "Vm"), std::nullopt);       // whole key only
  EXPECT_EQ(parse_proc_status_kb(text, "Threads"), std::nullopt);  // no kB unit
}

TEST(StageStats, PeakRssCoversLiveAllocation) {
  constexpr size_t kSize = 64 << 20;
  std::vector<char> buf(kSize);
  for (size_t i = 0; i < kSize; i += 4096) buf[i] = static_cast<char>(i);  // fault every page in
  const uint64_t current = current_rss_bytes();
  const uint64_t peak = peak_rss_bytes();
  EXPECT_GE(current, kSize);
  EXPECT_GE(peak, current);
  EXPECT_EQ(buf[4096], static_cast<char>(4096));
}

TEST(ProgressLine, FormatThousands) {
  EXPECT_EQ(format_thousands(0), "0");
  EXPECT_EQ(format_thousands(999), "999");
  EXPECT_EQ(format_thousands(1000), "1,000");
  EXPECT_EQ(format_thousands(631808), "631,808");
  EXPECT_EQ(format_thousands(1234567), "1,234,567");
  EXPECT_EQ(format_thousands(std::numeric_limits<uint64_t>::max()), "18,446,744,073,709,551,615");
}

TEST(ProgressLine, FormatDuration) {
  EXPECT_EQ(format_duration(0), "0:00");
  EXPECT_EQ(format_duration(7.4), "0:07");
  EXPECT_EQ(format_duration(59.6), "1:00");
  EXPECT_EQ(format_duration(754), "12:34");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(100 * 3600), "100:00:00");
  EXPECT_EQ(format_duration(-5), "0:00");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::quiet_NaN()), "0:00");
}

TEST(ProgressLine, FormatByteRate) {
  EXPECT_EQ(format_byte_rate(0), "0 B/s");
  EXPECT_EQ(format_byte_rate(512), "512 B/s");
  EXPECT_EQ(format_byte_rate(1500), "1.5 KB/s");
  EXPECT_EQ(format_byte_rate(24.1e6), "24.1 MB/s");
  EXPECT_EQ(format_byte_rate(999'960), "1.0 MB/s");  // not "1000.0 KB/s"
  EXPECT_EQ(format_byte_rate(3e9), "3.0 GB/s");
}

TEST(ProgressLine, FullLineWithEta) {
  ProgressLine p;
  p.batches = 1234;
  p.examples = 631808;
  p.elapsed_seconds = 12.1261;   // 52,103.15 ex/s
  p.bytes = 292'239'010;         // 24.1 MB/s
  p.total_examples = 2'194'900;  // 1,563,092 left: 29.99995 s
  EXPECT_EQ(p.format(), "batches 1,234  examples 631,808  52,103 ex/s  24.1 MB/s  elapsed 0:12  ETA 0:30");
}

TEST(ProgressLine, NoTotalMeansNoEta) {
  ProgressLine p;
  p.batches = 10;
  p.examples = 640;
  p.bytes = 1000;
  p.elapsed_seconds = 2;
  EXPECT_EQ(p.format(), "batches 10  examples 640  320 ex/s  500 B/s  elapsed 0:02");
}

TEST(ProgressLine, EdgeCases) {
  ProgressLine p;
  EXPECT_EQ(p.format(), "batches 0  examples 0  0 ex/s  0 B/s  elapsed 0:00");
  p.total_examples = 100;
  EXPECT_EQ(p.format(), "batches 0  examples 0  0 ex/s  0 B/s  elapsed 0:00  ETA ?");
  p.examples = 150;  // overshoot (e.g. total was an estimate)
  p.elapsed_seconds = 3;
  EXPECT_EQ(p.format(), "batches 0  examples 150  50 ex/s  0 B/s  elapsed 0:03  ETA 0:00");
}

}  // namespace
}  // namespace pipec
