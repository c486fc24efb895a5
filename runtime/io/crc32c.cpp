// Run-time choice between the SSE4.2 (three chains or one) and the portable CRC32C.
#include "runtime/io/crc32c.h"

namespace pipec {

bool crc32c_have_sse42() {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_init makes the check safe even from another file's static initializer, which
  // may run before libgcc has filled in its CPU model.
  static const bool have = (__builtin_cpu_init(), __builtin_cpu_supports("sse4.2"));
  return have;
#else
  return false;
#endif
}

bool crc32c_have_sse42_clmul() {
#if defined(__x86_64__)
  static const bool have = crc32c_have_sse42() && (__builtin_cpu_init(), __builtin_cpu_supports("pclmul"));
  return have;
#else
  return false;
#endif
}

namespace {
using Crc32cFn = uint32_t (*)(uint32_t, const void*, size_t);
Crc32cFn pick_crc32c() {
  if (crc32c_have_sse42_clmul()) return crc32c_extend_sse42_3way;
  return crc32c_have_sse42() ? crc32c_extend_sse42 : crc32c_extend_portable;
}
}  // namespace

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n) {
  // A function-local static is initialized once, thread-safely; after that it is one indirect call.
  static const Crc32cFn fn = pick_crc32c();
  return fn(crc, data, n);
}

}  // namespace pipec
