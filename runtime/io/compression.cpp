#include "runtime/io/compression.h"

#include <string>

namespace pipec {

std::string_view compression_name(Compression c) {
  switch (c) {
    case Compression::None: return "none";
    case Compression::Gzip: return "gzip";
    case Compression::Zlib: return "zlib";
  }
  return "none";
}

std::optional<Compression> parse_compression(std::string_view name) {
  std::string lower(name);
  for (char& ch : lower) ch = (ch >= 'A' && ch <= 'Z') ? char(ch - 'A' + 'a') : ch;
  if (lower.empty() || lower == "none") return Compression::None;
  if (lower == "gzip" || lower == "gz") return Compression::Gzip;
  if (lower == "zlib") return Compression::Zlib;
  return std::nullopt;
}

Compression compression_from_path(std::string_view path) {
  if (path.ends_with(".gz")) return Compression::Gzip;
  if (path.ends_with(".zz") || path.ends_with(".zlib")) return Compression::Zlib;
  return Compression::None;
}

}  // namespace pipec
