// Runs one map stage's generated kernel on the GPU, chunk after chunk, with copies and compute
// overlapped.
//
// Each chunk goes through a slot: its input columns are staged in the slot's pinned host buffers,
// copied on the host-to-device stream, the kernel runs on the compute stream once that copy's event
// fires, and the results come back on the device-to-host stream once the kernel's event fires. With
// `depth` slots (at least 2) chunk k+1 is copied in while chunk k computes and chunk k-1 is copied out.
// Device buffers come from a pool, so no batch calls cuMemAlloc once the sizes have been seen; results
// are copied into pinned blocks that become the output tensors' storage (PinnedPool), so collect()
// copies nothing on the host.
//
// In a traced run (runtime/trace/trace.h; the trace started before the executor) each chunk's copy in,
// kernel and copy out become spans on three tracks of a "GPU" row, timed by CUDA events.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/chunk.h"
#include "runtime/gpu/cuda_loader.h"
#include "runtime/gpu/device_buffer_pool.h"
#include "runtime/plan/gpu_kernel.h"
#include "runtime/trace/trace.h"

namespace pipec::gpu {

/// One kernel input or output column: its dtype and element shape (without the rows dimension).
struct GpuColumnSpec {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

class GpuMapExecutor {
 public:
  /// Compiles the kernel for the driver's GPU (through the PTX disk cache) and loads it. Throws
  /// GpuError naming the reason (NVRTC missing, NVRTC's log on a compile error, a driver failure).
  GpuMapExecutor(const CudaDriver& driver, const GpuKernel& kernel, std::vector<GpuColumnSpec> inputs,
                 std::vector<GpuColumnSpec> outputs, int depth = 2);
  ~GpuMapExecutor();
  GpuMapExecutor(const GpuMapExecutor&) = delete;
  GpuMapExecutor& operator=(const GpuMapExecutor&) = delete;

  /// True when a slot is free for submit().
  bool can_submit() const { return pending_.size() < slots_.size(); }
  /// Chunks that can be in flight at once.
  int64_t depth() const { return static_cast<int64_t>(slots_.size()); }
  bool has_pending() const { return !pending_.empty(); }
  /// Starts `in` (its columns in the stage's input field order; dense, with the specs' dtypes).
  void submit(const Chunk& in, uint64_t seed);
  /// Waits for the oldest submitted chunk and returns the map's output columns for it.
  Chunk collect();

  /// "NVIDIA H100 80GB HBM3 (sm_90)" and whether the kernel came from the disk cache.
  std::string describe() const;
  double compile_ms() const { return compile_ms_; }
  bool from_cache() const { return from_cache_; }
  const DeviceBufferPool& pool() const { return *pool_; }
  const PinnedPool& pinned() const { return *pinned_; }

 private:
  struct Slot;
  void trace_slot(const Slot& s);

  const bool traced_ = trace::enabled();
  const CudaDriver& d_;
  const GpuKernel& kernel_;
  std::vector<GpuColumnSpec> inputs_, outputs_;
  std::unique_ptr<DeviceBufferPool> pool_;
  std::shared_ptr<PinnedPool> pinned_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::deque<Slot*> pending_;
  size_t next_slot_ = 0;
  cuda::CUmodule module_ = nullptr;
  cuda::CUfunction function_ = nullptr;
  cuda::CUstream h2d_ = nullptr, compute_ = nullptr, d2h_ = nullptr;
  double compile_ms_ = 0;
  bool from_cache_ = false;
  // Tracing: the event the GPU's times are measured from, its host time, the tracks, and when the
  // previous kernel finished.
  cuda::CUevent origin_ = nullptr;
  int64_t origin_ns_ = 0, last_computed_ns_ = 0;
  int copies_in_track_ = -1, kernels_track_ = -1, copies_out_track_ = -1;
  trace::NameId kernel_name_ = 0;
};

}  // namespace pipec::gpu
