// BufferPool: size classes, reuse of freed tensor storage, the cache cap and the counters.
#include "runtime/core/buffer_pool.h"

#include <gtest/gtest.h>

#include <new>
#include <thread>
#include <vector>

#include "runtime/core/tensor.h"

namespace pipec {

TEST(BufferPool, SizeClassesCoverTheRequestWithAtMostAQuarterWasted) {
  EXPECT_EQ(BufferPool::class_bytes(BufferPool::size_class(1)), 64u);
  EXPECT_EQ(BufferPool::class_bytes(BufferPool::size_class(64)), 64u);
  EXPECT_EQ(BufferPool::class_bytes(BufferPool::size_class(65)), 80u);
  EXPECT_EQ(BufferPool::class_bytes(BufferPool::size_class(128)), 128u);
  EXPECT_EQ(BufferPool::class_bytes(BufferPool::size_class(129)), 160u);
  for (size_t n = 1; n < (size_t(1) << 22); n = n * 3 / 2 + 7) {
    size_t cb = BufferPool::class_bytes(BufferPool::size_class(n));
    EXPECT_GE(cb, n);
    if (n > 64) {
      EXPECT_LE(cb, n + n / 4 + 1) << n;
    }
  }
  // Classes are increasing, so a request never gets a smaller class's buffer.
  for (int c = 1; c < 200; ++c) EXPECT_GT(BufferPool::class_bytes(c), BufferPool::class_bytes(c - 1));
}

// A size no machine can hold is refused: the top classes' sizes would wrap around (2^64 - 1 bytes once
// got a class of 2^64, that is 0, bytes and a buffer).
TEST(BufferPool, RequestsTooLargeForAnyClassAreRefused) {
  BufferPool& pool = BufferPool::global();
  for (size_t bytes : {~size_t(0), (size_t(1) << 63) + (size_t(1) << 62) + 1, (size_t(1) << 62) + 1})
    EXPECT_THROW(pool.allocate(bytes), std::bad_alloc) << bytes;
}

TEST(BufferPool, FreedTensorStorageIsReusedNotReallocated) {
  BufferPool& pool = BufferPool::global();
  const uint8_t* first = nullptr;
  {
    Tensor t = Tensor::empty(DType::F32, {1000, 37});
    first = t.raw();
  }
  BufferPoolStats before = pool.stats();
  for (int i = 0; i < 100; ++i) {
    Tensor t = Tensor::empty(DType::F32, {1000, 37});
    EXPECT_EQ(t.raw(), first);  // the same buffer comes back every time
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  }
  BufferPoolStats after = pool.stats();
  EXPECT_EQ(after.fresh_count, before.fresh_count);
  EXPECT_EQ(after.reused_count, before.reused_count + 100);
}

TEST(BufferPool, ABufferStaysInUseWhileAnyCopyOfTheTensorLives) {
  Tensor a = Tensor::zeros(DType::I64, {513});
  Tensor b = a.reshaped({27, 19});
  const uint8_t* p = a.raw();
  a = Tensor();
  Tensor c = Tensor::empty(DType::I64, {513});
  EXPECT_NE(c.raw(), p);  // b still holds it
  EXPECT_EQ(b.data<int64_t>()[512], 0);
}

TEST(BufferPool, CacheCapSendsBuffersBackToMalloc) {
  BufferPool& pool = BufferPool::global();
  pool.trim();
  pool.set_cache_limit_bytes(0);
  { Tensor t = Tensor::empty(DType::U8, {4096}); }
  EXPECT_EQ(pool.stats().cached_bytes, 0u);
  BufferPoolStats before = pool.stats();
  { Tensor t = Tensor::empty(DType::U8, {4096}); }
  EXPECT_EQ(pool.stats().fresh_count, before.fresh_count + 1);
  pool.set_cache_limit_bytes(uint64_t(1) << 30);
  { Tensor t = Tensor::empty(DType::U8, {4096}); }
  EXPECT_GE(pool.stats().cached_bytes, 4096u);
  pool.trim();
  EXPECT_EQ(pool.stats().cached_bytes, 0u);
}

TEST(BufferPool, ThreadsAllocatingAndFreeingConcurrentlyKeepTheCountsConsistent) {
  BufferPool& pool = BufferPool::global();
  BufferPoolStats before = pool.stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 2000; ++i) {
        Tensor x = Tensor::empty(DType::F32, {100 + (i % 7) * 50 + t});
        x.data<float>()[0] = static_cast<float>(i);
      }
    });
  for (auto& th : threads) th.join();
  BufferPoolStats after = pool.stats();
  EXPECT_EQ((after.fresh_count - before.fresh_count) + (after.reused_count - before.reused_count), 8000u);
  // Every thread keeps at most one buffer at a time, so nearly all requests are reuses.
  EXPECT_LE(after.fresh_count - before.fresh_count, 4u * 7u * 2u);
}

}  // namespace pipec
