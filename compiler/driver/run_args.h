// The flags of `pipec run`: the ones of a pipeline run (compiler/driver/cmd_run.cpp), the ones of a
// training run (compiler/driver/cmd_train.cpp), and the ones both read.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/compile/compile.h"
#include "compiler/driver/cli.h"
#include "runtime/exec/autotune_model.h"

namespace pipec {

struct RunArgs {
  std::string spec;
  // Both runs.
  uint64_t seed = 0;
  int threads = 0;  // 0: one per core
  std::string stats_json;
  bool no_jit = false;
  std::string device = "auto";
  std::string checkpoint;  // a pipeline run: DIR/state.ckpt; a training run: runtime/train/persist/train_checkpoint.h
  int64_t checkpoint_every = 100;  // output elements, or training steps
  bool resume = false;
  std::string memory_budget;  // "" = half of the machine's memory
  bool no_autotune = false;
  bool explain_autotune = false;
  std::vector<std::string> auto_values;  // KIND=N
  std::string trace;                     // --trace FILE.json
  std::string logdir;                    // --logdir DIR: TensorBoard event files
  // A pipeline run only.
  std::string pipeline;
  int64_t take = -1;  // -1: every element
  std::string output;
};

struct TrainArgs {
  std::string block;   // --train
  int64_t steps = 0;   // --steps (when given)
  int64_t epochs = 0;  // --epochs (when given)
  std::string init;
  std::string save;
  std::string metrics;             // --metrics: one JSON line per step
  std::string executor = "fast";   // --executor: fast (oneDNN) or reference (the -O0 oracle; -O0 picks it)
  std::string conv = "auto";       // --conv: the fast executor's conv2d algorithm, auto (Winograd) or direct
  std::string cpu_bf16 = "auto";   // --cpu-bf16: mixed_bf16's layers on bf16 kernels (native) or f32 ones (emulated)
  bool executor_given = false;     // --executor on the command line (or -O0, which picks the reference)
  bool allow_tf32 = false;         // --allow-tf32: TF32 tensor cores for fp32 on a GPU
  double collective_timeout = 60;  // --collective-timeout: seconds a data-parallel collective may wait
  double bucket_mb = 25;           // --bucket-mb: the data-parallel all-reduce's gradient bucket, in MiB
};

/// The declared training flags: to ask whether one was given, and for the pipeline flags to exclude them.
struct TrainFlags {
  CLI::Option* block = nullptr;
  CLI::Option* steps = nullptr;
  CLI::Option* epochs = nullptr;
  CLI::Option* init = nullptr;
  CLI::Option* save = nullptr;
  CLI::Option* metrics = nullptr;
  CLI::Option* executor = nullptr;
  CLI::Option* conv = nullptr;
  CLI::Option* cpu_bf16 = nullptr;
  CLI::Option* allow_tf32 = nullptr;
  CLI::Option* collective_timeout = nullptr;
  CLI::Option* bucket_mb = nullptr;

  std::vector<CLI::Option*> all() const {
    return {block,    steps, epochs, init, save, metrics, executor, conv, cpu_bf16, allow_tf32, collective_timeout,
            bucket_mb};
  }
};

/// `--auto-value KIND=N`: the kind and N, false when it is not one (N >= 0 for read_ahead, >= 1 for the
/// others).
bool parse_auto_value(const std::string& text, KnobKind* kind, int64_t* value);
/// Every `--auto-value` given (already checked by the flag's validator).
std::vector<std::pair<KnobKind, int64_t>> parse_auto_values(const std::vector<std::string>& texts);

/// Declares the training flags on `app` under their own heading, writing into `into`.
TrainFlags add_train_flags(CLI::App& app, TrainArgs& into);

/// `pipec run` on a compiled Train target: trains compiled.trains[0] on the batches of
/// compiled.pipelines[0] with the executor `train.executor` names, with a progress line on a terminal, a summary
/// (unless `quiet`) and --stats-json. Returns the exit code.
/// `all_passes`: the optimizer ran every pass (for the advice).
int run_compiled_training(const CompileResult& compiled, const RunArgs& run, const TrainArgs& train, bool quiet,
                          bool all_passes);

}  // namespace pipec
