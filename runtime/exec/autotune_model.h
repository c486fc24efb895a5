// The autotuner's model of a running pipeline (as tf.data's AUTOTUNE models one): each stage's
// measured cost per output element, which thread runs it, and the `auto` parameters, from which it
// predicts the pipeline's throughput for any choice of parameters; and the hill climb that picks them.
//
// The model. Every stage runs part of its work on the thread that pulls from it (its *segment*: the
// consumer's thread, or the thread of the nearest prefetch downstream) and may hand the rest to
// threads of its own (a map's tasks on the pool, files read ahead). For one output element of the
// pipeline, stage i costs sync_i ns on its segment and task_i ns elsewhere. Then the rate R (output
// elements per second) is at most
//   - 1e9 / (sum of sync_i in segment g)                 for every segment (the consumer's own time
//                                                        between next() calls is in segment 0)
//   - min(p, T) * 1e9 / task_m                           for a map with p chunks in flight, T threads
//                                                        (p = 1 runs the map on its segment instead)
//   - c * 1e9 / read_r                                   for a source whose c open files are read on
//                                                        threads of their own (the rest read inline)
//   - C * 1e9 / (sum of all work)                        the C cores its threads (the pool's, prefetch
//                                                        and reader threads) may use in all
// and at most what a finite buffer of K items passes between a producer and a consumer running at
// rates lambda and mu (M/M/1/K: throughput lambda (1 - rho^K) / (1 - rho^(K+1)), rho = lambda / mu),
// for every such buffer: a prefetch of depth d (K = d + 1) and a map's window (K = p). So buffers pay
// when the two sides run at similar rates and not when one side is much slower, and parallelism pays
// until the CPU or another stage binds; every bound grows with every parameter, so more never
// predicts less.
//
// The hill climb starts from the values in use (the first time: the static defaults), gives back what
// the memory budget no longer has room for and the steps that buy (almost) nothing (down to each
// parameter's `keep`), then repeatedly
// raises the parameter whose next step raises the predicted rate the most, while that is at least
// kMinGain, the memory it adds fits in the room the budget leaves, and the parameter is under its
// maximum; it records for each parameter why it stopped (the sentence `pipec run` prints). Giving
// back stops at half of kMinGain, so a choice does not flap between two values from one measurement
// to the next.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pipec {

enum class KnobKind { MapParallelism, PrefetchDepth, ReadAhead };

/// "parallel", "size", "files read ahead".
const char* knob_param(KnobKind k);
/// The word `pipec run --auto-value` takes for a kind: "parallel", "prefetch", "read_ahead".
const char* knob_flag_name(KnobKind k);
/// The kind named by `word` (knob_flag_name's words); false when there is none.
bool knob_kind_from_flag(std::string_view word, KnobKind* kind);
constexpr KnobKind kKnobKinds[] = {KnobKind::MapParallelism, KnobKind::PrefetchDepth, KnobKind::ReadAhead};

struct ModelStage {
  int stage = 0;       // the plan's stage index
  std::string label;   // "#3 map"
  double sync_ns = 0;  // per output element of the pipeline, on its segment's thread
  double task_ns = 0;  // per output element, on the pool (a map's tasks) or reader threads (a source)
  int segment = 0;     // 0: the consumer's thread; k: the input side of the k-th prefetch
  enum class Role { Plain, Map, Prefetch, Reader } role = Role::Plain;
  int knob = -1;              // the index of its `auto` parameter in the choice; -1 when fixed
  int64_t value = 1;          // the parameter's value while measured (fixed stages: their value)
  int64_t cycle = 1;          // Reader: files open at once (the interleave's cycle; 1 when sequential)
  int input_segment = -1;     // Prefetch: the segment on its input side
  double item_bytes = 0;      // bytes of one buffered item (a chunk of results, a chunk, a file's blocks)
  std::vector<int> upstream;  // indices (into ModelInput::stages) of every stage it pulls from, transitively
};

struct ModelInput {
  std::vector<ModelStage> stages;
  int segments = 1;
  double consumer_ns = 0;  // per output element: the consumer's time between next() calls
  int threads = 1;         // the pool's workers the pipeline may use (its thread share)
  // The cores the pipeline's threads may use in all (the pool's, prefetch threads, readers). On a machine
  // other processes load, the share the run got lately, a fraction included: rounded to 1, a run that
  // got 1.4 cores saw nothing to gain from a second busy thread, gave its map's tasks back to one
  // thread, then (now wanting one core, and getting it) took them up again, every 40 ms.
  double cores = 1;
  double room_bytes = 0;  // memory the `auto` buffers may use beyond their first items
};

