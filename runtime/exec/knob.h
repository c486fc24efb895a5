// One tunable parameter of one stage: a map's chunks in flight, a prefetch's depth, the files a
// tfrecord source reads on threads of their own. A stage registers its parameter when it is built
// (auto_knob) and reads value() each time it decides whether to take more work, so a change made by
// the autotuner (runtime/exec/autotuner.h) takes effect at the stage's next decision. A parameter the
// spec fixes is registered too, with min = max, so the model knows every stage's setting.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "runtime/exec/autotune_model.h"

namespace pipec {

struct RunContext;

class Knob {
 public:
  Knob(int stage, KnobKind kind, int64_t initial, int64_t min, int64_t max)
      : stage_(stage),
        kind_(kind),
        min_(min),
        max_(std::max(min, max)),
        initial_(std::clamp(initial, min, std::max(min, max))),
        value_(initial_) {}

  int stage() const { return stage_; }
  KnobKind kind() const { return kind_; }
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  /// The starting value (the static default the stage would use without a tuner).
  int64_t initial() const { return initial_; }
  /// An `auto` parameter (the tuner may move it); false when the spec fixes it.
  bool tunable() const { return max_ > min_; }

  int64_t value() const { return value_.load(std::memory_order_relaxed); }
  void set(int64_t v) { value_.store(std::clamp(v, min_, max_), std::memory_order_relaxed); }

  /// The bytes of one item the stage buffers (a chunk of results, a chunk, a file's blocks): the
  /// largest seen, which is what one more item is planned to cost.
  void note_item_bytes(uint64_t b) {
    uint64_t cur = item_bytes_.load(std::memory_order_relaxed);
    while (b > cur && !item_bytes_.compare_exchange_weak(cur, b, std::memory_order_relaxed)) {
    }
  }
  uint64_t item_bytes() const { return item_bytes_.load(std::memory_order_relaxed); }

  /// Items the stage holds now (chunks ready in a prefetch's queue, results in a map's window).
  void set_held(int64_t n) { held_.store(n, std::memory_order_relaxed); }
  int64_t held() const { return held_.load(std::memory_order_relaxed); }

  /// For a source's reader: the files open at once (the interleave's cycle; 1 when sequential).
  void set_cycle(int64_t c) { cycle_.store(std::max<int64_t>(1, c), std::memory_order_relaxed); }
  int64_t cycle() const { return cycle_.load(std::memory_order_relaxed); }

  /// Why a parameter that is not tunable has its value, when not because the spec says so.
  void set_fixed_reason(const char* why) { fixed_reason_.store(why, std::memory_order_relaxed); }
  const char* fixed_reason() const { return fixed_reason_.load(std::memory_order_relaxed); }

  /// An `auto` parameter the run fixed (`pipec run --auto-value`) instead of tuning it.
  void set_overridden() { overridden_.store(true, std::memory_order_relaxed); }
  bool overridden() const { return overridden_.load(std::memory_order_relaxed); }

 private:
  const int stage_;
  const KnobKind kind_;
  const int64_t min_, max_, initial_;
  std::atomic<int64_t> value_;
  std::atomic<uint64_t> item_bytes_{0};
  std::atomic<int64_t> held_{0};
  std::atomic<int64_t> cycle_{1};
  // Set when a stage registers the knob (a stage rebuilt for the next epoch sets the same again),
  // read by the tuner's thread.
  std::atomic<const char*> fixed_reason_{nullptr};
  std::atomic<bool> overridden_{false};
};

/// The parameter `kind` of `stage`: made on first use with `initial` in [min, max] (an iterator rebuilt
/// for the next epoch gets the same one, with the value the tuner gave it). Null when the run has no
/// autotuner (then the stage uses `initial`).
Knob* auto_knob(RunContext& ctx, int stage, KnobKind kind, int64_t initial, int64_t min, int64_t max);

/// The chunks a map (or map_batch) keeps in flight: `parallel = N` fixes them at N, `auto` starts at 2
/// per pool thread and is tuned between 1 and 4 per thread. Sets `*window` to the starting value and
/// returns the knob (null without an autotuner).
Knob* map_parallelism_knob(RunContext& ctx, int stage, int64_t* window);

}  // namespace pipec
