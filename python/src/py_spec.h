// pipec.compile(...): a spec checked once, its pipelines compiled (lowered, optimized, JIT-compiled)
// on first use and kept, ready to start runs from.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "python/src/py_errors.h"
#include "runtime/capi/pipe_handle.h"

namespace pipec::python {

struct CompileArgs {
  std::string path;
  std::vector<std::pair<std::string, std::string>> defines;  // NAME, VALUE as Pipe source
  std::vector<std::string> import_dirs;
  int opt_level = 1;  // 0: the plan as lowered, on the interpreter (the reference)
  bool jit = true;    // compile map/filter bodies with LLVM
};

/// One pipeline of the spec, compiled: the plan (kernels attached) in the form a PipeHandle runs.
struct CompiledPlan {
  std::string name;
  PipeLibrary library;  // plan, spec folder, the kernels by symbol
  std::string kernels;  // what the JIT compiled ("3 compiled (2 cached)", ...); "" when none
};

class PySpec {
 public:
  /// Checks the spec; throws SpecCompileError (its diagnostics) or std::runtime_error (unreadable).
  explicit PySpec(CompileArgs args);

  const std::string& path() const { return args_.path; }
  /// The folder relative data paths resolve against (absolute).
  const std::string& spec_dir() const { return spec_dir_; }
  /// The pipelines the main file declares, in order.
  const std::vector<std::string>& pipelines() const { return pipelines_; }
  /// Warnings of the check (errors throw).
  const std::vector<DiagnosticInfo>& warnings() const { return warnings_; }

  /// Pipeline `name` ("": the only one, or the one a train block reads) compiled for `device`; made
  /// once and shared by every run. Throws std::invalid_argument when there is no such pipeline.
  std::shared_ptr<const CompiledPlan> compile_pipeline(const std::string& name, DevicePolicy device);

 private:
  CompileArgs args_;
  std::string spec_dir_;
  std::vector<std::string> pipelines_;
  std::vector<DiagnosticInfo> warnings_;
  std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::shared_ptr<const CompiledPlan>> compiled_;
};

}  // namespace pipec::python
