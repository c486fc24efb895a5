// The run behind a pipec.Pipeline: a PipeHandle (sharding, DLPack export, exact save/restore) whose
// batches become dicts of pipec.Tensor, waiting with the GIL released and stopping on Ctrl-C.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "python/src/py_spec.h"

namespace pipec::python {

struct RunArgs {
  int threads = 0;  // 0: one per core
  uint64_t seed = 0;
  int64_t shard_index = 0;
  int64_t shard_count = 1;
  DevicePolicy device = DevicePolicy::Auto;
  std::string data_dir;  // "" = the spec's folder
};

class PyRun {
 public:
  PyRun(std::shared_ptr<const CompiledPlan> plan, const RunArgs& args);
  ~PyRun();

  /// The next element as {field: Tensor}; throws nb::stop_iteration at the end.
  nanobind::dict next();
  nanobind::bytes state();
  void restore(nanobind::bytes state);
  /// Stops the run and frees it; tensors handed out stay valid. Idempotent.
  void close();
  bool closed() const { return !handle_; }

  const std::string& name() const { return plan_->name; }
  /// {field: (dtype, shape)} with None for dimensions known only at run time.
  nanobind::dict element_spec() const;
  /// The run summary: counts, rate, and each stage's output, busy time and device.
  nanobind::dict stats() const;
  /// Warnings of the run (no GPU for to(gpu), ...).
  std::vector<std::string> warnings() const;

 private:
  const PipeHandle& handle() const;
  /// Keeps the last stats() and stops the run.
  void stop(std::string reason);

  std::shared_ptr<const CompiledPlan> plan_;
  CancellationToken cancel_;
  std::unique_ptr<PipeHandle> handle_;
  std::vector<nanobind::object> field_names_;
  std::string closed_reason_ = "the pipeline is closed";
  nanobind::object final_stats_;  // stats() once the run has stopped
  int batch_rank_ = 0;
  // For stats(): what was handed out, and since when.
  int64_t elements_ = 0;
  int64_t examples_ = 0;
  int64_t bytes_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;  // when the last element was handed out
  bool started_ = false;
  // A wait in next() with the GIL released: a second next() is refused, close() only cancels it and
  // the waiting call stops the run (both run with the GIL held, so plain flags do).
  bool busy_ = false;
  bool close_requested_ = false;
};

void bind_run(nanobind::module_& m);

}  // namespace pipec::python
