// Device and pinned host memory that is reused from batch to batch: cuMemAlloc and cuMemHostAlloc
// synchronise the whole device and cost far more than a batch's work, so a stage allocates once
// per buffer size and recycles.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>

#include "runtime/gpu/cuda_loader.h"

namespace pipec::gpu {

class DeviceBufferPool {
 public:
  explicit DeviceBufferPool(const CudaDriver& driver) : driver_(driver) {}
  ~DeviceBufferPool();
  DeviceBufferPool(const DeviceBufferPool&) = delete;
  DeviceBufferPool& operator=(const DeviceBufferPool&) = delete;

  /// A device buffer of at least `bytes` (a free one of the same rounded size, else a new one).
  cuda::CUdeviceptr acquire(size_t bytes);
  /// Gives back a buffer from acquire(); the caller must have synchronised every use of it.
  void release(cuda::CUdeviceptr ptr);

  size_t allocations() const { return allocations_; }  // cuMemAlloc calls so far (tests check reuse)

 private:
  const CudaDriver& driver_;
  std::mutex mu_;
  std::multimap<size_t, cuda::CUdeviceptr> free_;  // rounded size -> buffer
  std::map<cuda::CUdeviceptr, size_t> sizes_;      // every live buffer
  size_t allocations_ = 0;
};

/// A pinned host buffer that grows to the largest size asked of it.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(const CudaDriver& driver) : driver_(driver) {}
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* reserve(size_t bytes);
  void* data() const { return ptr_; }

 private:
  const CudaDriver& driver_;
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

/// Sizes rounded up to a power of two (at least 256 bytes), so batches that differ a little share buffers.
size_t pool_size_class(size_t bytes);

}  // namespace pipec::gpu
