#include "runtime/io/errors.h"

#include <fmt/format.h>

namespace pipec {

DataError::DataError(Kind kind, std::string reason, DataLocation where)
    : std::runtime_error(format_location(where) + reason),
      kind_(kind),
      reason_(std::move(reason)),
      where_(std::move(where)) {}

std::string_view DataError::kind_name(Kind kind) {
  switch (kind) {
    case Kind::DataLoss: return "data loss";
    case Kind::NotFound: return "not found";
    case Kind::InvalidArgument: return "invalid argument";
    case Kind::Io: return "I/O error";
  }
  return "unknown";
}

std::string DataError::format_location(const DataLocation& where) {
  std::string out;
  auto sep = [&out](std::string_view s) {
    if (!out.empty()) out += ' ';
    out += s;
  };
  if (!where.file.empty()) out = where.file + ":";
  if (where.record >= 0) sep(fmt::format("record {}", where.record));
  if (where.offset >= 0) {
    // "record 3 at byte offset 10" reads better than "record 3 byte offset 10".
    const char* what = where.uncompressed_offset ? "uncompressed byte offset" : "byte offset";
    sep(where.record >= 0 ? fmt::format("at {} {}", what, where.offset) : fmt::format("{} {}", what, where.offset));
  }
  if (out.empty()) return out;
  if (out.back() != ':') out += ':';
  return out + ' ';
}

}  // namespace pipec
