// One run of a plan: the iterator tree, its thread pool and counters, and iterator checkpoints.
// Used by `pipec run` and, through the C ABI, by built libraries.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/exec/autotuner.h"
#include "runtime/exec/footprint.h"
#include "runtime/exec/iterator.h"
#include "runtime/exec/memory_budget.h"

namespace pipec {

/// Where the stages after to(gpu) run: on the GPU when there is one (auto), always on the CPU, or on
/// the GPU with an error when there is none (gpu).
enum class DevicePolicy { Auto, Cpu, Gpu };

/// --device gpu found no GPU to run on.
class GpuUnavailableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RunOptions {
  DevicePolicy device = DevicePolicy::Auto;
  uint64_t seed = 0;
  int threads = 0;  // 0 = one per core
  std::string spec_dir;
  const CancellationToken* cancel = nullptr;
  int64_t chunk_rows = 0;  // rows per source chunk; 0 = RunContext's default (differential tests vary it)
  /// Bytes the stage buffers may hold (runtime/exec/memory_budget.h); 0 = half of the machine's memory.
  uint64_t memory_budget = 0;
  /// Tune the `auto` parameters while running (runtime/exec/autotuner.h); false keeps their starting values.
  bool autotune = true;
  /// Values that replace tuning for every `auto` parameter of a kind (`pipec run --auto-value size=8`):
  /// the run keeps them as if the spec had written them (a benchmark's grid, a reproducible setting).
  std::vector<std::pair<KnobKind, int64_t>> auto_values;
  /// Start at this pass of the plan's outermost repeat (outermost_repeat) instead of its first, as
  /// though the passes before it had been read: every stage under the repeat is built for that pass, so
  /// its shuffles and random ops draw what they would have drawn there. A training run of another
  /// number of processes restarts its epoch so (runtime/train/loop/epoch_restart.h). A plan without
  /// an outermost repeat takes 0 only.
  int64_t first_pass = 0;
  /// A tfrecord source hands its chunks of records to the pool to parse (runtime/exec/sources/
  /// source_tfrecord.cpp); false parses them on its own thread (what differential tests compare with).
  bool parse_records_on_pool = true;
  /// Who checks the data CRCs of the records a tfrecord source parsing on the pool reads on its own
  /// thread: the workers while one of them is idle, else its reader (Adaptive), or always one of them.
  DataCrcChecks data_crc_checks = DataCrcChecks::Adaptive;
  /// A prefetch whose consumer does nothing between chunks (it only waits) pulls them through on the
  /// consumer's own thread (runtime/exec/stages/stage_prefetch.cpp); false: always on its own thread
  /// (what tests of the background buffer use).
  bool prefetch_inline_when_idle = true;
  /// The caller works between chunks (a trainer's step): a prefetch starts its thread at once instead
  /// of watching its first chunks pulled inline.
  bool consumer_works = false;
};

/// The repeat (or shuffle_repeat) whose passes are the passes of `plan`'s output: the first one met
/// going from the last stage towards the sources through stages that keep the order of the elements
/// and whose chunks carry their input's pass (map, filter, batch, unbatch, prefetch, to, ...). -1 when
/// there is none (no repeat, or a stage on the way that counts, numbers or reorders elements across
/// passes: take, skip, shuffle, cache, enumerate, a source that joins several inputs).
int outermost_repeat(const Plan& plan);

class PipelineRun {
 public:
  PipelineRun(const Plan& plan, const RunOptions& options);
  ~PipelineRun();

  /// The next chunk of output elements; false at the end. With `max_rows` >= 0, at most that many
  /// rows: the rest of the chunk is held for the next call, and a checkpoint saved in between holds
  /// them too, so a run that stops after N elements (`pipec run --take N`) resumes at element N.
  bool next(Chunk& out, int64_t max_rows = -1);
  /// Output elements delivered so far (resumes count from the checkpoint).
  int64_t delivered() const { return delivered_; }

  /// Saves the whole iterator state atomically (write, fsync, rename) to `path`.
  void save_checkpoint(const std::filesystem::path& path) const;
  /// Restores a state saved by the same plan; throws CheckpointError when it does not match.
  void restore_checkpoint(const std::filesystem::path& path);
  /// The same state as save_checkpoint, as bytes in memory (the C ABI hands them to its caller).
  std::string save_state() const;
  /// Restores bytes from save_state(); `source` names them in errors. Throws CheckpointError.
  void restore_state(std::string bytes, const std::string& source);

  const RunContext& context() const { return ctx_; }
  const MemoryBudget& memory() const { return *memory_; }
  /// The `auto` parameters, what was picked and why; set_compute_threads() is the trainer's share.
  Autotuner& autotuner() { return *autotune_; }
  const Autotuner& autotuner() const { return *autotune_; }
  /// The iterator of the last stage (ChunkIterator::inputs() leads to the others).
  const ChunkIterator& root() const { return *root_; }
  const Plan& plan() const { return plan_; }
  /// The elements of one pass of `stage` (runtime/exec/footprint.h), when the plan and the files its
  /// sources match tell; nullopt otherwise.
  std::optional<int64_t> pass_elements(int stage) const;
  /// What its buffers hold once a slower consumer has kept them full (runtime/exec/footprint.h).
  SteadyHoldings steady_holdings() const;

 private:
  std::optional<int64_t> source_length(int stage) const;

  Plan plan_;
  std::unique_ptr<ThreadPool> pool_;
  RunContext ctx_;
  std::unique_ptr<MemoryBudget> memory_;
  std::unique_ptr<Autotuner> autotune_;
  std::unique_ptr<ChunkIterator> root_;
  int64_t delivered_ = 0;
  uint64_t fingerprint_ = 0;
  Chunk held_;  // rows of the last chunk not yet handed out (next with max_rows)
};

}  // namespace pipec
