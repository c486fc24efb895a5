// NumPy .npy files: the format `pipec run --output` writes each element's fields in, and the format
// the conformance fixtures (written by real NumPy) are read back from.
//
//   write_npy("out/000000/board.npy", batch.field("board"));
//   Tensor t = read_npy("fixtures/case/expected/000000/board.npy");
//
// Format (NumPy's "NPY format" v1.0): the magic "\x93NUMPY", version bytes 1 0, a little-endian u16
// header length, then an ASCII Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and ended by '\n' so the array data starts at a multiple of 64 bytes; then the
// elements in C (row-major) order. The writer lays the header out byte for byte as numpy.save does
// (including the spare spaces numpy leaves after the dict so the first dimension can grow in place),
// so a file pipec writes is identical to the one numpy writes for the same array.
//
// Dtypes: |b1 |u1 |i1 <u2 <i2 <u4 <i4 <u8 <i8 <f2 <f4 <f8 map to bool u8 i8 u16 i16 u32 i32 u64 i64 f16
// f32 f64. Byte strings (DType::Bytes) are written as |S<n>, n = the longest string (at least 1, as
// numpy does for an array of empty strings), each value null-padded to n bytes. Reading |S<n> strips
// the trailing NULs of each value, as numpy does when it hands out an item, so a string that itself
// ended in NUL bytes does not round-trip (a limit of the format, not of this code). bf16 has no NumPy
// dtype: writing it is an InvalidArgument error.
//
// The reader also accepts format versions 2.0 and 3.0 (u32 header length), '=' (native = little
// endian here) and '|'/'>' byte orders for one-byte types, keys in any order, and either quote. It
// rejects, with a DataError that names the file and the reason: a wrong magic, an unknown version, a
// header or data cut short, a malformed header, fortran_order True, big-endian or other unsupported
// dtypes (object, unicode, complex, structured), and bad shapes. Bytes after the array data are
// ignored, as numpy.load ignores them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/core/tensor.h"

namespace pipec {

/// What a .npy header says.
struct NpyHeader {
  int version_major = 1;
  int version_minor = 0;
  std::string descr;         ///< as written, e.g. "<f4", "|S12"
  DType dtype = DType::F32;  ///< Bytes for |S<n>
  int64_t item_size = 0;     ///< bytes per element (n for |S<n>)
  bool fortran_order = false;
  Shape shape;
  size_t data_offset = 0;  ///< where the array data starts in the file
};

/// The NumPy descr for a dtype ("<f4"); for Bytes, the one for a tensor's longest string ("|S7").
/// Throws DataError (InvalidArgument) for bf16.
std::string npy_descr(DType dtype, int64_t string_item_size = 1);
std::string npy_descr(const Tensor& t);

/// The whole .npy file for `t`, as bytes.
std::string encode_npy(const Tensor& t);
/// Writes encode_npy(t) to `path` (the directory must exist). Throws DataError (Io, or
/// InvalidArgument for bf16) naming the path.
void write_npy(const std::string& path, const Tensor& t);

/// Parses the header of a .npy file held in `bytes`; `name` is used in error messages.
NpyHeader parse_npy_header(std::string_view bytes, const std::string& name);
/// Decodes a whole .npy file held in `bytes`. If `header` is given it receives the parsed header.
Tensor decode_npy(std::string_view bytes, const std::string& name, NpyHeader* header = nullptr);
/// Reads and decodes the .npy file at `path`.
Tensor read_npy(const std::string& path, NpyHeader* header = nullptr);

}  // namespace pipec
