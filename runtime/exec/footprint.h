// What a plan's buffers hold, from the plan alone: element sizes, rows per chunk, the length of a pass,
// and the bound of every fixed buffer (a shuffle's buffer, a cache's pass, prefetch(N),
// map(parallel = N)). The memory budget starts from these bounds, and a run whose fixed buffers cannot
// fit in its budget is refused before it starts, with an error naming the stage.
//
// Sizes are known for fields of fixed shape and numeric dtype; byte strings and shapes with `?` are
// not (those buffers learn their sizes while running).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/plan/plan.h"

namespace pipec {

/// Bytes of one element of `e`; nullopt when a field has a byte string or a dimension not known.
std::optional<uint64_t> element_bytes(const ElementInfo& e);

/// Rows in a chunk of `stage`'s output: sources make `source_rows`, a batch makes one batch per chunk.
int64_t rows_per_chunk(const Plan& plan, int stage, int64_t source_rows);

/// Bytes of one chunk of `stage`'s output (an upper bound after a filter); nullopt when not known.
std::optional<uint64_t> chunk_bytes_of(const Plan& plan, int stage, int64_t source_rows);

/// The number of elements in one pass of `stage` (an upper bound where a filter may drop some);
/// nullopt when not known or infinite. `source_length` gives a source's length where only the run can
/// know it (the files a glob matches), or nullopt.
using SourceLength = std::function<std::optional<int64_t>(int stage)>;
std::optional<int64_t> pass_length(const Plan& plan, int stage, const SourceLength& source_length);

/// A fixed buffer of one stage, as the plan says.
struct FixedBuffer {
  int stage = 0;
  std::optional<uint64_t> bytes;  // nullopt: not known before running
  std::string what;               // "its buffer of 10,000 elements of 824 B", "its pass of 60,000 elements"
};

/// Every fixed buffer of the plan (`auto` buffers count their first item, which they always hold).
std::vector<FixedBuffer> fixed_buffers(const Plan& plan, int64_t source_rows, const SourceLength& source_length);

/// The depth an `auto` prefetch starts at, and the window of chunks an `auto` map starts with, on a pool
/// of `threads` workers.
int64_t prefetch_starting_depth(int threads);
int64_t map_starting_window(int threads);

/// What the buffers hold once the consumer is slower than the pipeline (a training step is) and has
/// let them fill, at their starting sizes: every shuffle buffer (filled to its input's pass at most),
/// every cache's pass, prefetch's depth plus the chunk its producer holds while it waits to hand it
/// over, and for a map its window less the chunk it handed out (results computed or in flight).
/// `unknown` names the buffers whose sizes only the run learns (byte strings, `?` dimensions); they
/// count 0.
struct SteadyHoldings {
  uint64_t bytes = 0;
  std::vector<std::string> unknown;
};
SteadyHoldings steady_holdings(const Plan& plan, int64_t source_rows, const SourceLength& source_length, int threads);

/// The message of the error for fixed buffers that need more than `budget`, about the largest (the
/// StageError it becomes names the stage); empty when they fit. `largest` is set to that stage.
std::string fixed_buffers_over_budget(const Plan& plan, const std::vector<FixedBuffer>& buffers, uint64_t budget,
                                      int* largest);

}  // namespace pipec
