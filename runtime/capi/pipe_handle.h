// The run behind a `pipe_handle*`: a PipelineRun whose chunks are handed out one element at a time as
// DLPack tensors, with save/restore that includes the part of a chunk not handed out yet.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/capi/pipe.h"
#include "runtime/exec/pipeline_run.h"

namespace pipec {

/// A compiled kernel the library carries, by the symbol name the plan records.
struct KernelSymbol {
  const char* symbol;
  PipecKernelFn fn;
};

/// Everything pipe_open needs besides the options: the plan, where its relative paths resolve, and
/// the kernels that its stages' `native->symbol` names refer to.
struct PipeLibrary {
  Plan plan;
  std::string spec_dir;
  std::vector<KernelSymbol> kernels;
};

/// Sets every stage's NativeKernel::fn (inner pipelines' too) from `kernels` by its symbol; returns how
/// many. Throws std::runtime_error naming the stage when a symbol is not among them.
int bind_kernels(Plan& plan, const std::vector<KernelSymbol>& kernels);

/// What a host embedding the runtime in a program of its own adds to pipe_options (the Python module:
/// Ctrl-C cancels a wait, and the device the maps after to(gpu) run on). The C ABI uses the defaults.
struct HostRunOptions {
  const CancellationToken* cancel = nullptr;  // must outlive the handle
  DevicePolicy device = DevicePolicy::Auto;
};

class PipeHandle {
 public:
  /// Shards the plan, binds every native kernel symbol to its function and starts the run. Throws
  /// std::exception with a message for the caller (a missing kernel, a field DLPack cannot carry, a
  /// pipeline that ends in write(...), bad shard options, a run that cannot start).
  PipeHandle(const PipeLibrary& lib, const pipe_options& options, const HostRunOptions& host = {});

  const std::vector<Field>& fields() const { return fields_; }
  /// Stages whose native kernel was bound to compiled code.
  int compiled_kernels() const { return compiled_kernels_; }
  /// Fills out[0..fields) with the next element; false at the end. Throws on run-time errors.
  bool next(DLManagedTensor** out);
  std::string save_state();
  /// Throws CheckpointError when `bytes` is not a state of this library with these options.
  void restore_state(std::string bytes);
  /// Whether next() can hand out an element without waiting for the run (rows of a chunk are left).
  bool has_pending_rows() const { return next_row_ < pending_.rows; }
  /// The run itself: its plan, warnings and per-stage statistics.
  const PipelineRun& run() const { return *run_; }

 private:
  std::vector<Field> fields_;
  std::unique_ptr<PipelineRun> run_;
  Chunk pending_;  // the chunk being handed out
  int64_t next_row_ = 0;
  int compiled_kernels_ = 0;
};

/// Why `element` cannot be read through the C ABI, or "" when it can (every field a numeric tensor).
std::string capi_element_problem(const ElementInfo& element);

}  // namespace pipec
