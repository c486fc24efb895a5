// Chunk iterators: one per plan stage, pulling chunks from their inputs.
//
// The executor turns a Plan into a tree of iterators (build_iterator). Each iterator produces chunks
// of its stage's elements, knows how many it has produced (the element index that keys random
// streams), measures the time it spends itself (not in its inputs) for the bottleneck report, and can
// save and restore its whole state for iterator checkpoints.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/chunk.h"
#include "runtime/exec/checkpoint_io.h"
#include "runtime/exec/stage_stats.h"
#include "runtime/io/errors.h"
#include "runtime/plan/plan.h"
#include "runtime/threads/cancellation.h"
#include "runtime/threads/thread_pool.h"
#include "runtime/trace/trace.h"

namespace pipec {

namespace gpu {
struct CudaDriver;
}
class Autotuner;
class MemoryBudget;

/// `p` as a run reads it: relative to `spec_dir` (the spec's folder) unless absolute or spec_dir is empty.
std::string resolve_spec_path(const std::string& spec_dir, const std::string& p);

/// Who checks the data CRCs of the records a tfrecord source reads on its own thread while its workers
/// parse them (runtime/exec/sources/source_tfrecord.cpp).
enum class DataCrcChecks {
  Adaptive,   ///< the workers while one of them is idle (ThreadPool::idle_workers), else the reader
  OnWorkers,  ///< always the workers
  ByReader,   ///< always the reader, on the source's thread
};

/// What every iterator of one run shares.
struct RunContext {
  const Plan* plan = nullptr;
  std::string spec_dir;  // relative paths in the spec are resolved against it
  uint64_t seed = 0;     // the run seed: default for shuffle/random ops without their own
  int threads = 0;       // parallelism for map and parallel reads
  ThreadPool* pool = nullptr;
  const CancellationToken* cancel = nullptr;
  std::vector<std::unique_ptr<StageStats>> stats;              // one per plan stage: output, own busy time, bytes
  std::vector<std::unique_ptr<std::atomic<int64_t>>> dropped;  // per stage: elements dropped by ignore_errors
  /// RunOptions::first_pass: the outermost repeat (this stage, -1: none) starts at pass `first_pass`.
  int first_pass_stage = -1;
  int64_t first_pass = 0;
  /// Rows per chunk that sources produce (elements, before batching).
  int64_t chunk_rows = 1024;
  bool parse_records_on_pool = true;                        // RunOptions::parse_records_on_pool
  DataCrcChecks data_crc_checks = DataCrcChecks::Adaptive;  // RunOptions::data_crc_checks
  bool prefetch_inline_when_idle = true;                    // RunOptions::prefetch_inline_when_idle
  bool consumer_works = false;                              // RunOptions::consumer_works
  /// Set when a stage after a source is ignore_errors: sources and maps drop bad elements and count
  /// them instead of failing.
  std::vector<bool> tolerant;  // per stage
  /// Shared state that must outlive one iterator instance (a cache filled in epoch 0, replayed later).
  std::vector<std::shared_ptr<void>> shared;  // per stage
  /// Where each stage runs: "cpu", or "gpu: <device name>" (the run summary shows it).
  std::vector<std::string> stage_device;
  /// The GPU that runs the maps after to(gpu); null when they run on the CPU.
  const gpu::CudaDriver* gpu = nullptr;
  /// --device gpu: a stage after to(gpu) that cannot run on the GPU is an error, not a warning.
  bool gpu_required = false;
  /// Why there is no GPU, when the plan has to(gpu) and none could be opened.
  std::string gpu_unavailable;
  /// The run's memory budget: what stage buffers hold (runtime/exec/memory_budget.h). Null: not counted.
  MemoryBudget* memory = nullptr;
  /// The `auto` parameters and their tuner (runtime/exec/autotuner.h). Null: stages use their defaults.
  Autotuner* autotune = nullptr;

  /// Adds `w` to the run's warnings unless it is there already. Any thread: stages built while the
  /// run goes on (a repeat's next epoch) warn from the thread that builds them.
  void warn_once(const std::string& w);
  /// The warnings so far, in the order raised; those from `first` on (a reader that printed some).
  std::vector<std::string> warnings(size_t first = 0) const;
  size_t warning_count() const;

  std::string resolve_path(const std::string& p) const;
  void check_cancelled() const;

 private:
  mutable std::mutex warnings_mu_;
  std::vector<std::string> warnings_;
};

class ChunkIterator {
 public:
  ChunkIterator(RunContext& ctx, int stage) : ctx_(ctx), stage_(stage) {}
  virtual ~ChunkIterator() = default;

