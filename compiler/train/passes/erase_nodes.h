// What the step passes that take nodes out of a graph share: dropping them and keeping the
// forward links (GraphNode::forward) of the nodes left pointing at the right places.
#pragma once

#include <vector>

#include "runtime/model/model_graph.h"

namespace pipec {

/// Removes the nodes `removed` marks (one flag per node of `g`), keeping the others in order.
void erase_nodes(ModelGraph& g, const std::vector<bool>& removed);

}  // namespace pipec
