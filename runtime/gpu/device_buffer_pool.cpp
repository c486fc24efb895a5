#include "runtime/gpu/device_buffer_pool.h"

#include "runtime/gpu/gpu_error.h"

namespace pipec::gpu {

size_t pool_size_class(size_t bytes) {
  size_t s = 256;
  while (s < bytes) s <<= 1;
  return s;
}

DeviceBufferPool::~DeviceBufferPool() {
  for (auto& [ptr, size] : sizes_) driver_.cuMemFree(ptr);
}

cuda::CUdeviceptr DeviceBufferPool::acquire(size_t bytes) {
  const size_t cls = pool_size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = free_.find(cls); it != free_.end()) {
    cuda::CUdeviceptr p = it->second;
    free_.erase(it);
    return p;
  }
  cuda::CUdeviceptr p = 0;
  driver_.check(driver_.cuMemAlloc(&p, cls), "cuMemAlloc");
  sizes_[p] = cls;
  ++allocations_;
  return p;
}

void DeviceBufferPool::release(cuda::CUdeviceptr ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sizes_.find(ptr);
  if (it == sizes_.end()) throw GpuError("DeviceBufferPool::release: not a pool buffer");
  free_.emplace(it->second, ptr);
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_) driver_.cuMemFreeHost(ptr_);
}

void* PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= size_ && ptr_) return ptr_;
  if (ptr_) driver_.cuMemFreeHost(ptr_);
  ptr_ = nullptr;
  size_ = 0;
  const size_t cls = pool_size_class(bytes);
  driver_.check(driver_.cuMemHostAlloc(&ptr_, cls, cuda::CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
  size_ = cls;
  return ptr_;
}

}  // namespace pipec::gpu

namespace pipec::gpu {

PinnedPool::~PinnedPool() {
  if (free_.empty() || driver_.cuCtxSetCurrent(driver_.context) != cuda::CUDA_SUCCESS) return;
  for (auto& [cls, ptr] : free_) driver_.cuMemFreeHost(ptr);
}

std::shared_ptr<uint8_t[]> PinnedPool::acquire(size_t bytes) {
  const size_t cls = pool_size_class(bytes);
  void* ptr = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = free_.find(cls); it != free_.end()) {
      ptr = it->second;
      free_.erase(it);
      free_bytes_ -= cls;
    }
  }
  if (!ptr) {
    driver_.make_current();
    driver_.check(driver_.cuMemHostAlloc(&ptr, cls, cuda::CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
    std::lock_guard<std::mutex> lock(mu_);
    ++allocations_;
  }
  // The deleter holds the pool, so a block outliving the executor still has somewhere to go.
  std::shared_ptr<PinnedPool> self = shared_from_this();
  return std::shared_ptr<uint8_t[]>(static_cast<uint8_t*>(ptr), [self, cls](uint8_t* p) { self->give_back(p, cls); });
}

void PinnedPool::give_back(void* ptr, size_t cls) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_bytes_ + cls <= kMaxFreeBytes) {
      free_.emplace(cls, ptr);
      free_bytes_ += cls;
      return;
    }
  }
  if (driver_.cuCtxSetCurrent(driver_.context) == cuda::CUDA_SUCCESS) driver_.cuMemFreeHost(ptr);
}

size_t PinnedPool::allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocations_;
}

size_t PinnedPool::free_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return free_bytes_;
}

}  // namespace pipec::gpu
