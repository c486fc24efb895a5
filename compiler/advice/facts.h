// What several advice rules ask of a run's facts: a stage's label, its share of the work, the stages
// it reads from, the size of its elements as measured.
#pragma once

#include <string>
#include <vector>

#include "compiler/advice/advice.h"

namespace pipec {

/// "#3 map", as the run summary's stage table names stages.
std::string stage_label(const Plan& plan, int stage);

/// The run's work over every stage, in seconds.
double total_work(const RunFacts& facts);
/// `stage`'s share of it, 0..1.
double work_share(const RunFacts& facts, int stage);
/// "80%".
std::string percent(double share);

/// Every stage `stage` reads from, transitively (not itself), in plan order.
std::vector<int> upstream_of(const Plan& plan, int stage);

/// Bytes per element `stage` produced, as measured (0 when it produced none).
double measured_element_bytes(const RunFacts& facts, int stage);

/// repeat's and shuffle_repeat's count: -1 for forever, 1 for no repeat at all (other stages).
int64_t repeat_count(const Stage& s);

/// The thread each stage runs on in a run of `plan`: 0 for the consumer's, k for the k-th prefetch's
/// input side (as the autotuner's model segments the plan).
std::vector<int> threads_of(const Plan& plan);

/// The stage's function draws random numbers.
bool draws_random(const Stage& s);

/// A `parallel = N` the spec wrote (0: `auto` or no such parameter).
int64_t fixed_parallel(const Stage& s);

/// The stage that limits the run is a map (filter, map_batch, map_filter) whose `parallel = N` from
/// the spec keeps it below the run's threads (rule parallel_map says what to do).
bool fixed_parallel_limits(const RunFacts& facts);

}  // namespace pipec
