// The autotuner of one run: every `auto` parameter (map(parallel = auto), prefetch(auto),
// interleave(cycle_length = auto)'s and tfrecord(parallel_reads = auto)'s files read ahead) is a Knob;
// a thread of its own measures the stages while the pipeline runs (each stage's time per output
// element on the thread that pulls from it and on threads of its own, the consumer's time between
// next() calls, the memory the budget leaves), feeds the model (runtime/exec/autotune_model.h) and sets
// the knobs to what the hill climb picks, every kTick, so the choice follows the pipeline as it goes
// (a cache filling, then replaying; a trainer taking cores).
//
// What it may change never changes what the pipeline produces: how many chunks a map computes at once,
// how many a prefetch holds, how many files are read ahead concurrently (in the same order). The
// parameters that decide the order (an interleave's cycle length) are fixed when the run starts.
//
// The thread split with training: `set_compute_threads(n)` gives n of the run's threads to the
// trainer's compute; the pool then lets only the rest take tasks, and the model plans with them.
//
// Of the pool's workers the pipeline keeps, only as many take tasks as its capacity needs
// (choose_workers in runtime/exec/autotune_model.h); the others wait, so that a worker that buys
// nothing does not share a core with a busy thread of the pipeline. That too never changes the output.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/exec/autotune_model.h"
#include "runtime/exec/cpu_share.h"
#include "runtime/exec/knob.h"
#include "runtime/exec/stage_stats.h"

namespace pipec {

struct RunContext;

class Autotuner {
 public:
  /// `tune` false: every knob keeps its starting value (the static defaults); the model still names
  /// the bottleneck. `values`: every `auto` knob of a kind listed there is fixed at that value.
  Autotuner(RunContext& ctx, bool tune, std::vector<std::pair<KnobKind, int64_t>> values = {});
  ~Autotuner();
  Autotuner(const Autotuner&) = delete;
  Autotuner& operator=(const Autotuner&) = delete;

  Knob* knob(int stage, KnobKind kind, int64_t initial, int64_t min, int64_t max);
  /// Every parameter registered so far (the pointers stay valid for the run).
  std::vector<Knob*> knobs() const;

  /// Starts measuring and tuning (when tuning is on and some knob is tunable).
  void start();
  void stop();

  /// Around each next() of the run's last stage: the time between them is the consumer's.
  void consumer_called();
  void consumer_returned();

  /// Gives `n` of the run's threads to the trainer's compute (0..threads-1); the pipeline keeps the rest.
  void set_compute_threads(int n);
  int pipeline_threads() const;

  struct Pick {
    int stage = 0;
    KnobKind kind = KnobKind::MapParallelism;
    int64_t value = 0;
    bool tunable = false;
    bool overridden = false;  // an `auto` parameter fixed by RunOptions::auto_values
    std::string reason;       // one sentence
  };
  /// What each parameter holds now and why (the last decision's sentence).
  std::vector<Pick> picks() const;

  /// The pool's workers that take the pipeline's tasks now, of `of` (the threads the pipeline keeps),
  /// and why (one sentence; empty before the first decision or without tuning: then all of them).
  struct Workers {
    int value = 1;
    int of = 1;
    std::string reason;
  };
  Workers workers() const;

  struct Change {
    double seconds = 0;  // since start()
    int stage = 0;
    KnobKind kind = KnobKind::MapParallelism;
    int64_t from = 0, to = 0;
  };
  std::vector<Change> changes() const;
  int decisions() const;

  /// The model of the run so far (every stage's cost over the whole run, the knobs as they are now;
  /// `threads`: those the pipeline keeps, of which workers() take tasks).
  ModelInput whole_run_model() const;
  /// What limits the run, by the model over the whole run.
  Bottleneck bottleneck() const;
  /// The model's knob values now, by knob index of whole_run_model().
  std::vector<int64_t> knob_values() const;

  static constexpr std::chrono::milliseconds kTick{40};

 private:
  struct Sample {
    std::vector<StageStatsSnapshot> stages;
    uint64_t consumer_ns = 0;
    uint64_t out = 0;
    std::chrono::steady_clock::time_point at;
    ProcessCpuTimes cpu;  // the process's threads' run and run-queue wait times
  };
  Sample sample() const;
  ModelInput model_between(const Sample& a, const Sample& b, std::vector<Knob*>* knobs) const;
  void run();
  void decide(const Sample& now);

  RunContext& ctx_;
  const bool tune_;
  const std::vector<std::pair<KnobKind, int64_t>> values_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Knob>> knobs_;
  std::vector<int> segment_, input_segment_;  // per plan stage
  std::vector<std::vector<int>> upstream_;    // per plan stage
  int segments_ = 1;
  int compute_threads_ = 0;
  int workers_ = 0;             // the pool's workers that take tasks, of pipeline_threads(); 0: all
  std::string workers_reason_;  // choose_workers' sentence
  std::vector<Pick> picks_;
  std::vector<Change> changes_;
  int decisions_ = 0;
  Sample last_;
  std::vector<double> smooth_sync_, smooth_task_;
  double smooth_consumer_ = 0;
  double smooth_cores_ = 0;  // the cores the run got (runtime/exec/cpu_share.h), smoothed
  bool have_smooth_ = false;
  std::chrono::steady_clock::time_point started_;

  std::atomic<uint64_t> consumer_ns_{0};
  int64_t consumer_since_ = -1;  // touched by the consumer's thread only

  std::thread thread_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace pipec
