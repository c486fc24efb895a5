// The training step's activations and gradients in one block, at offsets planned from liveness.
//
// Each value a node computes (not the parameters, state and gradients, which are views of the flat
// buffers, nor the batch fed in) lives from the node that first writes it to the last node that reads
// it (the output and the loss to the end of the step). Values whose lifetimes overlap get disjoint byte
// ranges; the others may share. The offsets are planned once per batch size, largest values first, each
// at the lowest offset free for its whole lifetime (a first-fit interval packing), 64-byte aligned; a
// plan for B rows serves any batch of at most B rows (every value shrinks in place). The executors
// allocate the block once and hand out views: a step makes no allocations, and its memory is the
// block's size, which `pipec explain` prints beside the peak of live bytes (the size no packing can
// go below).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/model/model_graph.h"

namespace pipec {

struct StepArena {
  int64_t rows = 0;
  int64_t bytes = 0;            // the block's size
  std::vector<int64_t> offset;  // per value: its byte offset in the block; -1 when it is not in the block
};

/// Whether value `id` of `g` lives in the arena: computed by a node and not a view of the flat buffers.
bool in_step_arena(const ModelGraph& g, int id);

/// The node that last reads each value (the graph's output and loss: g.nodes.size(), the caller reads
/// them after the step; -1 when nothing reads it) and the node that first writes it (its producer).
std::vector<int> value_last_uses(const ModelGraph& g);
std::vector<int> value_first_writes(const ModelGraph& g);

/// The plan for batches of `rows`. An executor that writes a value before its producer's turn (the
/// fast executor runs a layer's backward nodes as one call, at the first of them) or reads it after its
/// last reader passes its own `first_write` / `last_use` (the defaults above otherwise). A value marked
/// in `bf16` (the fast executor's values stored as bf16, runtime/model/bf16_storage.h) takes 2 bytes an
/// element.
StepArena plan_step_arena(const ModelGraph& g, int64_t rows, const std::vector<int>& first_write,
                          const std::vector<int>& last_use, const std::vector<bool>& bf16 = {});
inline StepArena plan_step_arena(const ModelGraph& g, int64_t rows) {
  return plan_step_arena(g, rows, value_first_writes(g), value_last_uses(g));
}

}  // namespace pipec
