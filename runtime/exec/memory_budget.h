// The run's memory budget (`pipec run --memory-budget`, by default half of the machine's memory): the
// bytes held in stage buffers (prefetch queues, map windows, files read ahead, shuffle buffers, caches),
// counted per stage.
//
// Two kinds of holdings:
//  - fixed: what the spec fixes (a shuffle's buffer, a cache's pass, prefetch(N), map(parallel = N))
//    and the first item of every `auto` buffer (what it needs to make progress). Always taken; when the
//    fixed holdings together pass the budget, tuning cannot help and the stage that passed it reports an
//    error (a StageError naming it and its place in the spec).
//  - optional: the further items of `auto` buffers. Granted only when they fit beside everything held
//    and beside the room each fixed buffer may still grow into (its bound minus what it holds), so a
//    shuffle buffer or a cache that fills later never finds its room taken.
// The bytes held therefore never pass the budget as long as each fixed buffer's bound is right: bounds
// come from the plan where element sizes are fixed (runtime/exec/footprint.h) and grow with the largest
// element a stage has seen; a bound not known yet (a cache of unknown length in its first pass) is
// taken as the whole budget, so no optional item is granted until it is known.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace pipec {

class MemoryBudget {
 public:
  static constexpr uint64_t kUnknownBound = UINT64_MAX;

  MemoryBudget(uint64_t limit, size_t stages);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  uint64_t limit() const { return limit_; }

  /// Adds `delta` (negative: frees) to what `stage` holds in fixed buffers. False when the fixed
  /// holdings of all stages together then pass the limit (the bytes are counted all the same: the
  /// caller stops the run with an error naming the stage).
  bool add_fixed(int stage, int64_t delta);
  /// The most `stage`'s fixed buffers may come to hold: raised as a stage learns its element sizes
  /// (never lowered below what it holds). kUnknownBound reserves the whole budget for it.
  void raise_bound(int stage, uint64_t bound);
  /// Marks `stage`'s bound as unknown (kUnknownBound) or known again (then its bound is `bound`).
  void set_bound(int stage, uint64_t bound);

  /// One more item of an `auto` buffer: granted (and counted) when it fits.
  bool try_reserve(int stage, uint64_t bytes);
  /// Counts `bytes` more of optional holdings without asking: an item turned out larger than planned
  /// and is here already.
  void add_optional(int stage, uint64_t bytes);
  /// Frees an optional item granted by try_reserve.
  void release(int stage, uint64_t bytes);

  struct StageUse {
    uint64_t fixed = 0, optional = 0, peak = 0, bound = 0;
  };
  StageUse stage_use(int stage) const;
  /// Bytes held in fixed buffers now.
  uint64_t fixed_total() const;
  /// Bytes held now, and the most held at once during the run.
  uint64_t used() const;
  uint64_t peak() const;
  /// What try_reserve could grant now: the limit less what is held and the room fixed buffers keep.
  uint64_t room() const;
  /// The room fixed buffers may still grow into; kUnknownBound when a bound is unknown.
  uint64_t fixed_room() const;

 private:
  uint64_t room_locked() const;
  void note_peak_locked(int stage);

  const uint64_t limit_;
  mutable std::mutex mu_;
  std::vector<StageUse> stages_;
  uint64_t used_ = 0, peak_ = 0, fixed_total_ = 0;
};

/// "512 MB", "1.5 GB", "12 GB" (decimal units, as the run summary prints sizes).
std::string format_bytes(uint64_t bytes);

/// The default budget: half of the machine's memory (physical pages times page size).
uint64_t default_memory_budget();

}  // namespace pipec
