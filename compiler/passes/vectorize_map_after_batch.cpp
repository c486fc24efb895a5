#include "compiler/passes/vectorize_map_after_batch.h"

#include "compiler/passes/plan_edit.h"

namespace pipec {

namespace {

bool movable(const Plan& plan, int batch) {
  const int m = map_before_batch(plan, batch);
  return m >= 0 && !plan.stages[m].native && vectorize_refusal(plan, batch).empty();
}

// The element of `batch(n)` over `fields`: each field gets the batch dimension `batch_dim` in front.
ElementInfo batched(const std::vector<Field>& fields, const ElementInfo& like, int64_t batch_dim) {
  ElementInfo e = like;
  e.fields.clear();
  for (const Field& f : fields) {
    Type t = *f.type;
    t.shape.insert(t.shape.begin(), batch_dim);
    e.fields.push_back(Field{f.name, std::make_shared<const Type>(t)});
  }
  return e;
}

}  // namespace

std::string vectorize_refusal(const Plan& plan, int batch) {
  const int m = map_before_batch(plan, batch);
  if (m < 0) return "it is not a map whose only reader is the batch, with nothing ignore_errors after it";
  const Stage& map = plan.stages[m];
  // Batching the map's input needs every input field dense; the per-row results must stack into a
  // dense batch again.
  if (!fixed_shapes(plan.stages[map.inputs[0]].element.fields) || !fixed_shapes(map.element.fields))
    return "a field it reads or writes has a shape known only at run time";
  // After a repeat one batch may hold the end of one epoch and the start of the next, but a chunk
  // has one epoch: the random keys of the map's rows could not all be reproduced. Only random ops
  // read the epoch, so a map without them moves all the same (shuffle | repeat | map | batch, the
  // usual tf.data order, is vectorized too).
  if (has_random_ops(*map.fn) && upstream_any(plan, map.inputs[0], [](const Stage& s) {
        return s.kind == StageKind::Repeat || s.kind == StageKind::ShuffleRepeat;
      }))
    return "a repeat feeds it and it draws random numbers, so one batch could hold two epochs";
  return {};
}

bool vectorize_map_after_batch(Plan& plan) {
  bool changed = false;
  for (int i = 0; i < static_cast<int>(plan.stages.size()); ++i) {
    if (!movable(plan, i)) continue;
    const int m = plan.stages[i].inputs[0];
    Stage batch = plan.stages[i];
    Stage map = plan.stages[m];
    const ElementInfo out = batch.element;  // a copy: batch.element is replaced below
    const int64_t batch_dim = out.fields.empty() ? batch.arg("size")->i : out.fields[0].type->shape.at(0);
    // The batch now reads what the map read; the map reads the batch and produces what the batch did.
    batch.inputs = map.inputs;
    batch.element = batched(plan.stages[map.inputs[0]].element.fields, out, batch_dim);
    map.inputs = {m};
    map.element = out;
    map.args.push_back({"per_row", Value::make_int(batch.arg("size")->i)});
    plan.stages[m] = std::move(batch);
    plan.stages[i] = std::move(map);
    changed = true;
  }
  return changed;
}

}  // namespace pipec