  /// The next chunk of this stage's elements; false at the end of the sequence. Timing and counters
  /// are kept here; subclasses implement produce().
  bool next(Chunk& out);

  /// Writes / reads everything needed to continue exactly where this iterator is. Saving changes
  /// nothing the run will produce, and leaves the stage holding no more than its buffer bound.
  virtual void save(StateWriter& w) const = 0;
  virtual void restore(StateReader& r) = 0;

  /// What the stage holds itself, not counting its inputs: results computed ahead, the rest of an
  /// input chunk, a partial batch, a shuffle buffer. A checkpoint saves exactly these rows, so
  /// `bound` is also the most a saved state of this stage can hold.
  struct Buffered {
    int64_t rows = 0;   // rows of the chunks held (elements of its input or output, whichever it keeps)
    int64_t bound = 0;  // the most it may hold; kUnbounded for cache(), which keeps one whole pass
  };
  static constexpr int64_t kUnbounded = -1;
  virtual Buffered buffered() const { return {}; }
  /// The iterators it pulls from now (an input not built yet, or already finished, is left out).
  virtual std::vector<const ChunkIterator*> inputs() const { return {}; }

  int stage() const { return stage_; }
  const Stage& spec() const { return ctx_.plan->stages[stage_]; }

 protected:
  virtual bool produce(Chunk& out) = 0;
  /// Pulls from an input; the time it takes is not counted as this stage's own.
  bool pull(ChunkIterator& input, Chunk& out);
  /// Time spent waiting for inputs that run elsewhere (a prefetch thread) is not this stage's either.
  void add_wait_ns(int64_t ns) { child_ns_ += ns; }
  /// Fixed buffers (a shuffle's, a cache's): what the stage holds changed by `delta` bytes. Throws a
  /// StageError when the run's fixed buffers together no longer fit in its memory budget.
  void charge_fixed(int64_t delta, const char* what);

  RunContext& ctx_;
  int stage_;
  int64_t produced_ = 0;        // elements produced so far in this epoch (the next chunk's first_index)
  int64_t largest_pulled_ = 0;  // rows of the largest chunk pull() has returned (buffer bounds count in chunks)

 private:
  int64_t child_ns_ = 0;
  trace::NameId trace_name_ = 0;  // "#3 map", interned when the first span is recorded
};

/// Builds the iterator tree for `stage` (and everything it reads from), for epoch `epoch`.
std::unique_ptr<ChunkIterator> build_iterator(RunContext& ctx, int stage, int64_t epoch);

/// Helpers shared by several stages.
/// Rows [begin, end) of `in` as a new chunk (tensors share nothing with `in`).
Chunk slice_rows(const Chunk& in, int64_t begin, int64_t end);
/// The chunk made of the rows of `in` whose `keep` flag is set.
Chunk select_rows(const Chunk& in, const std::vector<uint8_t>& keep);
/// Appends row `row` of `src` to `dst` (same column layout) — used by shuffle and batch buffers.
void append_rows(Chunk& dst, const Chunk& src, int64_t begin, int64_t end);
/// Where each field of `want` is among the fields of `have` (matched by name), for stages that join
/// datasets whose records list the same fields in different orders (concatenate, choose_from).
std::vector<size_t> field_order(const ElementInfo& want, const ElementInfo& have);
/// Puts the columns of `c` in the order `field_order` gave (nothing to do when it is the identity).
void reorder_columns(Chunk& c, const std::vector<size_t>& order);
/// Serializes / reads back a chunk (for checkpoints of buffered state).
void save_chunk(StateWriter& w, const Chunk& c);
Chunk restore_chunk(StateReader& r);

/// A run-time error naming the stage and its place in the spec: "chess.pipe:20:5: map: ...".
/// The parts stay apart (stage_op, spec_location, data_location) for callers that report them one by
/// one, such as the Python module's pipec.DataError.
class StageError : public std::runtime_error {
 public:
  StageError(const Stage& stage, const std::string& what);
  /// Bad input found by `stage`: what() names the stage, the file and the offset; data_location() keeps
  /// the file, record and offset.
  StageError(const Stage& stage, const DataError& error);
  /// The error for an exception thrown while `stage` worked: a DataError keeps its location.
  static StageError from(const Stage& stage, const std::exception& error);

  const std::string& stage_op() const { return op_; }
  /// "chess.pipe:20:5", or "" when the stage has no place in a spec.
  const std::string& spec_location() const { return spec_location_; }
  /// Where in the input the problem is, for errors made from a DataError.
  const std::optional<DataLocation>& data_location() const { return data_location_; }

 private:
  std::string op_;
  std::string spec_location_;
  std::optional<DataLocation> data_location_;
};

}  // namespace pipec
