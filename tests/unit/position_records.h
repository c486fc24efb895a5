// Chess-like TFRecord files for the input pipeline's tests: small, deterministic, and each record's
// fields derived from its id, so a test can tell which record reached which place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "runtime/io/example_writer.h"
#include "runtime/io/tfrecord_writer.h"

namespace pipec::testing {

/// Writes `n` records with ids first_id, first_id + 1, ...: d = 194 bytes derived from the id, s = the
/// id. The record at index `short_d` (if any) has a d of 193 bytes, which a schema's bytes[194] rejects.
inline void write_positions(const std::filesystem::path& path, int64_t first_id, int n, int short_d = -1,
                            Compression compression = Compression::None) {
  TFRecordWriterOptions o;
  o.sync = false;
  o.compression = compression;
  TFRecordWriter w(path.string(), o);
  for (int i = 0; i < n; ++i) {
    int64_t id = first_id + i;
    std::string d(i == short_d ? 193 : 194, '\0');
    for (size_t k = 0; k < d.size(); ++k) d[k] = static_cast<char>((id * 31 + static_cast<int64_t>(k)) & 0xff);
    ExampleWriter ex;
    std::string_view dv = d;
    ex.add_bytes("d", std::span<const std::string_view>(&dv, 1));
    ex.add_int64("s", std::span<const int64_t>(&id, 1));
    w.write(ex.serialize());
  }
  w.close();
}

}  // namespace pipec::testing
