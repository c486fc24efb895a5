#include "runtime/model/step_arena.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace pipec {

namespace {

constexpr int64_t kAlign = 64;

int64_t aligned(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

bool in_step_arena(const ModelGraph& g, int id) {
  const GraphValue& v = g.values.at(static_cast<size_t>(id));
  return v.role != ValueRole::Param && v.role != ValueRole::State && v.grad_of < 0;
}

std::vector<int> value_last_uses(const ModelGraph& g) {
  std::vector<int> last(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs) last[static_cast<size_t>(v)] = static_cast<int>(i);
  const int end = static_cast<int>(g.nodes.size());
  if (g.output >= 0) last[static_cast<size_t>(g.output)] = end;
  if (g.loss >= 0) last[static_cast<size_t>(g.loss)] = end;
  return last;
}

std::vector<int> value_first_writes(const ModelGraph& g) {
  std::vector<int> first(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].outputs)
      if (first[static_cast<size_t>(v)] < 0) first[static_cast<size_t>(v)] = static_cast<int>(i);
  return first;
}

StepArena plan_step_arena(const ModelGraph& g, int64_t rows, const std::vector<int>& first_write,
                          const std::vector<int>& last_use, const std::vector<bool>& bf16) {
  if (first_write.size() != g.values.size() || last_use.size() != g.values.size())
    throw std::logic_error("plan_step_arena: one first write and one last use per value");
  StepArena a;
  a.rows = rows;
  a.offset.assign(g.values.size(), -1);
  struct Item {
    int id;
    int64_t bytes;
    int from, to;  // nodes, inclusive
  };
  std::vector<Item> items;
  for (size_t v = 0; v < g.values.size(); ++v) {
    const int id = static_cast<int>(v);
    if (first_write[v] < 0 || !in_step_arena(g, id)) continue;  // fed by the caller, or never computed
    const int64_t elements = std::max<int64_t>(shape_num_elements(g.full_shape(id, rows)), 1);
    const DType stored = !bf16.empty() && bf16[v] ? DType::BF16 : g.values[v].dtype;
    const int64_t bytes = aligned(elements * static_cast<int64_t>(dtype_size(stored)));
    items.push_back({id, bytes, first_write[v], std::max(first_write[v], last_use[v])});
  }
  // Largest first (ties: earliest first, then by id, so the plan is the same on every run).
  std::sort(items.begin(), items.end(), [](const Item& x, const Item& y) {
    if (x.bytes != y.bytes) return x.bytes > y.bytes;
    if (x.from != y.from) return x.from < y.from;
    return x.id < y.id;
  });
  std::vector<const Item*> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;  // byte ranges of placed items alive at the same time
  for (const Item& it : items) {
    busy.clear();
    for (const Item* p : placed)
      if (p->from <= it.to && it.from <= p->to) {
        const int64_t off = a.offset[static_cast<size_t>(p->id)];
        busy.emplace_back(off, off + p->bytes);
      }
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;  // the lowest offset whose range [at, at + bytes) meets no busy range
    for (const auto& [lo, hi] : busy) {
      if (at + it.bytes <= lo) break;
      at = std::max(at, hi);
    }
    a.offset[static_cast<size_t>(it.id)] = at;
    a.bytes = std::max(a.bytes, at + it.bytes);
    placed.push_back(&it);
  }
  return a;
}

}  // namespace pipec
