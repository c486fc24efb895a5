#include "runtime/dist/communicator.h"

namespace pipec {

const char* reduction_order_name(ReductionOrder o) { return o == ReductionOrder::Ranks ? "ranks" : "library"; }

std::string broadcast_string(Communicator& c, const std::string& s, int root, std::string_view what) {
  uint64_t size = s.size();
  c.broadcast(&size, sizeof size, root, what);
  std::string out = c.rank() == root ? s : std::string(size, '\0');
  if (size > 0) c.broadcast(out.data(), size, root, what);
  return out;
}

void broadcast_floats(Communicator& c, std::vector<float>& v, int root, std::string_view what) {
  if (!v.empty()) c.broadcast(v.data(), v.size() * sizeof(float), root, what);
}

}  // namespace pipec
