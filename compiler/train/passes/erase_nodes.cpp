#include "compiler/train/passes/erase_nodes.h"

namespace pipec {

void erase_nodes(ModelGraph& g, const std::vector<bool>& removed) {
  std::vector<GraphNode> kept;
  std::vector<int> new_index(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!removed[i]) {
      new_index[i] = static_cast<int>(kept.size());
      kept.push_back(std::move(g.nodes[i]));
    }
  remap_forward_links(kept, new_index);
  g.nodes = std::move(kept);
}

}  // namespace pipec
