// Device and pinned host memory that is reused from batch to batch: cuMemAlloc and cuMemHostAlloc
// synchronise the whole device and cost far more than a batch's work, so a stage allocates once
// per buffer size and recycles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
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

/// Pinned host blocks handed out as shared storage: a GPU map's results are copied from the device
/// straight into one and become the output tensor's storage (Tensor::adopt), so no host copy follows
/// the device-to-host copy (that copy, on the stage's one thread, held the first GPU run's chess
/// pipeline to a third of the CPU's rate). A block comes back to the pool when the last tensor using
/// it is gone, from any thread; the pool lives as long as its blocks do.
class PinnedPool : public std::enable_shared_from_this<PinnedPool> {
 public:
  static std::shared_ptr<PinnedPool> make(const CudaDriver& driver) {
    return std::shared_ptr<PinnedPool>(new PinnedPool(driver));
  }
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  /// A block of at least `bytes` (a free one of the same rounded size, else cuMemHostAlloc).
  std::shared_ptr<uint8_t[]> acquire(size_t bytes);

  size_t allocations() const;  // cuMemHostAlloc calls so far
  size_t free_bytes() const;

  /// Free blocks beyond this many bytes are given back to the driver instead of kept.
  static constexpr size_t kMaxFreeBytes = size_t{1} << 30;

 private:
  explicit PinnedPool(const CudaDriver& driver) : driver_(driver) {}
  void give_back(void* ptr, size_t cls);

  const CudaDriver& driver_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;  // rounded size -> block
  size_t free_bytes_ = 0, allocations_ = 0;
};

/// Sizes rounded up to a power of two (at least 256 bytes), so batches that differ a little share buffers.
size_t pool_size_class(size_t bytes);

}  // namespace pipec::gpu
