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
