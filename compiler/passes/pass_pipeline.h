// The optimizer: the ordered list of plan passes, each with a stable name, and the driver that runs
// them with the IR verifier after each one.
//
// `pipec explain --passes` shows the plan after every pass (or "unchanged"), `--disable-pass=NAME`
// skips one, `-O0` skips them all (the unoptimized plan is the reference everything is checked against).
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/plan/plan.h"

namespace pipec {

struct PassInfo {
  const char* name;         // stable: flags, logs and tests use it
  bool (*run)(Plan& plan);  // rewrites in place; true when something changed
  const char* summary;      // one line for --help and docs
};

/// Every pass, in the order they run.
const std::vector<PassInfo>& pass_list();

/// True when `name` is one of pass_list()'s names.
bool is_pass_name(const std::string& name);

struct PassOptions {
  int opt_level = 1;                  // 0: run no pass
  std::vector<std::string> disabled;  // names of passes to skip
  /// Called after every pass that ran: the pass, whether it changed the plan, the plan after it.
  std::function<void(const std::string& pass, bool changed, const Plan& plan)> log;
};

/// A pass produced a plan the verifier rejects: a compiler bug. The message names the pass, the
/// problems and the plan it left.
class PassError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Runs the passes on `plan` (whose functions it first copies, so plans sharing them are not
/// touched), then on the inner pipeline of each of its flat_maps (inner_pipelines.h). Throws PassError
/// when a pass leaves a plan that does not verify.
void run_passes(Plan& plan, const PassOptions& options);

}  // namespace pipec
