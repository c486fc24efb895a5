#include "runtime/plan/blob_codec.h"

#include <cstring>

namespace pipec {

namespace {
constexpr size_t kHeaderSize = 20;
constexpr size_t kTrailerSize = 4;
}  // namespace

std::string frame_blob(const char (&magic)[8], uint32_t version, const std::string& payload) {
  std::string out(magic, sizeof magic);
  append_le32(out, version);
  append_le64(out, payload.size());
  out += payload;
  append_le32(out, crc32_zlib(out.data(), out.size()));
  return out;
}

std::string_view unframe_blob(std::string_view blob, const char (&magic)[8], uint32_t version,
                              const std::string& source, const char* noun) {
  auto err = [&](const std::string& what) { return BlobDecodeError(fmt::format("{}: {}", source, what)); };
  const auto* p = reinterpret_cast<const uint8_t*>(blob.data());
  if (blob.size() < sizeof magic || std::memcmp(p, magic, sizeof magic) != 0)
    throw err(fmt::format("not a pipec {} (bad magic)", noun));
  if (blob.size() < kHeaderSize + kTrailerSize)
    throw err(fmt::format("truncated {}: {} bytes, smaller than the {}-byte framing", noun, blob.size(),
                          kHeaderSize + kTrailerSize));
  const uint32_t stored_version = load_le32(p + 8);
  if (stored_version != version)
    throw err(fmt::format(
        "{} format version {} is not supported (this runtime reads version {}); rebuild with a matching pipec", noun,
        stored_version, version));
  const uint64_t payload = load_le64(p + 12);
  const uint64_t actual = blob.size() - kHeaderSize - kTrailerSize;
  if (payload != actual)
    throw err(fmt::format("{} {}: header says {} payload bytes, blob has {}",
                          payload > actual ? "truncated" : "corrupt", noun, payload, actual));
  const size_t crc_at = blob.size() - kTrailerSize;
  const uint32_t stored = load_le32(p + crc_at);
  const uint32_t computed = crc32_zlib(p, crc_at);
  if (stored != computed)
    throw err(fmt::format("corrupt {}: CRC32 mismatch (stored {:08x}, computed {:08x})", noun, stored, computed));
  return blob.substr(kHeaderSize, payload);
}

}  // namespace pipec