struct KnobRange {
  int64_t min = 1, max = 1;
  /// The least that giving back steps that buy nothing leaves (only the memory budget goes lower): a
  /// prefetch keeps its starting depth, because its buffer also hides the time it takes to wake the
  /// threads on either side, which the model's rates do not see (on a busy machine a depth of 1 lost
  /// up to half the throughput of a depth of 4 in bench/autotune).
  int64_t keep = 0;
};

/// The predicted rate (output elements per second) with parameter values `values` (by knob index).
double modelled_rate(const ModelInput& in, const std::vector<int64_t>& values);

/// What limits the rate: a kind, the stage it names (-1: the consumer) and a phrase.
struct Bottleneck {
  enum class Kind { None, Segment, Map, Reader, Cpu, Consumer } kind = Kind::None;
  int stage = -1;    // the plan's stage index
  double share = 0;  // the stage's share of the pipeline's work, 0..1
  std::string why;   // "runs on one thread with tfrecord and batch", "the CPU: 2 threads are busy"
};
Bottleneck find_bottleneck(const ModelInput& in, const std::vector<int64_t>& values);

struct Choice {
  std::vector<int64_t> values;       // by knob index
  std::vector<std::string> reasons;  // by knob index: one sentence each
  double rate = 0;
};
/// The minimum gain in predicted rate for one more step of a parameter.
constexpr double kMinGain = 0.01;
/// From `start` (the values now; each parameter's minimum where missing): first gives back memory the
/// budget no longer has room for, then gives back steps that buy (almost) nothing, then climbs.
Choice hill_climb(const ModelInput& in, const std::vector<KnobRange>& ranges, const std::vector<int64_t>& start = {});

/// How many of the pool's `in.threads` workers take the pipeline's tasks. A worker is kept only while
/// the pipeline's capacity needs it: the fewest workers whose capacity (ModelInput's bounds without the
/// buffers': every segment, map, reader and the CPU, with every parameter at the most its range
/// allows) is the capacity all of them give.
/// A worker beyond that buys nothing in the model, but it does cost: on a machine whose cores each
/// have a busy thread of the pipeline (a prefetch's thread making the batches), it takes its core
/// part of the time. On 2 cores the chess pipeline ran a tenth slower with 2 workers than with 1
/// although the map's tasks never needed 2 (docs/performance.md, "Threads that scale"). The buffers
/// are left to the windows and depths (the hill climb picks them for the workers chosen): their M/M/1/K
/// bound, which assumes tasks of random length, would keep a worker to shorten queues that a larger
/// window shortens as well.
///
/// From `current` workers (1..in.threads): gives one back while that lowers the capacity by less than
/// half of kMinGain, else adds one while that raises it by at least kMinGain, so the choice does not
/// flap between two counts from one measurement to the next.
struct WorkersChoice {
  int workers = 1;
  double capacity = 0;  // the modelled capacity with them (output elements per second)
  std::string reason;   // one sentence
};
WorkersChoice choose_workers(const ModelInput& in, const std::vector<KnobRange>& ranges, int current);

/// A map's window is at most this many chunks per worker that takes tasks (and at least its starting
/// value): map_parallelism_knob's range for the pool's workers, and the most ranges_for_workers leaves
/// once fewer of them take tasks.
constexpr int64_t kMapWindowPerWorker = 4;

/// `ranges` (by knob index) with each map's window held to kMapWindowPerWorker per worker of
/// `workers` (within its own range). A window wider than its workers need holds more results than the
/// buffers' model pays for: the model's M/M/1/K bound assumes tasks of random length and keeps asking
/// for more, but each result is memory the caches hold too. The chess map's results are 3.2 MB a
/// batch; with one worker of two taking tasks the climb went to 8 of them, and with 8 the map's tasks
/// took half again the CPU time they take with 4 (0.19 s against 0.12 s for 2,000 batches, on 2
/// cores with a 32 MB L3 cache: 8 results and the prefetch's 4 no longer fit in it).
std::vector<KnobRange> ranges_for_workers(const ModelInput& in, std::vector<KnobRange> ranges, int workers);

/// Extra memory (beyond the first items of maps and prefetches) that `values` hold.
double optional_bytes(const ModelInput& in, const std::vector<int64_t>& values);

}  // namespace pipec
