#include "runtime/serve/fold_parameter_casts.h"

#include "runtime/train/math/round_16bit.h"

namespace pipec {

int fold_parameter_casts(ModelGraph& g, FlatBuffers<float>& weights) {
  std::vector<int> readers(g.values.size(), 0);
  for (const GraphNode& n : g.nodes)
    for (int v : n.inputs) ++readers[v];
  std::vector<int> replacement(g.values.size(), -1);
  std::vector<int> new_index(g.nodes.size(), -1);
  std::vector<GraphNode> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    GraphNode& n = g.nodes[i];
    const int p = n.op == ModelOp::Round ? n.inputs.at(0) : -1;
    // A parameter read by this node alone (a parameter also read unrounded keeps its f32 values).
    if (p >= 0 && g.values[p].role == ValueRole::Param && readers[p] == 1 && n.outputs.at(0) != g.output) {
      const GraphValue& v = g.values[p];
      float* at = weights.params.data() + v.offset;
      const int64_t count = v.elements_per_example();
      if (n.attrs_as<RoundAttrs>().dtype == Float16::BF16) round_to_bf16(at, at, count);
      else round_to_f16(at, at, count);
      replacement[n.outputs[0]] = p;
      continue;
    }
    for (int& in : n.inputs)
      if (replacement[in] >= 0) in = replacement[in];
    new_index[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(n));
  }
  const int folded = static_cast<int>(g.nodes.size() - kept.size());
  remap_forward_links(kept, new_index);
  g.nodes = std::move(kept);
  return folded;
}

}  // namespace pipec
