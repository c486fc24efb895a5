// Repeated JPEG index: a cropping decode (crop pushdown's result) that a repeat runs again on the same
// files keeps an index of each file the first time (runtime/image/jpeg_window_index.h: the file
// rewritten with a restart marker after every MCU, as far as the windows need), and later passes
// decode only the MCUs under the window instead of entropy-decoding every row above it. The pixels
// are the same. The first pass pays a little: for a 256x256 window of the benchmark's 1280x720
// photos, building the index as far as the window and cutting the window cost about 1.15x the
// cropping decode in CPU time, and a later pass about a quarter of it, so two passes win
// (kMinRepeatedPasses; bench/images/jpeg_index_cost.cpp measures both). The index is bounded by
// PIPEC_JPEG_INDEX_MEMORY (runtime/image/jpeg_index_cache.h).
#pragma once

#include <cstdint>

#include "runtime/plan/plan.h"

namespace pipec {

/// Passes over the same files from which indexing is worth its first pass.
constexpr int64_t kMinRepeatedPasses = 2;

/// Sets `index = true` on every cropping decode_jpeg in a map stage that repeats run at least
/// kMinRepeatedPasses times (a repeat or fused shuffle_repeat upstream, or downstream with no cache in
/// between; repeat() without a count runs forever). Returns true when the plan changed. Pass name:
/// "repeated_jpeg_index".
bool repeated_jpeg_index(Plan& plan);

}  // namespace pipec
