// Private to this folder: the oneDNN state behind CpuKernels and the helpers every op's .cpp shares
// (user layouts as memory descriptors, staging between the caller's layout and a primitive's,
// error wrapping, the thread count of a call). The only header of the project that includes dnnl.hpp.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "runtime/train/dnnl/activation.h"
#include "runtime/train/dnnl/cpu_kernels.h"
#include "runtime/train/dnnl/train_kernel_error.h"

namespace pipec::train {

/// Buffers in a primitive's layout that live for one call only, shared by every op of one CpuKernels:
/// a reordered activation is needed only while its primitive runs, so a model of many layers needs two
/// such buffers (an op's call stages at most two activations at a time), not a few per layer. Each slot
/// grows to the largest request; pointers handed out stay valid until the next larger request.
class SharedStaging {
 public:
  static constexpr int kSlots = 2;
  void* get(int slot, size_t bytes);

 private:
  struct Buffer {
    std::unique_ptr<void, void (*)(void*)> data{nullptr, +[](void*) {}};
    size_t bytes = 0;
  };
  Buffer slots_[kSlots];
};

struct CpuKernels::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  SharedStaging staging;
  dnnl::stream stream{engine};
  std::mutex mutex;
  // Primitive sets by key (op kind, shapes, attributes, threads): equal layers share one.
  std::map<std::string, std::shared_ptr<void>> cache;

  /// The cached primitive set for `key`, made by `make` the first time (outside the lock would let two
  /// threads make the same set twice: harmless, but the lock keeps the count honest).
  template <class T>
  std::shared_ptr<T> cached(const std::string& key, const std::function<std::shared_ptr<T>()>& make) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return std::static_pointer_cast<T>(it->second);
    std::shared_ptr<T> made = make();
    cache.emplace(key, made);
    return made;
  }
};

/// Sets OpenMP's thread count on the calling thread for the duration of one call (and of primitive
/// creation, which splits the work for that count), then restores it.
class ThreadScope {
 public:
  explicit ThreadScope(int threads);
  ~ThreadScope();

 private:
  int saved_ = 0;
  bool set_ = false;
};

/// Runs `body`, turning oneDNN's exceptions into a TrainKernelError that names the op.
void with_errors(const std::string& what, const std::function<void()>& body);
[[noreturn]] void fail(const std::string& what, const std::string& problem);

using dnnl::memory;
using Dims = memory::dims;

memory::desc f32_desc(const Dims& dims, memory::format_tag tag);
memory::desc f32_strided(const Dims& dims, const Dims& strides);

/// The tag for activations as the primitive should see them: `any` or the caller's nhwc/nc.
memory::format_tag activation_tag(const CpuKernels& k, int rank);

dnnl::algorithm eltwise_algorithm(ActivationKind kind, bool from_output);
dnnl::primitive_attr activation_attr(const Activation& a);

/// One tensor the caller holds in its layout (`user`) and a primitive reads or writes in its own
/// (`prim`). When the two are equal the caller's buffer is used in place; otherwise a buffer in the
/// primitive's layout is owned here and reordered into (inputs) or out of (outputs).
class Staged {
 public:
  /// With `shared`, the buffer in the primitive's layout is that slot of the shared staging (valid for
  /// one call: inputs and outputs of activations); without, it is owned (weights, kept between calls).
  void init(const memory::desc& user, const memory::desc& prim, const dnnl::engine& engine,
            SharedStaging* shared = nullptr, int slot = 0);
  bool reorders() const { return reorders_; }

  /// Memory holding `data` in the primitive's layout (reordered now unless in place).
  memory input(const float* data, dnnl::stream& s);
  /// As input(), but skips the reorder when the same pointer was reordered at the same `generation`
  /// (weights between forward and backward of one step).
  memory input_cached(const float* data, uint64_t generation, dnnl::stream& s);
  /// Memory the primitive writes; call output_done with the same pointer after executing.
  memory output(float* data);
  void output_done(float* data, dnnl::stream& s);
  /// The primitive-layout buffer as last written (only when reorders()).
  memory staged() const { return prim_; }

 private:
  memory prim_memory();  // prim_, pointed at its shared slot when it has one

  memory user_, prim_;
  dnnl::reorder to_prim_, to_user_;
  bool reorders_ = false;
  SharedStaging* shared_ = nullptr;
  int slot_ = 0;
  const float* cached_ptr_ = nullptr;
  uint64_t cached_generation_ = 0;
};

std::string dims_text(const Dims& d);

/// The most elements one tensor may have: oneDNN 2.6 indexes some kernels with 32-bit integers (a
/// 2^32-element pool or dense input crashes it with a division by zero instead of an error).
constexpr int64_t kMaxTensorElements = (int64_t(1) << 31) - 1;

/// Fails with a clear message when any of the named tensors (dims in any order) is empty or has more
/// than kMaxTensorElements elements; the product is computed without overflowing.
void check_tensor_sizes(const std::string& what, std::initializer_list<std::pair<const char*, Dims>> tensors);

}  // namespace pipec::train
