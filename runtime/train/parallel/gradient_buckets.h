// The flat gradient buffer cut into buckets for data-parallel training: each bucket is a contiguous
// range of the buffer (no copy: the all-reduce runs on the gradients in place), about `bytes` large
// (25 MB by default, PyTorch DDP's choice), in the order the backward pass finishes them, so that a
// bucket's all-reduce can start while the backward pass computes the next.
//
// The backward pass walks the model from its output back, so it finishes the last parameters of the
// flat buffer first: buckets are cut from the end of the buffer towards its start. Each knows the last
// node (in g.nodes order) that writes into it; once that node has run, the bucket's gradients are final.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/model/model_graph.h"

namespace pipec {

struct GradientBucket {
  int64_t begin = 0, end = 0;  // elements [begin, end) of the flat gradient buffer
  /// The last node (index into g.nodes) writing a gradient in the range; -1 when no node does (the
  /// gradients stay zero, and the bucket is final from the start of the backward pass).
  int last_writer = -1;
};

/// PyTorch DistributedDataParallel's default bucket size.
constexpr int64_t kDefaultBucketBytes = 25 << 20;

/// `g`'s gradient buffer (g.param_elements() floats) in buckets of at least `bytes` (the last one may be
/// smaller; a parameter is never split), in launch order: from the end of the buffer to its start.
std::vector<GradientBucket> plan_gradient_buckets(const ModelGraph& g, int64_t bytes = kDefaultBucketBytes);

}  // namespace pipec
