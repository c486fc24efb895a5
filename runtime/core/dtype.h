// Element data types shared by the compiler and the runtime.
//
// The runtime owns this list because a built library needs it without the compiler; the compiler
// includes it to type expressions. Keep the order stable: plans serialize DType as its integer value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pipec {

#define PIPEC_DTYPES(X) \
  X(Bool, "bool", 1)    \
  X(U8, "u8", 1)        \
  X(I8, "i8", 1)        \
  X(U16, "u16", 2)      \
  X(I16, "i16", 2)      \
  X(U32, "u32", 4)      \
  X(I32, "i32", 4)      \
  X(U64, "u64", 8)      \
  X(I64, "i64", 8)      \
  X(F16, "f16", 2)      \
  X(BF16, "bf16", 2)    \
  X(F32, "f32", 4)      \
  X(F64, "f64", 8)      \
  X(Bytes, "bytes", 0) /* variable-length byte string; size 0 = not a fixed-size scalar */

enum class DType : uint8_t {
#define PIPEC_DTYPE_ENUM(name, text, size) name,
  PIPEC_DTYPES(PIPEC_DTYPE_ENUM)
#undef PIPEC_DTYPE_ENUM
};

/// The spelling used in specs and printed IR ("f32").
std::string_view dtype_name(DType t);
/// Bytes per element; 0 for Bytes.
size_t dtype_size(DType t);
/// Parses a spelling ("f32", "i64", ...); nullopt when unknown.
std::optional<DType> parse_dtype(std::string_view name);

inline bool is_float(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64; }
inline bool is_signed_int(DType t) { return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64; }
inline bool is_unsigned_int(DType t) { return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64; }
inline bool is_integer(DType t) { return is_signed_int(t) || is_unsigned_int(t); }
inline bool is_numeric(DType t) { return is_integer(t) || is_float(t) || t == DType::Bool; }

}  // namespace pipec
