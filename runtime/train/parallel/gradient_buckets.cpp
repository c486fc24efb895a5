#include "runtime/train/parallel/gradient_buckets.h"

#include <algorithm>
#include <map>

namespace pipec {

std::vector<GradientBucket> plan_gradient_buckets(const ModelGraph& g, int64_t bytes) {
  // Per parameter (by value id): the last node whose outputs include one of its gradients.
  std::map<int, int> last_writer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int out : g.nodes[i].outputs) {
      const int of = g.values[static_cast<size_t>(out)].grad_of;
      if (of >= 0) last_writer[of] = static_cast<int>(i);
    }
  const int64_t per_bucket = std::max<int64_t>(1, bytes / static_cast<int64_t>(sizeof(float)));
  std::vector<GradientBucket> buckets;
  GradientBucket open;
  bool has_open = false;
  // From the last parameter of the flat buffer to the first: the order the backward pass finishes them.
  for (size_t k = g.params.size(); k-- > 0;) {
    const GraphValue& p = g.values[static_cast<size_t>(g.params[k])];
    const int64_t begin = p.offset, end = p.offset + shape_num_elements(p.shape);
    if (!has_open) {
      open = GradientBucket{begin, end, -1};
      has_open = true;
    }
    open.begin = std::min(open.begin, begin);
    open.end = std::max(open.end, end);
    if (auto it = last_writer.find(g.params[k]); it != last_writer.end())
      open.last_writer = std::max(open.last_writer, it->second);
    if (open.end - open.begin >= per_bucket) {
      buckets.push_back(open);
      has_open = false;
    }
  }
  if (has_open) buckets.push_back(open);
  return buckets;
}

}  // namespace pipec
