#include "runtime/core/buffer_pool.h"

#include <array>
#include <atomic>
#include <bit>
#include <mutex>
#include <new>
#include <vector>

namespace pipec {

namespace {

constexpr size_t kMinBytes = 64;
constexpr size_t kAlign = 64;
constexpr int kClasses = 256;
// Larger requests are refused (std::bad_alloc) rather than classed: the classes of 2^62 bytes and up
// would not fit in a size_t (class_bytes would shift by 64 or wrap).
constexpr size_t kMaxBytes = size_t(1) << 62;

void* raw_allocate(size_t bytes) { return ::operator new(bytes, std::align_val_t(kAlign)); }
void raw_free(void* p) { ::operator delete(p, std::align_val_t(kAlign)); }

}  // namespace

struct BufferPool::Impl {
  struct FreeList {
    std::mutex mu;
    std::vector<void*> buffers;
  };
  std::array<FreeList, kClasses> lists;
  std::atomic<uint64_t> fresh_count{0}, fresh_bytes{0}, reused_count{0}, reused_bytes{0};
  std::atomic<uint64_t> cached_bytes{0};
  std::atomic<uint64_t> cache_limit{uint64_t(1) << 30};

  void release(void* p, int cls) {
    size_t bytes = class_bytes(cls);
    // Over the cap the buffer goes back to malloc; the check is racy by a buffer or two, which is fine.
    if (cached_bytes.load(std::memory_order_relaxed) + bytes > cache_limit.load(std::memory_order_relaxed)) {
      raw_free(p);
      return;
    }
    FreeList& l = lists[static_cast<size_t>(cls)];
    {
      std::lock_guard<std::mutex> lock(l.mu);
      l.buffers.push_back(p);
    }
    cached_bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
};

namespace {

// Returns the buffer to its class's free list when the tensor's last reference goes.
struct PoolDeleter {
  BufferPool::Impl* pool;
  int cls;
  void operator()(uint8_t* p) const { pool->release(p, cls); }
};

}  // namespace

BufferPool::BufferPool() : impl_(new Impl) {}

BufferPool& BufferPool::global() {
  static BufferPool* pool = new BufferPool;  // leaked on purpose: see the header
  return *pool;
}

int BufferPool::size_class(size_t bytes) {
  if (bytes <= kMinBytes) return 0;
  // 2^e < bytes <= 2^(e+1); four classes per octave: 2^e + q * 2^(e-2), q = 1..4.
  int e = static_cast<int>(std::bit_width(bytes - 1)) - 1;
  size_t step = size_t(1) << (e - 2);
  size_t q = (bytes - (size_t(1) << e) + step - 1) / step;
  return (e - 6) * 4 + static_cast<int>(q);
}

size_t BufferPool::class_bytes(int cls) {
  if (cls == 0) return kMinBytes;
  int e = (cls - 1) / 4 + 6;
  size_t q = static_cast<size_t>((cls - 1) % 4 + 1);
  return (size_t(1) << e) + q * (size_t(1) << (e - 2));
}

std::shared_ptr<uint8_t[]> BufferPool::allocate(size_t bytes) {
  if (bytes > kMaxBytes) throw std::bad_alloc();
  int cls = size_class(bytes);
  if (cls >= kClasses) throw std::bad_alloc();
  size_t cb = class_bytes(cls);
  Impl::FreeList& l = impl_->lists[static_cast<size_t>(cls)];
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(l.mu);
    if (!l.buffers.empty()) {
      p = l.buffers.back();
      l.buffers.pop_back();
    }
  }
  if (p) {
    impl_->cached_bytes.fetch_sub(cb, std::memory_order_relaxed);
    impl_->reused_count.fetch_add(1, std::memory_order_relaxed);
    impl_->reused_bytes.fetch_add(cb, std::memory_order_relaxed);
  } else {
    p = raw_allocate(cb);
    impl_->fresh_count.fetch_add(1, std::memory_order_relaxed);
    impl_->fresh_bytes.fetch_add(cb, std::memory_order_relaxed);
  }
  return std::shared_ptr<uint8_t[]>(static_cast<uint8_t*>(p), PoolDeleter{impl_, cls});
}

BufferPoolStats BufferPool::stats() const {
  BufferPoolStats s;
  s.fresh_count = impl_->fresh_count.load();
  s.fresh_bytes = impl_->fresh_bytes.load();
  s.reused_count = impl_->reused_count.load();
  s.reused_bytes = impl_->reused_bytes.load();
  s.cached_bytes = impl_->cached_bytes.load();
  return s;
}

void BufferPool::trim() {
  for (int c = 0; c < kClasses; ++c) {
    Impl::FreeList& l = impl_->lists[static_cast<size_t>(c)];
    std::vector<void*> take;
    {
      std::lock_guard<std::mutex> lock(l.mu);
      take.swap(l.buffers);
    }
    if (take.empty()) continue;  // most classes, and every class too large to hold a buffer
    for (void* p : take) raw_free(p);
    impl_->cached_bytes.fetch_sub(take.size() * class_bytes(c), std::memory_order_relaxed);
  }
}

void BufferPool::set_cache_limit_bytes(uint64_t limit) { impl_->cache_limit.store(limit); }

}  // namespace pipec
