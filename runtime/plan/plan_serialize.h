// A Plan as bytes: what `pipec build` embeds in a shared library and what the library's `pipe_open`
// turns back into a Plan to run.
//
// The framing and record codec are runtime/plan/blob_codec.h's (magic "PIPEPLAN", kPlanFormatVersion);
// the payload is the plan's name, then the stages in order.
//
// Everything a stage needs to run is kept: op, constant arguments, inputs, schema (with defaults),
// element types, the map/filter ExprFunction (instructions, attributes, types, spec locations), a
// flat_map's inner pipeline (a plan of its own, written the same way) and,
// for stages with compiled code, the native kernel's symbol and input fields. Function pointers and
// code ownership (NativeKernel::fn, keep_alive) cannot travel: the loader resolves `symbol` again.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "runtime/plan/blob_codec.h"
#include "runtime/plan/plan.h"

namespace pipec {

/// Bumped whenever the payload layout changes; a decoder refuses other versions.
constexpr uint32_t kPlanFormatVersion = 2;  // 2: a stage may carry an inner pipeline (flat_map)

/// A plan blob that is truncated, corrupt, of another format version or not a plan at all
/// (runtime/plan/blob_codec.h says what the message holds).
using PlanDecodeError = BlobDecodeError;

/// The plan as a self-contained byte string.
std::string encode_plan(const Plan& plan);

/// The plan encoded in `blob`. `source` names the blob in errors (a file, "the embedded plan").
/// Native kernels come back with their symbol and input fields but no function pointer.
/// Throws PlanDecodeError.
Plan decode_plan(std::string_view blob, const std::string& source = "plan");

}  // namespace pipec
