// Private to this folder: the oneDNN state behind CpuKernels and the helpers every op's .cpp shares
// (user layouts as memory descriptors, staging between the caller's layout and a primitive's, and
// OpContext: an op's primitives made and run on its thread count with errors naming it). The only
// header of the project that includes dnnl.hpp.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <utility>
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
  /// Records that an op will ask `slot` for `bytes` (when its buffers are made, before any call), so
  /// the memory plan knows each slot's size before the first step.
  void plan(int slot, size_t bytes);
  /// The two slots' sizes as planned: what they will have grown to after every op's first call.
  size_t planned_bytes() const;
  /// The two slots' sizes as allocated so far.
  size_t allocated_bytes() const { return slots_[0].bytes + slots_[1].bytes; }

 private:
  struct Buffer {
    std::unique_ptr<void, void (*)(void*)> data{nullptr, +[](void*) {}};
    size_t bytes = 0;
    size_t planned = 0;
  };
  Buffer slots_[kSlots];
};

/// oneDNN's scratchpads (what a primitive needs during one call only: per-thread copies of a reduction,
/// im2col columns, Winograd's transformed tiles) in one buffer for every primitive of one CpuKernels.
/// The primitives are made in oneDNN's user scratchpad mode (user_scratchpad_attr) and each call is
/// handed this buffer, grown to the largest any of them asked for. In library mode oneDNN 2.6 keeps a
/// scratchpad per primitive for the primitive's life or one per thread, by implementation: one shared
/// buffer is less memory than the first and a size the memory plan knows in either case.
class SharedScratchpad {
 public:
  /// Records a primitive's need (its descriptor's scratchpad_desc()), when it is made.
  void need(size_t bytes);
  size_t bytes() const { return need_; }
  /// A memory holding the buffer (allocated here the first time after it grew); an empty memory when no
  /// primitive needs one.
  const dnnl::memory& get(const dnnl::engine& engine);

 private:
  size_t need_ = 0;
  dnnl::memory memory_;
};

struct CpuKernels::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  SharedStaging staging;
  SharedScratchpad scratchpad;
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

/// One argument of a primitive call: oneDNN's argument id and the op's memory for it. With a buffer,
/// the memory (made without one) is pointed at the caller's buffer first; without, it is used as it is
/// (an owned buffer: a workspace, statistics). An empty memory leaves the argument out (a workspace the
/// primitive has not). Lives for one run() only: it points at the memory, which outlives the call.
struct PrimitiveArg {
  PrimitiveArg(int arg, const memory& m) : arg(arg), mem(&m) {}
  PrimitiveArg(int arg, const memory& m, const float* data)
      : arg(arg), mem(&m), data(const_cast<float*>(data)), bind(true) {}

  int arg;
  const memory* mem;
  float* data = nullptr;
  bool bind = false;
};

/// A forward and a backward primitive of one shape, as most ops have (pools, norms, softmax,
/// resampling): the cache's value, shared by every op of that shape.
struct ForwardBackward {
  dnnl::primitive forward, backward;
  memory::desc workspace;  // what the forward leaves for the backward (max pooling); empty when nothing
  std::string impl_forward, impl_backward;
  size_t scratchpad = 0;  // the most bytes of scratchpad either needs (SharedScratchpad)
};

/// Makes the pair from oneDNN primitive descriptors of one family.
template <class Fwd, class Bwd>
std::shared_ptr<ForwardBackward> make_forward_backward(const typename Fwd::primitive_desc& fwd,
                                                       const typename Bwd::primitive_desc& bwd) {
  auto p = std::make_shared<ForwardBackward>();
  p->forward = Fwd(fwd);
  p->backward = Bwd(bwd);
  p->workspace = fwd.workspace_desc();
  p->impl_forward = fwd.impl_info_str();
  p->impl_backward = bwd.impl_info_str();
  p->scratchpad = std::max(fwd.scratchpad_desc().get_size(), bwd.scratchpad_desc().get_size());
  return p;
}

/// What every op does around oneDNN, in one place: it knows the op's name (for errors), the thread count
/// the op was made with, and the kernels' engine and stream. Each op's state holds one; the op's
/// primitives are made through primitives() and every forward or backward is one run() (or call()).
class OpContext {
 public:
  /// Takes the kernels' thread count now: an op keeps the count it was made with.
  OpContext(CpuKernels& kernels, std::string what);

