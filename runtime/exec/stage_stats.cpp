#include "runtime/exec/stage_stats.h"

#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

namespace pipec {

StageStatsSnapshot StageStats::snapshot() const {
  return {in_.load(std::memory_order_relaxed),           out_.load(std::memory_order_relaxed),
          busy_ns_.load(std::memory_order_relaxed),      bytes_.load(std::memory_order_relaxed),
          task_ns_.load(std::memory_order_relaxed),      packed_tokens_.load(std::memory_order_relaxed),
          packed_slots_.load(std::memory_order_relaxed), bucket_tokens_.load(std::memory_order_relaxed),
          bucket_slots_.load(std::memory_order_relaxed), plain_tokens_.load(std::memory_order_relaxed),
          plain_slots_.load(std::memory_order_relaxed),  plain_batch_.load(std::memory_order_relaxed),
          inline_chunks_.load(std::memory_order_relaxed)};
}

StageStats::BusyTimer::~BusyTimer() {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_);
  stats_.add_busy_ns(static_cast<uint64_t>(ns.count()));
}

std::optional<uint64_t> parse_proc_status_kb(const std::string& status_text, const std::string& key) {
  std::istringstream in(status_text);
  std::string line;
  const std::string prefix = key + ":";
  while (std::getline(in, line)) {
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    std::istringstream fields(line.substr(prefix.size()));
    uint64_t value = 0;
    std::string unit;
    if (!(fields >> value)) return std::nullopt;
    fields >> unit;
    // The kernel always reports these in kB (KiB); anything else means a format we don't know.
    if (unit != "kB") return std::nullopt;
    return value * 1024;
  }
  return std::nullopt;
}

namespace {

uint64_t read_status_kb(const std::string& key) {
  std::ifstream f("/proc/self/status");
  if (!f) return 0;
  std::stringstream text;
  text << f.rdbuf();
  return parse_proc_status_kb(text.str(), key).value_or(0);
}

}  // namespace

uint64_t peak_rss_bytes() { return read_status_kb("VmHWM"); }
uint64_t current_rss_bytes() { return read_status_kb("VmRSS"); }

std::string format_thousands(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string format_duration(double seconds) {
  if (!(seconds > 0)) seconds = 0;  // also maps NaN to 0
  const auto total = static_cast<uint64_t>(std::llround(seconds));
  const uint64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  if (h > 0) return fmt::format("{}:{:02}:{:02}", h, m, s);
  return fmt::format("{}:{:02}", m, s);
}

std::string format_byte_rate(double bytes_per_second) {
  if (!(bytes_per_second > 0)) bytes_per_second = 0;
  static constexpr const char* kUnits[] = {"KB/s", "MB/s", "GB/s", "TB/s"};
  if (bytes_per_second < 1000) return fmt::format("{:.0f} B/s", bytes_per_second);
  double v = bytes_per_second / 1000;
  size_t unit = 0;
  // Switch units at 999.95 rather than 1000 so rounding never prints "1000.0 KB/s".
  while (v >= 999.95 && unit + 1 < std::size(kUnits)) {
    v /= 1000;
    ++unit;
  }
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::string ProgressLine::format() const {
  const double secs = elapsed_seconds > 0 ? elapsed_seconds : 0;
  const double ex_rate = secs > 0 ? static_cast<double>(examples) / secs : 0;
  const double byte_rate = secs > 0 ? static_cast<double>(bytes) / secs : 0;
  std::string line =
      fmt::format("batches {}  examples {}  {} ex/s  {}  elapsed {}", format_thousands(batches),
                  format_thousands(examples), format_thousands(static_cast<uint64_t>(std::llround(ex_rate))),
                  format_byte_rate(byte_rate), format_duration(secs));
  if (total_examples) {
    if (examples >= *total_examples) {
      line += "  ETA 0:00";
    } else if (ex_rate > 0) {
      line += "  ETA " + format_duration(static_cast<double>(*total_examples - examples) / ex_rate);
    } else {
      line += "  ETA ?";
    }
  }
  return line;
}

}  // namespace pipec
