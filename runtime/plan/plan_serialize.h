// A Plan as bytes: what `pipec build` embeds in a shared library and what the library's `pipe_open`
// turns back into a Plan to run.
//
// The encoding is versioned and self-describing enough to fail clearly: a magic, a format version, the
// payload length, the payload, then a CRC32 of everything before it. Inside the payload every record
// (stage, value, type, instruction, ...) starts with a one-byte tag, so a decoder that disagrees with
// the writer's layout stops at the first record with the offset and what it expected, instead of
// reading garbage.
//
// Blob layout (integers little-endian, independent of the host):
//   [0,8)      magic "PIPEPLAN"
//   [8,12)     u32 format version (kPlanFormatVersion)
//   [12,20)    u64 payload size n
//   [20,20+n)  payload: the plan's name, then the stages in order
//   [20+n,+4)  u32 CRC32 (zlib polynomial) of every byte before it
// Payload primitives: u8/u32/i32/u64/i64 fixed width; f64 as its IEEE-754 bits; strings as a u64
// length then the bytes; lists as a u64 count then the items.
//
// Everything a stage needs to run is kept: op, constant arguments, inputs, schema (with defaults),
// element types, the map/filter ExprFunction (instructions, attributes, types, spec locations) and,
// for stages with compiled code, the native kernel's symbol and input fields. Function pointers and
// code ownership (NativeKernel::fn, keep_alive) cannot travel: the loader resolves `symbol` again.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "runtime/plan/plan.h"

namespace pipec {

/// Bumped whenever the payload layout changes; a decoder refuses other versions.
constexpr uint32_t kPlanFormatVersion = 1;

/// A blob that is truncated, corrupt, of another format version or not a plan at all. The message
/// starts with the source's name and says what was wrong and at which byte offset.
class PlanDecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The plan as a self-contained byte string.
std::string encode_plan(const Plan& plan);

/// The plan encoded in `blob`. `source` names the blob in errors (a file, "the embedded plan").
/// Native kernels come back with their symbol and input fields but no function pointer.
/// Throws PlanDecodeError.
Plan decode_plan(std::string_view blob, const std::string& source = "plan");

}  // namespace pipec
