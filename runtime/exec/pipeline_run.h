// One run of a plan: the iterator tree, its thread pool and counters, and iterator checkpoints.
// Used by `pipec run` and, through the C ABI, by built libraries.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "runtime/exec/iterator.h"

namespace pipec {

struct RunOptions {
  uint64_t seed = 0;
  int threads = 0;  // 0 = one per core
  std::string spec_dir;
  const CancellationToken* cancel = nullptr;
  int64_t chunk_rows = 0;  // rows per source chunk; 0 = RunContext's default (differential tests vary it)
};

class PipelineRun {
 public:
  PipelineRun(const Plan& plan, const RunOptions& options);
  ~PipelineRun();

  /// The next chunk of output elements; false at the end.
  bool next(Chunk& out);
  /// Output elements delivered so far (resumes count from the checkpoint).
  int64_t delivered() const { return delivered_; }

  /// Saves the whole iterator state atomically (write, fsync, rename) to `path`.
  void save_checkpoint(const std::filesystem::path& path) const;
  /// Restores a state saved by the same plan; throws CheckpointError when it does not match.
  void restore_checkpoint(const std::filesystem::path& path);

  const RunContext& context() const { return ctx_; }
  const Plan& plan() const { return plan_; }

 private:
  Plan plan_;
  std::unique_ptr<ThreadPool> pool_;
  RunContext ctx_;
  std::unique_ptr<ChunkIterator> root_;
  int64_t delivered_ = 0;
  uint64_t fingerprint_ = 0;
};

}  // namespace pipec