  const std::string& what() const { return what_; }
  int threads() const { return threads_; }
  CpuKernels& kernels() const { return *kernels_; }
  const dnnl::engine& engine() const { return kernels_->impl().engine; }

  /// The primitive set cached under `key` and this op's thread count (equal ops share one), made by
  /// `make` the first time: on the op's threads (oneDNN splits the work at creation), a oneDNN error
  /// naming the op.
  template <class T>
  std::shared_ptr<T> primitives(const std::string& key, const std::function<std::shared_ptr<T>()>& make) const {
    std::shared_ptr<T> made;
    prepare([&] { made = kernels_->impl().cached<T>(key + " threads " + std::to_string(threads_), make); });
    return made;
  }

  /// Construction work beside the primitives (memories, staging) on the op's threads, errors named.
  void prepare(const std::function<void()>& body) const;
  /// A memory of `desc` without a buffer: one of the caller's tensors, bound on each call.
  memory caller_memory(const memory::desc& desc) const;

  /// One call of the op: body(stream) on the op's threads, a oneDNN error naming the op, and the stream
  /// waited for before returning (the caller reads the outputs next).
  template <class Body>
  void call(const Body& body) const {
    ThreadScope scope(threads_);
    dnnl::stream& s = kernels_->impl().stream;
    with_errors(what_, [&] {
      body(s);
      s.wait();
    });
  }
  /// The common call: binds each argument's buffer, executes `primitive` with the kernels' scratchpad
  /// and waits.
  void run(const dnnl::primitive& primitive, std::initializer_list<PrimitiveArg> args) const;
  /// The kernels' shared scratchpad, for a call made with call() (its DNNL_ARG_SCRATCHPAD).
  const memory& scratchpad() const;

 private:
  CpuKernels* kernels_;
  int threads_;
  std::string what_;
};

/// Attributes every primitive is made with: oneDNN's user scratchpad mode (SharedScratchpad).
dnnl::primitive_attr user_scratchpad_attr();

memory::desc f32_desc(const Dims& dims, memory::format_tag tag);
memory::desc f32_strided(const Dims& dims, const Dims& strides);

/// The tag for activations as the primitive should see them: `any` or the caller's nhwc/nc.
memory::format_tag activation_tag(const CpuKernels& k, int rank);

dnnl::algorithm eltwise_algorithm(ActivationKind kind, bool from_output);
/// user_scratchpad_attr() with `a` fused as a post-op.
dnnl::primitive_attr activation_attr(const Activation& a);

/// One tensor the caller holds in its layout (`user`) and a primitive reads or writes in its own
/// (`prim`). When the two are equal the caller's buffer is used in place; otherwise a buffer in the
/// primitive's layout is owned here and reordered into (inputs) or out of (outputs).
class Staged {
 public:
  /// With `shared`, the buffer in the primitive's layout is that slot of the shared staging (valid for
  /// one call: inputs and outputs of activations); without, it is owned (weights, kept between calls).
  /// The reorders are made in user scratchpad mode and run with `kernels`' scratchpad. With `shared`,
  /// the slot's size is planned now (SharedStaging::plan) unless `plan_shared` is false (a buffer the op
  /// will not use: the caller knows).
  void init(const memory::desc& user, const memory::desc& prim, CpuKernels::Impl& kernels, bool shared = false,
            int slot = 0, bool plan_shared = true);
  bool reorders() const { return reorders_; }
  /// Bytes of the buffer in the primitive's layout this owns (0 when in place or shared).
  size_t owned_bytes() const { return reorders_ && !shared_ ? prim_.get_desc().get_size() : 0; }

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
  /// Makes the next input_cached() reorder again whatever it is passed.
  void forget_cached() { cached_ptr_ = nullptr; }

 private:
  memory prim_memory();  // prim_, pointed at its shared slot when it has one
  void reorder(const dnnl::reorder& r, const memory& from, const memory& to, dnnl::stream& s);

  CpuKernels::Impl* kernels_ = nullptr;
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
