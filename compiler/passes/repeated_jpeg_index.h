// Repeated JPEG index: a cropping decode (crop pushdown's result) that a repeat runs again on the same
// files keeps an index of each file the first time (runtime/image/jpeg_window_index.h: the file
// rewritten with a restart marker after every MCU), and later passes decode only the MCUs under the
// window instead of entropy-decoding every row above it. The pixels are the same. The first pass pays
// for the rewrite: for a 256x256 window of the benchmark's 1280x720 photos, a rewrite and a cut cost
// about 1.7x the cropping decode, and every later pass about a quarter of it, so two passes break even
// and three win (kMinRepeatedPasses). The index is bounded by PIPEC_JPEG_INDEX_MEMORY
// (runtime/image/jpeg_index_cache.h).
#pragma once

#include <cstdint>

#include "runtime/plan/plan.h"

namespace pipec {

/// Passes over the same files from which indexing is worth its first pass.
constexpr int64_t kMinRepeatedPasses = 3;

/// Sets `index = true` on every cropping decode_jpeg in a map stage that repeats run at least
/// kMinRepeatedPasses times (a repeat or fused shuffle_repeat upstream, or downstream with no cache in
/// between; repeat() without a count runs forever). Returns true when the plan changed. Pass name:
/// "repeated_jpeg_index".
bool repeated_jpeg_index(Plan& plan);

}  // namespace pipec
