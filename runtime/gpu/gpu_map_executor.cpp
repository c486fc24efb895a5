#include "runtime/gpu/gpu_map_executor.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "runtime/gpu/gpu_error.h"
#include "runtime/gpu/ptx_cache.h"
#include "runtime/trace/trace.h"

namespace pipec::gpu {

using namespace cuda;

namespace {

int64_t elems(const GpuColumnSpec& s) {
  int64_t n = 1;
  for (int64_t d : s.shape) n *= d;
  return n;
}

}  // namespace

struct GpuMapExecutor::Slot {
  std::vector<std::unique_ptr<PinnedBuffer>> host_in;
  std::vector<std::shared_ptr<uint8_t[]>> host_out;  // handed to the output tensors by collect()
  std::vector<CUdeviceptr> dev_in, dev_out;
  CUevent copied_in = nullptr, computed = nullptr, copied_out = nullptr;
  CUevent started = nullptr;  // only when traced: before the copy in
  int64_t rows = 0, first_index = 0, epoch = 0;
};

GpuMapExecutor::GpuMapExecutor(const CudaDriver& driver, const GpuKernel& kernel, std::vector<GpuColumnSpec> inputs,
                               std::vector<GpuColumnSpec> outputs, int depth)
    : d_(driver), kernel_(kernel), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
  std::string why;
  const Nvrtc* nvrtc = Nvrtc::get(&why);
  if (!nvrtc) throw GpuError(why);
  CachedPtx ptx = compile_ptx_cached(*nvrtc, kernel_.source, kernel_.entry + ".cu", d_.arch, exact_math_options());
  if (!ptx.result.ok) throw GpuError("NVRTC could not compile the kernel " + kernel_.entry + ":\n" + ptx.result.log);
  compile_ms_ = ptx.compile_ms;
  from_cache_ = ptx.from_cache;
  d_.make_current();
  d_.check(d_.cuModuleLoadData(&module_, ptx.result.ptx.c_str()), "cuModuleLoadData");
  d_.check(d_.cuModuleGetFunction(&function_, module_, kernel_.entry.c_str()), "cuModuleGetFunction");
  d_.check(d_.cuStreamCreate(&h2d_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  d_.check(d_.cuStreamCreate(&compute_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  d_.check(d_.cuStreamCreate(&d2h_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  pool_ = std::make_unique<DeviceBufferPool>(d_);
  pinned_ = PinnedPool::make(d_);
  for (int s = 0; s < std::max(2, depth); ++s) {
    auto slot = std::make_unique<Slot>();
    for (size_t i = 0; i < inputs_.size(); ++i) slot->host_in.push_back(std::make_unique<PinnedBuffer>(d_));
    slot->host_out.resize(outputs_.size());
    slot->dev_in.assign(inputs_.size(), 0);
    slot->dev_out.assign(outputs_.size(), 0);
    // Timing events cost a little on every record: only a traced run asks for them.
    const unsigned flags = traced_ ? 0u : CU_EVENT_DISABLE_TIMING;
    d_.check(d_.cuEventCreate(&slot->copied_in, flags), "cuEventCreate");
    d_.check(d_.cuEventCreate(&slot->computed, flags), "cuEventCreate");
    d_.check(d_.cuEventCreate(&slot->copied_out, flags), "cuEventCreate");
    if (traced_) d_.check(d_.cuEventCreate(&slot->started, 0), "cuEventCreate");
    slots_.push_back(std::move(slot));
  }
  if (traced_) {
    // The trace's clock and the GPU's meet here: an event that has completed, and the host time just
    // after. Every later event is placed at origin_ns_ plus its time since this one.
    d_.check(d_.cuEventCreate(&origin_, 0), "cuEventCreate");
    d_.check(d_.cuEventRecord(origin_, h2d_), "cuEventRecord");
    d_.check(d_.cuEventSynchronize(origin_), "cuEventSynchronize");
    origin_ns_ = trace::now_ns();
    copies_in_track_ = trace::track("GPU", "copies host to device");
    kernels_track_ = trace::track("GPU", "kernels");
    copies_out_track_ = trace::track("GPU", "copies device to host");
  }
}

GpuMapExecutor::~GpuMapExecutor() {
  // Nothing may still be reading or writing the buffers we are about to free.
  if (d_.cuCtxSetCurrent(d_.context) != CUDA_SUCCESS) return;
  for (CUstream s : {h2d_, compute_, d2h_})
    if (s) d_.cuStreamSynchronize(s);
  for (auto& slot : slots_) {
    for (CUdeviceptr p : slot->dev_in) pool_->release(p);
    for (CUdeviceptr p : slot->dev_out) pool_->release(p);
    for (CUevent e : {slot->copied_in, slot->computed, slot->copied_out, slot->started})
      if (e) d_.cuEventDestroy(e);
  }
  if (origin_) d_.cuEventDestroy(origin_);
  slots_.clear();
  pool_.reset();
  for (CUstream s : {h2d_, compute_, d2h_})
    if (s) d_.cuStreamDestroy(s);
  if (module_) d_.cuModuleUnload(module_);
}

void GpuMapExecutor::submit(const Chunk& in, uint64_t seed) {
  if (!can_submit()) throw GpuError("GpuMapExecutor::submit: every slot is busy");
  d_.make_current();
  Slot& s = *slots_[next_slot_];
  next_slot_ = (next_slot_ + 1) % slots_.size();
  s.rows = in.rows;
  s.first_index = in.first_index;
  s.epoch = in.epoch;
  if (traced_) d_.check(d_.cuEventRecord(s.started, h2d_), "cuEventRecord");
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Column& col = in.columns.at(kernel_.input_fields.at(i));
    if (col.ragged || col.dense.dtype() != inputs_[i].dtype)
      throw GpuError(fmt::format("GPU map input {} is not a dense {} column", i, dtype_name(inputs_[i].dtype)));
    const size_t bytes = static_cast<size_t>(in.rows * elems(inputs_[i])) * dtype_size(inputs_[i].dtype);
    if (col.dense.byte_size() != bytes) throw GpuError(fmt::format("GPU map input {} has the wrong size", i));
    // Staging through pinned memory lets the copy run asynchronously at full link speed.
    void* host = s.host_in[i]->reserve(std::max<size_t>(bytes, 1));
    if (bytes) std::memcpy(host, col.dense.raw(), bytes);
    pool_->release(s.dev_in[i]);
    s.dev_in[i] = pool_->acquire(std::max<size_t>(bytes, 1));
    if (bytes) d_.check(d_.cuMemcpyHtoDAsync(s.dev_in[i], host, bytes, h2d_), "cuMemcpyHtoDAsync");
  }
  d_.check(d_.cuEventRecord(s.copied_in, h2d_), "cuEventRecord");
  int64_t total = 0;
  for (size_t j = 0; j < outputs_.size(); ++j) {
    const size_t bytes = static_cast<size_t>(in.rows * elems(outputs_[j])) * dtype_size(outputs_[j].dtype);
    pool_->release(s.dev_out[j]);
    s.dev_out[j] = pool_->acquire(std::max<size_t>(bytes, 1));
    total += in.rows * elems(outputs_[j]);
  }
  d_.check(d_.cuStreamWaitEvent(compute_, s.copied_in, 0), "cuStreamWaitEvent");
  if (total > 0) {
    std::vector<void*> params;
    for (CUdeviceptr& p : s.dev_in) params.push_back(&p);
    for (CUdeviceptr& p : s.dev_out) params.push_back(&p);
    int64_t rows = in.rows, first = in.first_index, epoch = in.epoch;
    uint64_t sd = seed;
    params.push_back(&rows);
    params.push_back(&first);
    params.push_back(&epoch);
    params.push_back(&sd);
    constexpr int64_t kBlock = 256;
    // Enough blocks to fill every multiprocessor several times; the grid-stride loop does the rest.
    const int64_t blocks = std::clamp<int64_t>((total + kBlock - 1) / kBlock, 1, std::max(1, d_.multiprocessors) * 32);
    d_.check(d_.cuLaunchKernel(function_, static_cast<unsigned>(blocks), 1, 1, kBlock, 1, 1, 0, compute_, params.data(),
                               nullptr),
             "cuLaunchKernel");
  }
  d_.check(d_.cuEventRecord(s.computed, compute_), "cuEventRecord");
  d_.check(d_.cuStreamWaitEvent(d2h_, s.computed, 0), "cuStreamWaitEvent");
  for (size_t j = 0; j < outputs_.size(); ++j) {
    const size_t bytes = static_cast<size_t>(in.rows * elems(outputs_[j])) * dtype_size(outputs_[j].dtype);
    s.host_out[j] = pinned_->acquire(std::max<size_t>(bytes, 1));
    if (bytes) d_.check(d_.cuMemcpyDtoHAsync(s.host_out[j].get(), s.dev_out[j], bytes, d2h_), "cuMemcpyDtoHAsync");
  }
  d_.check(d_.cuEventRecord(s.copied_out, d2h_), "cuEventRecord");
  pending_.push_back(&s);
}

Chunk GpuMapExecutor::collect() {
  if (pending_.empty()) throw GpuError("GpuMapExecutor::collect: nothing submitted");
  d_.make_current();
  Slot& s = *pending_.front();
  pending_.pop_front();
  d_.check(d_.cuEventSynchronize(s.copied_out), "the GPU map kernel");
  if (traced_ && trace::enabled()) trace_slot(s);
  Chunk out;
  out.rows = s.rows;
  out.first_index = s.first_index;
  out.epoch = s.epoch;
  for (size_t j = 0; j < outputs_.size(); ++j) {
    std::vector<int64_t> shape{s.rows};
    shape.insert(shape.end(), outputs_[j].shape.begin(), outputs_[j].shape.end());
    Column c;
    c.dense = Tensor::adopt(outputs_[j].dtype, shape, std::move(s.host_out[j]));
    out.columns.push_back(std::move(c));
  }
  return out;
}

void GpuMapExecutor::trace_slot(const Slot& s) {
  auto at = [&](CUevent e) {
    float ms = 0;
    d_.check(d_.cuEventElapsedTime(&ms, origin_, e), "cuEventElapsedTime");
    return origin_ns_ + static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  };
  const int64_t started = at(s.started), copied_in = at(s.copied_in), computed = at(s.computed),
                copied_out = at(s.copied_out);
  // The kernel waits for its copy and for the kernel before it on the compute stream.
  const int64_t kernel_start = std::max(copied_in, last_computed_ns_);
  last_computed_ns_ = computed;
  static const trace::NameId copy_in = trace::name("copy in"), copy_out = trace::name("copy out");
  if (!kernel_name_) kernel_name_ = trace::name(kernel_.entry);
  const trace::Arg rows{"rows", static_cast<double>(s.rows)};
  trace::complete_on(copies_in_track_, "gpu", copy_in, started, copied_in - started, rows);
  trace::complete_on(kernels_track_, "gpu", kernel_name_, kernel_start, computed - kernel_start, rows);
  trace::complete_on(copies_out_track_, "gpu", copy_out, computed, copied_out - computed, rows);
}

std::string GpuMapExecutor::describe() const { return fmt::format("{} (sm_{})", d_.device_name, d_.arch); }

}  // namespace pipec::gpu
