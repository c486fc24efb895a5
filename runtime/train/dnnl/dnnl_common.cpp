#include "runtime/train/dnnl/dnnl_common.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

namespace pipec::train {

ThreadScope::ThreadScope(int threads) {
  if (threads <= 0) return;
  saved_ = omp_get_max_threads();
  if (saved_ == threads) return;
  omp_set_num_threads(threads);
  set_ = true;
}

ThreadScope::~ThreadScope() {
  if (set_) omp_set_num_threads(saved_);
}

void fail(const std::string& what, const std::string& problem) { throw TrainKernelError(what + ": " + problem); }

void with_errors(const std::string& what, const std::function<void()>& body) {
  try {
    body();
  } catch (const dnnl::error& e) {
    const char* status = "error";
    switch (e.status) {
      case dnnl_unimplemented: status = "unimplemented"; break;
      case dnnl_invalid_arguments: status = "invalid arguments"; break;
      case dnnl_out_of_memory: status = "out of memory"; break;
      case dnnl_runtime_error: status = "runtime error"; break;
      default: break;
    }
    fail(what, fmt::format("oneDNN cannot do it ({}: {})", status, e.what()));
  }
}

OpContext::OpContext(CpuKernels& kernels, std::string what)
    : kernels_(&kernels), threads_(kernels.threads()), what_(std::move(what)) {}

void OpContext::prepare(const std::function<void()>& body) const {
  ThreadScope scope(threads_);
  with_errors(what_, body);
}

memory OpContext::caller_memory(const memory::desc& desc) const { return memory(desc, engine(), DNNL_MEMORY_NONE); }

void OpContext::run(const dnnl::primitive& primitive, std::initializer_list<PrimitiveArg> args) const {
  call([&](dnnl::stream& s) {
    std::unordered_map<int, memory> bound;
    for (const PrimitiveArg& a : args) {
      if (!*a.mem) continue;
      if (a.bind) a.mem->set_data_handle(a.data);
      bound.emplace(a.arg, *a.mem);
    }
    // oneDNN ignores a scratchpad given to a primitive that needs none.
    if (const memory& scratch = scratchpad()) bound.emplace(DNNL_ARG_SCRATCHPAD, scratch);
    primitive.execute(s, bound);
  });
}

const memory& OpContext::scratchpad() const { return kernels_->impl().scratchpad.get(engine()); }

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

memory::desc f32_desc(const Dims& dims, memory::format_tag tag) {
  return memory::desc(dims, memory::data_type::f32, tag);
}

memory::desc f32_strided(const Dims& dims, const Dims& strides) {
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::format_tag activation_tag(const CpuKernels& k, int rank) {
  if (k.options().activation_layout == ActivationLayout::Any) return memory::format_tag::any;
  return rank == 4 ? memory::format_tag::nhwc : memory::format_tag::nc;
}

dnnl::algorithm eltwise_algorithm(ActivationKind kind, bool from_output) {
  using A = dnnl::algorithm;
  switch (kind) {
    case ActivationKind::Relu:
    case ActivationKind::LeakyRelu: return from_output ? A::eltwise_relu_use_dst_for_bwd : A::eltwise_relu;
    case ActivationKind::Tanh: return from_output ? A::eltwise_tanh_use_dst_for_bwd : A::eltwise_tanh;
    case ActivationKind::Sigmoid: return from_output ? A::eltwise_logistic_use_dst_for_bwd : A::eltwise_logistic;
    case ActivationKind::GeluErf: return A::eltwise_gelu_erf;
    case ActivationKind::GeluTanh: return A::eltwise_gelu_tanh;
    case ActivationKind::None: break;
  }
  return A::undef;
}

dnnl::primitive_attr activation_attr(const Activation& a) {
  dnnl::primitive_attr attr = user_scratchpad_attr();
  if (a.kind != ActivationKind::None) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, eltwise_algorithm(a.kind, false), a.alpha, 0.0f);
    attr.set_post_ops(ops);
  }
  return attr;
}

void* SharedStaging::get(int slot, size_t bytes) {
  Buffer& b = slots_[slot];
  if (b.bytes < bytes) {
    b.data.reset();  // the old one first: peak memory is the new size, not both
    void* p = nullptr;
    if (posix_memalign(&p, 64, bytes) != 0) throw std::bad_alloc();
    b.data = std::unique_ptr<void, void (*)(void*)>(p, std::free);
    b.bytes = bytes;
  }
  return b.data.get();
}

void SharedStaging::plan(int slot, size_t bytes) { slots_[slot].planned = std::max(slots_[slot].planned, bytes); }

size_t SharedStaging::planned_bytes() const {
  size_t total = 0;
  for (const Buffer& b : slots_) total += std::max(b.planned, b.bytes);
  return total;
}

void SharedScratchpad::need(size_t bytes) { need_ = std::max(need_, bytes); }

const dnnl::memory& SharedScratchpad::get(const dnnl::engine& engine) {
  if (need_ > 0 && (!memory_ || memory_.get_desc().get_size() < need_)) {
    memory_ = dnnl::memory();  // the old buffer first: the peak is the new size, not both
    memory_ = dnnl::memory(
        memory::desc({static_cast<memory::dim>(need_)}, memory::data_type::u8, memory::format_tag::a), engine);
  }
  return memory_;
}

