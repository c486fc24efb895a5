// Rule `shuffle_before_decode` (seed 004: shuffle the file names, they are cheap to shuffle; seed 003
// shuffles 256x256 patches, not whole images): a shuffle whose buffer holds large elements made by
// maps that do not depend on the order (no random numbers) can move before those maps, where an
// element is at least kSmaller times smaller; the output is then a permutation of the same elements
// (not the same order), and the buffer takes a fraction of the memory.
#include <fmt/format.h>

#include "compiler/advice/facts.h"
#include "compiler/advice/rules.h"
#include "compiler/passes/plan_edit.h"
#include "runtime/exec/memory_budget.h"

namespace pipec {

namespace {

constexpr double kLargeBuffer = 64e6;  // bytes
constexpr double kSmaller = 10;

// A map the shuffle may move before: one element in, one out, its results independent of the order.
bool order_free_map(const Plan& plan, int s) {
  const Stage& st = plan.stages[s];
  return st.kind == StageKind::Map && st.inputs.size() == 1 && !draws_random(st) && !st.arg("per_row") &&
         consumers(plan, s).size() == 1;
}

}  // namespace

void advise_shuffle_before_decode(const RunFacts& f, std::vector<Advice>& out) {
  const Plan& plan = *f.plan;
  for (int sh = 0; sh < static_cast<int>(plan.stages.size()); ++sh) {
    const Stage& st = plan.stages[sh];
    if (st.kind != StageKind::Shuffle && st.kind != StageKind::ShuffleRepeat) continue;
    const Value* buffer = st.arg("buffer");
    if (!buffer || buffer->kind != Value::Int) continue;
    const int input = st.inputs.at(0);
    const double element = measured_element_bytes(f, input);
    const double held = element * static_cast<double>(buffer->i);
    if (held < kLargeBuffer) continue;
    // Up the chain of order-free maps: the smallest element before one of them.
    int first_map = -1, before = -1;
    double smallest = element;
    for (int cur = input; order_free_map(plan, cur);) {
      const int up = plan.stages[cur].inputs[0];
      const double e = measured_element_bytes(f, up);
      if (f.stages[up].elements_out > 0 && e < smallest) {
        smallest = e;
        first_map = cur;
        before = up;
      }
      cur = up;
    }
    if (first_map < 0 || smallest * kSmaller > element) continue;
    out.push_back(
        {"", sh,
         fmt::format("{}'s buffer holds {} elements of {} ({}); before {} an element is {}: shuffle there, right "
                     "after {}, and the buffer takes {} (the maps in between do not depend on the order)",
                     stage_label(plan, sh), buffer->i, format_bytes(static_cast<uint64_t>(element)),
                     format_bytes(static_cast<uint64_t>(held)), stage_label(plan, first_map),
                     format_bytes(static_cast<uint64_t>(smallest)), stage_label(plan, before),
                     format_bytes(static_cast<uint64_t>(smallest * static_cast<double>(buffer->i))))});
  }
}

}  // namespace pipec
