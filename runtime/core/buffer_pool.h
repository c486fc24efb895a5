// BufferPool: recycles tensor storage, so a pipeline in steady state allocates nothing per batch.
//
// Every numeric tensor's buffer comes from here (Tensor::empty). A buffer is rounded up to a size
// class (powers of two split in four steps, so at most 25% is wasted) and, when its last reference
// goes, parked on that class's free list instead of going back to malloc. The next request of the same
// class takes it from there. A pipeline makes the same tensors batch after batch, so after the first
// few batches every request is served from the free lists.
//
// Counters (fresh = malloc'ed, reused = taken from a free list) let tests prove the steady state
// allocates nothing and are reported by `pipec run --stats-json`. Cached bytes are capped
// (cache_limit_bytes, default 1 GiB): a buffer freed above the cap goes back to malloc.
//
// Buffers are 64-byte aligned (whole cache lines, aligned vector loads). Thread-safe: buffers are
// taken and returned under one mutex per size class; that is once per tensor, not per element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace pipec {

struct BufferPoolStats {
  uint64_t fresh_count = 0;   // buffers obtained from malloc
  uint64_t fresh_bytes = 0;   // their size-class bytes
  uint64_t reused_count = 0;  // buffers served from a free list
  uint64_t reused_bytes = 0;
  uint64_t cached_bytes = 0;  // bytes parked on free lists now
};

class BufferPool {
 public:
  /// The process-wide pool (never destroyed, so buffers freed during exit still find it).
  static BufferPool& global();

  /// A buffer of at least `bytes` bytes (uninitialized), returned to the pool when the last
  /// shared_ptr copy goes.
  std::shared_ptr<uint8_t[]> allocate(size_t bytes);

  BufferPoolStats stats() const;
  /// Frees every cached buffer (counters are kept).
  void trim();
  void set_cache_limit_bytes(uint64_t limit);

  /// The size class of a request and the bytes a buffer of that class holds (exposed for tests).
  static int size_class(size_t bytes);
  static size_t class_bytes(int cls);

  struct Impl;

 private:
  BufferPool();
  Impl* impl_;
};

}  // namespace pipec
