// `pipec build --train`: the preprocessing a served model runs on each request before its forward pass,
// cut out of the train block's data pipeline.
//
// A request is a batch of the records the data's source reads (a tfrecord's features, a csv's columns);
// the served plan is that source followed by the pipeline's maps up to its batch, ending in the fields
// the model reads. Stages that only choose, order or time the training examples (shuffle, repeat,
// take, skip, shard, cache, prefetch, to) are left out: a served request is every example it holds, in
// its order. Stages that would change which examples a request gets (filter, unbatch, several sources)
// or maps whose output depends on anything but the record (random ops, which are training-time
// augmentation; a map after batch) make the spec unservable, with an error naming the stage.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/plan/plan.h"

namespace pipec {

/// The served plan of `lowered` (a train block's data, as lowered, before the optimizer): stage 0 its
/// source, then its maps, the last one returning exactly `model_fields`, in that order. nullopt, with
/// `error` saying which stage stops it and why ("chess.pipe:14:5: ..."), when it cannot be served.
/// The caller optimizes it (projection pushdown then shrinks the source to the fields the model needs).
std::optional<Plan> cut_serving_plan(const Plan& lowered, const std::vector<std::string>& model_fields,
                                     std::string& error);

}  // namespace pipec
