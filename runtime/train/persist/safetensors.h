// Weights in the safetensors format (huggingface/safetensors), readable by torch, JAX, Keras and numpy:
//   8 bytes: N, the header's length, unsigned little-endian
//   N bytes: a JSON object {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//            "__metadata__": {"key": "value", ...}}, padded with spaces to a multiple of 8
//   then the tensors' raw little-endian bytes; offsets are relative to the end of the header and tile
//   the data without gaps.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/core/tensor.h"

namespace pipec {

struct SafetensorsEntry {
  std::string name;
  Shape shape;
  const float* data = nullptr;  // shape's element count of them
};

/// The file's bytes for F32 tensors in the given order (a training checkpoint writes them itself, with
/// their CRC beside them).
std::string safetensors_bytes(const std::vector<SafetensorsEntry>& entries,
                              const std::map<std::string, std::string>& metadata = {});

/// Writes F32 tensors, in the given order, to `path` (a temporary file renamed into place, so a reader
/// never sees half a file). Throws std::runtime_error naming the file.
void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& entries,
                       const std::map<std::string, std::string>& metadata = {});

struct SafetensorsTensor {
  Shape shape;
  std::vector<float> data;
};

struct SafetensorsFile {
  std::map<std::string, SafetensorsTensor> tensors;
  std::vector<std::string> order;  // names in the order of their data
  std::map<std::string, std::string> metadata;
};

/// Reads a safetensors file whose tensors are F32 (F16, BF16 and F64 are converted). Throws
/// std::runtime_error naming the file and what is wrong (truncated, bad header, overlapping data...).
SafetensorsFile read_safetensors(const std::string& path);
/// The same from the file's bytes; `path` names them in errors.
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& path);

}  // namespace pipec
