#include "runtime/core/le_codec.h"

#include <zlib.h>

namespace pipec {

uint32_t crc32_zlib(const void* data, size_t n) {
  // crc32_z takes a size_t length, so no chunking into uInt-sized pieces is needed.
  return static_cast<uint32_t>(crc32_z(crc32(0L, Z_NULL, 0), static_cast<const Bytef*>(data), n));
}

}  // namespace pipec
