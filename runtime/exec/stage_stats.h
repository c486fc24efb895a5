// Per-stage throughput counters, peak memory, and the one-line progress display.
//
// Counters are relaxed atomics: many worker threads bump them per element, and a reporter thread only
// needs a recent, not a consistent-to-the-nanosecond, view. The progress line is a pure function of
// its inputs so it can be tested without clocks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace pipec {

struct StageStatsSnapshot {
  uint64_t elements_in = 0;
  uint64_t elements_out = 0;
  uint64_t busy_ns = 0;  // summed over threads, so it can exceed wall time
  uint64_t bytes = 0;
  /// Work the stage hands to threads of its own: a map's tasks on the pool, files read ahead. Not in
  /// busy_ns, which counts the thread that pulls from the stage.
  uint64_t task_ns = 0;
  /// pack: the tokens of the rows it handed out, and their slots (rows x length); 0 for other stages.
  uint64_t packed_tokens = 0;
  uint64_t packed_slots = 0;
  /// bucket_by_length: the lengths of the elements of its batches (the length function's values) and
  /// their slots (each batch's rows x its padded length), and the same for padded_batch(batch) over
  /// its input in arrival order, `batch` the largest of its batch sizes: the padding bucketing saved.
  uint64_t bucket_tokens = 0;
  uint64_t bucket_slots = 0;
  uint64_t plain_tokens = 0;
  uint64_t plain_slots = 0;
  int64_t plain_batch = 0;
  /// prefetch: the chunks its consumer pulled through on its own thread, because it had nothing to
  /// overlap with them (runtime/exec/stages/stage_prefetch.cpp); 0 for other stages.
  uint64_t inline_chunks = 0;
  /// All of the stage's work, wherever it ran.
  uint64_t work_ns() const { return busy_ns + task_ns; }
  /// pack's packing efficiency: the share of the slots of its rows that hold tokens (0 with no rows).
  double packing_efficiency() const { return packed_slots ? static_cast<double>(packed_tokens) / packed_slots : 0.0; }
};

/// Counters for one pipeline stage. Thread-safe; the add_* calls are a single relaxed atomic add.
class StageStats {
 public:
  explicit StageStats(std::string name) : name_(std::move(name)) {}
  StageStats(const StageStats&) = delete;
  StageStats& operator=(const StageStats&) = delete;

  const std::string& name() const { return name_; }

  void add_in(uint64_t n = 1) { in_.fetch_add(n, std::memory_order_relaxed); }
  void add_out(uint64_t n = 1) { out_.fetch_add(n, std::memory_order_relaxed); }
  void add_busy_ns(uint64_t ns) { busy_ns_.fetch_add(ns, std::memory_order_relaxed); }
  void add_bytes(uint64_t n) { bytes_.fetch_add(n, std::memory_order_relaxed); }
  void add_task_ns(uint64_t ns) { task_ns_.fetch_add(ns, std::memory_order_relaxed); }
  /// pack handed out rows of `slots` token slots, `tokens` of them filled.
  void add_packed(uint64_t tokens, uint64_t slots) {
    packed_tokens_.fetch_add(tokens, std::memory_order_relaxed);
    packed_slots_.fetch_add(slots, std::memory_order_relaxed);
  }
  /// bucket_by_length made a batch of `tokens` in `slots`.
  void add_bucketed(uint64_t tokens, uint64_t slots) {
    bucket_tokens_.fetch_add(tokens, std::memory_order_relaxed);
    bucket_slots_.fetch_add(slots, std::memory_order_relaxed);
  }
  /// A plain padded_batch(batch) over the same input would have made a batch of `tokens` in `slots`.
  void add_plain_padded(uint64_t tokens, uint64_t slots, int64_t batch) {
    plain_tokens_.fetch_add(tokens, std::memory_order_relaxed);
    plain_slots_.fetch_add(slots, std::memory_order_relaxed);
    plain_batch_.store(batch, std::memory_order_relaxed);
  }
  /// prefetch handed out a chunk its consumer's thread pulled itself.
  void add_inline_chunk() { inline_chunks_.fetch_add(1, std::memory_order_relaxed); }
  /// The stage's output ended (one pass of it is complete): the first time, its elements so far are
  /// the length of a pass.
  void note_end() {
    int64_t unset = -1;
    first_pass_.compare_exchange_strong(unset, static_cast<int64_t>(out_.load(std::memory_order_relaxed)),
                                        std::memory_order_relaxed);
  }
  /// Elements of the stage's first complete pass; -1 while none has ended.
  int64_t first_pass_elements() const { return first_pass_.load(std::memory_order_relaxed); }

  /// Each field is read atomically; the fields together are not one atomic snapshot.
  StageStatsSnapshot snapshot() const;

  /// Adds the lifetime of the timer (steady clock) to the stage's busy time.
  class BusyTimer {
   public:
    explicit BusyTimer(StageStats& stats) : stats_(stats), start_(std::chrono::steady_clock::now()) {}
    ~BusyTimer();
    BusyTimer(const BusyTimer&) = delete;
    BusyTimer& operator=(const BusyTimer&) = delete;

   private:
    StageStats& stats_;
    std::chrono::steady_clock::time_point start_;
  };

 private:
  std::string name_;
  std::atomic<uint64_t> in_{0}, out_{0}, busy_ns_{0}, bytes_{0}, task_ns_{0}, packed_tokens_{0}, packed_slots_{0},
      bucket_tokens_{0}, bucket_slots_{0}, plain_tokens_{0}, plain_slots_{0}, inline_chunks_{0};
  std::atomic<int64_t> plain_batch_{0};
  std::atomic<int64_t> first_pass_{-1};
};

/// Peak resident set size of this process (VmHWM in /proc/self/status), in bytes; 0 if unavailable.
uint64_t peak_rss_bytes();
/// Current resident set size (VmRSS), in bytes; 0 if unavailable.
uint64_t current_rss_bytes();
/// The value of a "Key:   1234 kB" line of a /proc status text, in bytes; nullopt if absent.
std::optional<uint64_t> parse_proc_status_kb(const std::string& status_text, const std::string& key);

/// "1,234,567".
std::string format_thousands(uint64_t n);
/// Whole seconds, rounded to nearest: "0:07", "12:34", "1:02:03" (hours are not wrapped into days).
std::string format_duration(double seconds);
/// Decimal units with one decimal: "512 B/s", "1.5 KB/s", "24.1 MB/s", "3.0 GB/s".
std::string format_byte_rate(double bytes_per_second);

/// One line of run progress, e.g.
///   batches 1,234  examples 631,808  52,103 ex/s  24.1 MB/s  elapsed 0:12  ETA 0:30
/// Rates are averages over the whole elapsed time. The ETA appears only when total_examples is set,
/// and assumes the average rate continues; it is "ETA ?" while nothing has been produced yet.
struct ProgressLine {
  uint64_t batches = 0;
  uint64_t examples = 0;
  uint64_t bytes = 0;
  double elapsed_seconds = 0.0;
  std::optional<uint64_t> total_examples;

  std::string format() const;
};

}  // namespace pipec
