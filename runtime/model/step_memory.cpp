#include "runtime/model/step_memory.h"

#include "runtime/model/step_arena.h"

#include <stdexcept>

#include <fmt/format.h>

namespace pipec {

namespace {

// Values held in tensors of their own (not views of the flat buffers).
bool planned(const GraphValue& v) { return v.role != ValueRole::Param && v.role != ValueRole::State && v.grad_of < 0; }

int optimizer_slots(const ModelGraph& g) {
  for (const GraphNode& n : g.nodes) {
    if (n.op != ModelOp::OptimizerStep) continue;
    const OptimizerAttrs& a = n.attrs_as<OptimizerAttrs>();
    switch (a.kind) {
      case OptimizerKind::Sgd: return a.momentum.value_or(0) != 0 ? 1 : 0;  // the velocity
      case OptimizerKind::Adam:
      case OptimizerKind::AdamW: return 2;  // m and v
    }
  }
  return 0;
}

}  // namespace

StepMemory step_memory(const ModelGraph& g, int64_t rows) {
  StepMemory m;
  const int nodes = static_cast<int>(g.nodes.size());
  std::vector<int> last_use(g.values.size(), -1);
  for (int i = 0; i < nodes; ++i)
    for (int v : g.nodes[i].inputs) last_use[v] = i;
  // The output and the loss stay for the caller; inputs and the target are held from the start.
  if (g.output >= 0) last_use[g.output] = nodes;
  if (g.loss >= 0) last_use[g.loss] = nodes;
  auto bytes = [&](int v) {
    return static_cast<int64_t>(dtype_size(g.values[v].dtype)) *
           std::max<int64_t>(shape_num_elements(g.full_shape(v, rows)), 1);
  };
  int64_t live = 0;
  for (int v : g.inputs) live += bytes(v);
  if (g.target >= 0) live += bytes(g.target);
  m.input_bytes = live;
  m.arena_bytes = plan_step_arena(g, rows).bytes;
  for (int i = 0; i < nodes; ++i) {
    for (int o : g.nodes[i].outputs)
      if (planned(g.values[o])) live += bytes(o);
    if (live > m.peak_activation_bytes) {
      m.peak_activation_bytes = live;
      m.peak_node = i;
    }
    for (int v : g.nodes[i].inputs)
      if (last_use[v] == i && planned(g.values[v])) live -= bytes(v);
    // Values nobody reads are freed as soon as they are made.
    for (int o : g.nodes[i].outputs)
      if (last_use[o] < 0 && planned(g.values[o])) live -= bytes(o);
  }
  m.flat_bytes = 4 * (g.param_elements() * (2 + optimizer_slots(g)) + g.state_elements());
  return m;
}

std::string bytes_text(int64_t bytes) {
  if (bytes >= 1000000000) return fmt::format("{:.2f} GB", bytes / 1e9);
  if (bytes >= 1000000) return fmt::format("{:.1f} MB", bytes / 1e6);
  if (bytes >= 1000) return fmt::format("{:.1f} KB", bytes / 1e3);
  return fmt::format("{} bytes", bytes);
}

}  // namespace pipec
