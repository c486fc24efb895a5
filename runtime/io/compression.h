// The compression wrappers a record file may have: none, gzip (RFC 1952) or zlib (RFC 1950).
// Spelled as in tf.data ("", "NONE", "GZIP", "ZLIB"); pipec specs use lower case.
#pragma once

#include <optional>
#include <string_view>

namespace pipec {

enum class Compression { None, Gzip, Zlib };

/// "none", "gzip", "zlib".
std::string_view compression_name(Compression c);
/// Accepts "", "none", "gzip", "gz", "zlib" in any letter case; nullopt otherwise.
std::optional<Compression> parse_compression(std::string_view name);
/// Gzip for a path ending in ".gz", Zlib for ".zz" or ".zlib", None otherwise. A guess for tools;
/// readers should be told the compression, as TensorFlow's are.
Compression compression_from_path(std::string_view path);

}  // namespace pipec
