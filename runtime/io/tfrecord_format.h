// The TFRecord framing, shared by the reader and the writer. Each record is
//
//   uint64 length            little-endian
//   uint32 masked_crc32c(length bytes)
//   byte   data[length]
//   uint32 masked_crc32c(data)
//
// (see crc32c.h for the masking). There is no file header, footer or index: a file is just the
// records back to back, which is why a damaged length field loses the rest of the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/core/le_codec.h"
#include "runtime/io/crc32c.h"

namespace pipec::tfrecord {

inline constexpr size_t kHeaderSize = 12;  // length + its CRC
inline constexpr size_t kFooterSize = 4;   // data CRC

// Lengths up to 2^48 (256 TiB) are accepted; anything larger cannot be a real record and would
// overflow size arithmetic, so it is reported as corrupt even when its CRC happens to match.
inline constexpr uint64_t kMaxRecordLength = uint64_t(1) << 48;

/// What a record whose data does not match its data CRC is reported as (with the record's place).
inline constexpr const char* kDataCrcMismatch = "data CRC mismatch (corrupt record)";

/// Whether `data` matches `stored`, the masked CRC32C of its footer.
inline bool data_crc_matches(std::string_view data, uint32_t stored) {
  return crc32c_masked(data.data(), data.size()) == stored;
}

/// Fills the 12-byte header for a record of `length` bytes.
inline void encode_header(char* out, uint64_t length) {
  store_le64(out, length);
  store_le32(out + 8, crc32c_masked(out, 8));
}

/// Appends `data` framed as one record (header, data, data CRC) to `out`: for writers that hand whole
/// records to the OS in one write (runtime/io/event_file_writer.h).
inline void append_record(std::string& out, std::string_view data) {
  char header[kHeaderSize];
  encode_header(header, data.size());
  out.append(header, kHeaderSize);
  out.append(data.data(), data.size());
  append_le32(out, crc32c_masked(data.data(), data.size()));
}

}  // namespace pipec::tfrecord