void Staged::init(const memory::desc& user, const memory::desc& prim, CpuKernels::Impl& kernels, bool shared, int slot,
                  bool plan_shared) {
  kernels_ = &kernels;
  reorders_ = user != prim;
  user_ = memory(user, kernels.engine, DNNL_MEMORY_NONE);
  shared_ = reorders_ && shared ? &kernels.staging : nullptr;
  slot_ = slot;
  if (reorders_) {
    // Owned, in the primitive's layout; or a view that prim_memory() points at the shared slot.
    prim_ = shared_ ? memory(prim, kernels.engine, DNNL_MEMORY_NONE) : memory(prim, kernels.engine);
    if (shared_ && plan_shared) shared_->plan(slot_, prim.get_size());
    const dnnl::primitive_attr attr = user_scratchpad_attr();
    dnnl::reorder::primitive_desc to_prim(kernels.engine, user, kernels.engine, prim, attr);
    dnnl::reorder::primitive_desc to_user(kernels.engine, prim, kernels.engine, user, attr);
    kernels.scratchpad.need(to_prim.scratchpad_desc().get_size());
    kernels.scratchpad.need(to_user.scratchpad_desc().get_size());
    to_prim_ = dnnl::reorder(to_prim);
    to_user_ = dnnl::reorder(to_user);
  }
  cached_ptr_ = nullptr;
  cached_generation_ = 0;
}

memory Staged::prim_memory() {
  if (shared_) prim_.set_data_handle(shared_->get(slot_, prim_.get_desc().get_size()));
  return prim_;
}

void Staged::reorder(const dnnl::reorder& r, const memory& from, const memory& to, dnnl::stream& s) {
  std::unordered_map<int, memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  if (const memory& scratch = kernels_->scratchpad.get(kernels_->engine)) args.emplace(DNNL_ARG_SCRATCHPAD, scratch);
  r.execute(s, args);
}

memory Staged::input(const float* data, dnnl::stream& s) {
  user_.set_data_handle(const_cast<float*>(data));
  if (!reorders_) return user_;
  memory prim = prim_memory();
  reorder(to_prim_, user_, prim, s);
  cached_ptr_ = nullptr;  // the buffer no longer holds a cached weight
  return prim;
}

memory Staged::input_cached(const float* data, uint64_t generation, dnnl::stream& s) {
  if (shared_) throw std::logic_error("Staged: a shared staging buffer cannot cache");
  if (reorders_ && data == cached_ptr_ && generation == cached_generation_) return prim_;
  memory m = input(data, s);
  cached_ptr_ = data;
  cached_generation_ = generation;
  return m;
}

memory Staged::output(float* data) {
  user_.set_data_handle(data);
  return reorders_ ? prim_memory() : user_;
}

void Staged::output_done(float* data, dnnl::stream& s) {
  if (!reorders_) return;
  user_.set_data_handle(data);
  reorder(to_user_, prim_, user_, s);
}

std::string dims_text(const Dims& d) { return fmt::format("[{}]", fmt::join(d, ", ")); }

void check_tensor_sizes(const std::string& what, std::initializer_list<std::pair<const char*, Dims>> tensors) {
  for (const auto& [name, dims] : tensors) {
    int64_t elements = 1;
    for (int64_t d : dims) {
      if (d < 1) fail(what, fmt::format("the {} tensor {} is empty", name, dims_text(dims)));
      if (elements > kMaxTensorElements / d)
        fail(what, fmt::format("the {} tensor {} has more than 2^31 - 1 elements, the most oneDNN 2.6 handles in one "
                               "tensor (split the batch)",
                               name, dims_text(dims)));
      elements *= d;
    }
  }
}

void parallel_rows(int threads, int64_t rows, const std::function<void(int64_t, int64_t)>& body) {
  const int64_t parts = std::min<int64_t>(std::max(threads, 1), rows);
  if (parts <= 1) {
    if (rows > 0) body(0, rows);
    return;
  }
#if defined(__SANITIZE_THREAD__)
  // Debian's libgomp is not built with ThreadSanitizer: TSan would not see that a region's threads start
  // after the code before it and end before the code after it, and would report every access of the
  // parts to the caller's data. Under TSan the parts run on threads of their own, whose start and join
  // it sees, so it still checks the parts against each other.
  std::vector<std::exception_ptr> errors(static_cast<size_t>(parts));
  auto run_part = [&](int64_t p) {
    try {
      body(rows * p / parts, rows * (p + 1) / parts);
    } catch (...) {
      errors[static_cast<size_t>(p)] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  for (int64_t p = 1; p < parts; ++p) workers.emplace_back(run_part, p);
  run_part(0);
  for (std::thread& w : workers) w.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return;
#endif
  // Exceptions must not cross the OpenMP region: the first is kept and rethrown after it.
  std::exception_ptr error;
#pragma omp parallel for num_threads(static_cast <int>(parts)) schedule(static, 1)
  for (int64_t p = 0; p < parts; ++p) {
    try {
      body(rows * p / parts, rows * (p + 1) / parts);
    } catch (...) {
#pragma omp critical
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

ParallelFor parallel_for(int threads) {
  return [threads](int64_t n, const std::function<void(int64_t, int64_t)>& body) { parallel_rows(threads, n, body); };
}

}  // namespace pipec::train
