#include "runtime/train/reference_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/core/chunk.h"
#include "runtime/core/half.h"
#include "runtime/ops/interpreter.h"
#include "runtime/ops/kernel.h"
#include "runtime/trace/trace.h"
#include "runtime/train/initializers.h"
#include "runtime/train/ref_kernels.h"
#include "runtime/train/round_16bit.h"

namespace pipec {

ModelGraph with_float_dtype(const ModelGraph& g, DType dtype) {
  ModelGraph out = g;
  for (GraphValue& v : out.values)
    if (v.dtype == DType::F32) v.dtype = dtype;
  for (GraphNode& n : out.nodes) {
    if (!n.fn) continue;
    auto fn = std::make_shared<ExprFunction>(*n.fn);
    for (Instr& i : fn->body) {
      if (i.type.dtype == DType::F32) i.type.dtype = dtype;
      if (i.op == OpKind::Const && i.attrs.at("value").dtype == DType::F32) i.attrs["value"].dtype = dtype;
      if (i.op == OpKind::Cast && i.attrs.at("dtype").s == "f32")
        i.attrs["dtype"] = Value::make_symbol(std::string(dtype_name(dtype)));
    }
    n.fn = fn;
  }
  return out;
}

namespace {

// The trace's name of an executor phase (the update is the optimizer's).
trace::StepPhase trace_phase(OpCategory c) {
  switch (c) {
    case OpCategory::Forward: return trace::StepPhase::Forward;
    case OpCategory::Loss: return trace::StepPhase::Loss;
    case OpCategory::Backward: return trace::StepPhase::Backward;
    case OpCategory::Update: return trace::StepPhase::Optimizer;
  }
  return trace::StepPhase::Forward;
}

template <class T>
constexpr DType dtype_of() {
  return std::is_same_v<T, float> ? DType::F32 : DType::F64;
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) n *= s[i];
  return n;
}

// The conv geometry of a conv2d (or of its backward nodes): x [h, w, c] -> y [oh, ow, filters].
ref::Window2d conv_window(const GraphNode& n, const Shape& x, const Shape& y, const Shape& kernel, int64_t rows) {
  ref::Window2d w;
  w.batch = rows;
  w.in_h = x[0], w.in_w = x[1], w.in_c = x[2];
  w.out_h = y[0], w.out_w = y[1], w.out_c = y[2];
  w.k_h = kernel[0], w.k_w = kernel[1];
  auto strides = n.attr_ints("strides");
  w.stride_h = strides[0], w.stride_w = strides[1];
  if (n.attr("dilation")) {
    auto d = n.attr_ints("dilation");
    w.dil_h = d[0], w.dil_w = d[1];
  }
  bool same = n.attr_symbol("padding") == "same";
  w.pad_top = ref::pad_before(same, w.in_h, w.out_h, (w.k_h - 1) * w.dil_h + 1, w.stride_h);
  w.pad_left = ref::pad_before(same, w.in_w, w.out_w, (w.k_w - 1) * w.dil_w + 1, w.stride_w);
  return w;
}

// conv2d_transpose is the backward-data pass of a conv2d from its output [oh, ow, filters] to its input
// [h, w, in]: the kernel [kh, kw, filters, in] is that conv2d's HWIO kernel.
ref::Window2d transpose_window(const GraphNode& n, const Shape& x, const Shape& y, const Shape& kernel, int64_t rows) {
  ref::Window2d w;
  w.batch = rows;
  w.in_h = y[0], w.in_w = y[1], w.in_c = y[2];
  w.out_h = x[0], w.out_w = x[1], w.out_c = x[2];
  w.k_h = kernel[0], w.k_w = kernel[1];
  auto strides = n.attr_ints("strides");
  w.stride_h = strides[0], w.stride_w = strides[1];
  bool same = n.attr_symbol("padding") == "same";
  w.pad_top = ref::pad_before(same, w.in_h, w.out_h, w.k_h, w.stride_h);
  w.pad_left = ref::pad_before(same, w.in_w, w.out_w, w.k_w, w.stride_w);
  return w;
}

ref::Window2d pool_window(const GraphNode& n, const Shape& x, const Shape& y, int64_t rows) {
  ref::Window2d w;
  w.batch = rows;
  w.in_h = x[0], w.in_w = x[1], w.in_c = x[2];
  w.out_h = y[0], w.out_w = y[1], w.out_c = y[2];
  if (n.attr("size") && n.op != ModelOp::Upsample2d && n.op != ModelOp::Upsample2dBackward) {
    auto size = n.attr_ints("size"), strides = n.attr_ints("strides");
    w.k_h = size[0], w.k_w = size[1];
    w.stride_h = strides[0], w.stride_w = strides[1];
    bool same = n.attr_symbol("padding") == "same";
    w.pad_top = ref::pad_before(same, w.in_h, w.out_h, w.k_h, w.stride_h);
    w.pad_left = ref::pad_before(same, w.in_w, w.out_w, w.k_w, w.stride_w);
  }
  return w;
}

}  // namespace

template <class T>
ReferenceExecutor<T>::ReferenceExecutor(const ModelGraph& g, uint64_t seed) : g_(g), seed_(seed) {
  initialize_parameters<T>(g, seed, buf_.params, buf_.states);
  buf_.grads.assign(buf_.params.size(), T(0));
  // A value's tensor is freed after the last node that reads it, so a step holds what is live, not
  // every activation and gradient at once. The output and the loss stay for the caller.
  last_use_ = value_last_uses(g);
  first_write_ = value_first_writes(g);
  for (const GraphNode& n : g.nodes)
    if (n.op == ModelOp::OptimizerStep && n.attr("loss_scale")) loss_scale_.emplace();
}

template <class T>
T* ReferenceExecutor<T>::data(int id) {
  const GraphValue& v = g_.values[id];
  if (v.role == ValueRole::Param) return buf_.params.data() + v.offset;
  if (v.role == ValueRole::State) return buf_.states.data() + v.offset;
  if (v.grad_of >= 0) return buf_.grads.data() + g_.values[v.grad_of].offset;
  Tensor& t = values_.at(id);
  if (!t.defined()) throw std::logic_error(fmt::format("reference executor: %{} is read before it is computed", id));
  return t.data<T>();
}

template <class T>
double ReferenceExecutor<T>::run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step,
                                 OpCategory last, PhaseSeconds* seconds) {
  if (inputs.size() != g_.inputs.size())
    throw std::logic_error(fmt::format("reference executor: {} inputs for {}", inputs.size(), g_.inputs.size()));
  int64_t rows = !inputs.empty() ? inputs[0].shape().at(0) : target ? target->shape().at(0) : 1;
  values_.assign(g_.values.size(), Tensor());
  done_ = -1;
  auto feed = [&](int id, const Tensor& t, DType dtype) {
    Tensor x = t.dtype() == dtype ? t : cast_tensor(t, dtype);
    Shape want = g_.full_shape(id, rows);
    if (x.shape() != want) {
      if (x.num_elements() != shape_num_elements(want))
        throw std::runtime_error(fmt::format("`{}` is {} per batch, the model needs {}", g_.values[id].name,
                                             shape_to_string(x.shape()), shape_to_string(want)));
      x = x.reshaped(want);
    }
    values_[id] = x;
  };
  for (size_t k = 0; k < inputs.size(); ++k) feed(g_.inputs[k], inputs[k], g_.values[g_.inputs[k]].dtype);
  if (target && g_.target >= 0) feed(g_.target, *target, dtype_of<T>());
  std::fill(buf_.grads.begin(), buf_.grads.end(), T(0));
  loss_ = 0;
  rows_ = rows;
  prepare_arena(rows);
  run_phases(-1, last, step, seconds);
  return loss_;
}

template <class T>
double ReferenceExecutor<T>::resume(uint64_t step, OpCategory last, PhaseSeconds* seconds) {
  if (done_ < 0) throw std::logic_error("reference executor: resume before run");
  run_phases(done_, last, step, seconds);
  return loss_;
}

template <class T>
void ReferenceExecutor<T>::run_phases(int after, OpCategory last, uint64_t step, PhaseSeconds* seconds) {
  // With a trace, each run of nodes of one phase is a span ("forward", "loss", "backward", "optimizer").
  int span_phase = -1;
  int64_t span_start = 0, span_end = 0;
  auto close_span = [&] {
    if (span_phase >= 0)
      trace::phase_span(trace_phase(static_cast<OpCategory>(span_phase)), span_start, span_end - span_start);
  };
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const GraphNode& n = g_.nodes[i];
    int phase = static_cast<int>(n.phase);
    if (phase <= after || phase > static_cast<int>(last)) continue;
    auto start = std::chrono::steady_clock::now();
    run_node(n, rows_, step);
    for (int v : n.inputs)
      if (last_use_[v] == static_cast<int>(i)) values_[v] = Tensor();
    const auto end = std::chrono::steady_clock::now();
    if (seconds) (*seconds)[phase] += std::chrono::duration<double>(end - start).count();
    if (trace::enabled()) {
      const int64_t s_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
      if (phase != span_phase) {
        close_span();
        span_phase = phase;
        span_start = s_ns;
      }
      span_end = std::chrono::duration_cast<std::chrono::nanoseconds>(end.time_since_epoch()).count();
    }
  }
  close_span();
  done_ = std::max(done_, static_cast<int>(last));
}

template <class T>
std::string ReferenceExecutor<T>::description() const {
  return "reference (-O0: plain loops with f64 accumulation, one thread)";
}

template <class T>
void ReferenceExecutor<T>::prepare_arena(int64_t rows) {
  if (arena_block_ && rows <= arena_.rows) return;  // a plan for more rows serves fewer
  arena_block_.reset();                             // the old block first: the peak is the new one
  arena_ = plan_step_arena(g_, rows, first_write_, last_use_);
  constexpr std::align_val_t kAlign{64};
  auto* block =
      static_cast<uint8_t*>(::operator new[](static_cast<size_t>(std::max<int64_t>(arena_.bytes, 1)), kAlign));
  arena_block_ = std::shared_ptr<uint8_t[]>(block, [](uint8_t* p) { ::operator delete[](p, std::align_val_t{64}); });
}

template <class T>
Tensor ReferenceExecutor<T>::arena_tensor(int id, int64_t rows) {
  const GraphValue& v = g_.values.at(static_cast<size_t>(id));
  const int64_t offset = arena_.offset.at(static_cast<size_t>(id));
  if (offset < 0 || rows > arena_.rows)
    throw std::logic_error(fmt::format("reference executor: %{} has no place in the step's arena", id));
  // A view: the block outlives it (the aliasing shared_ptr holds the block).
  return Tensor::adopt(v.dtype, g_.full_shape(id, rows),
                       std::shared_ptr<uint8_t[]>(arena_block_, arena_block_.get() + offset));
}

template <class T>
void ReferenceExecutor<T>::allocate_outputs(const GraphNode& n, int64_t rows) {
  for (int o : n.outputs) {
    const GraphValue& v = g_.values[o];
    if (v.grad_of < 0 && v.role != ValueRole::Param && v.role != ValueRole::State && n.op != ModelOp::Expr)
      values_[o] = arena_tensor(o, rows);
  }
}

template <class T>
void ReferenceExecutor<T>::run_node(const GraphNode& n, int64_t rows, uint64_t step) {
  // A layer with a fused activation (compiler/train/passes/fuse_activation.cpp): the layer, then the
  // activation in place, as two loops.
  if (const Value* act = n.attr("activation")) {
    if (act->s != "relu") throw std::logic_error("reference executor: fused activation " + act->s);
    GraphNode plain = n;
    plain.attrs.erase("activation");
    ReferenceExecutor<T>::run_node(plain, rows, step);
    T* y = data(n.outputs[0]);
    const int64_t count = shape_num_elements(g_.full_shape(n.outputs[0], rows));
    for (int64_t i = 0; i < count; ++i) y[i] = y[i] > T(0) ? y[i] : T(0);
    return;
  }
  // Outputs that are not views of the flat buffers get a tensor of their own.
  allocate_outputs(n, rows);
  auto shape = [&](int id) -> const Shape& { return g_.values[id].shape; };
  auto count = [&](int id) { return shape_num_elements(g_.full_shape(id, rows)); };
  auto in = [&](size_t k) { return data(n.inputs.at(k)); };
  auto out = [&](size_t k) { return data(n.outputs.at(k)); };
  switch (n.op) {
    case ModelOp::Expr: {
      Chunk c;
      c.rows = rows;
      std::vector<std::string> fields;
      for (const Instr& i : n.fn->body)
        if (op_has(i.op, OpFlag::Input)) fields.push_back(i.attrs.at("field").s);
      for (int v : n.inputs) {
        Column col;
        col.dense = values_.at(v);
        c.columns.push_back(col);
      }
      EvalContext ctx;
      ctx.seed = seed_;
      std::vector<Column> results = run_function(*n.fn, fields, c, ctx);
      // Into the outputs' places in the arena: the interpreter's results may be views of its inputs,
      // whose places later values take.
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const int o = n.outputs[k];
        const Tensor& t = results[k].dense;
        Tensor place = arena_tensor(o, rows);
        if (t.dtype() != place.dtype() || t.num_elements() != place.num_elements())
          throw std::logic_error(fmt::format("reference executor: expr node gives {} {} for %{} ({} {})",
                                             dtype_name(t.dtype()), shape_to_string(t.shape()), o,
                                             dtype_name(place.dtype()), shape_to_string(place.shape())));
        std::memcpy(place.raw(), t.raw(), place.byte_size());
        values_[o] = place;
      }
      return;
    }
    case ModelOp::Conv2d:
      ref::conv2d<T>(conv_window(n, shape(n.inputs[0]), shape(n.outputs[0]), shape(n.inputs[1]), rows), in(0), in(1),
                     in(2), out(0));
      return;
    case ModelOp::Conv2dBackwardInput:
      ref::conv2d_backward_input<T>(conv_window(n, shape(n.outputs[0]), shape(n.inputs[0]), shape(n.inputs[1]), rows),
                                    in(0), in(1), out(0));
      return;
    case ModelOp::Conv2dBackwardKernel:
      ref::conv2d_backward_kernel<T>(conv_window(n, shape(n.inputs[0]), shape(n.inputs[1]), shape(n.outputs[0]), rows),
                                     in(0), in(1), out(0));
      return;
    case ModelOp::Conv2dTranspose: {
      auto w = transpose_window(n, shape(n.inputs[0]), shape(n.outputs[0]), shape(n.inputs[1]), rows);
      ref::conv2d_backward_input<T>(w, in(0), in(1), out(0));
      ref::add_bias<T>(count(n.outputs[0]) / shape(n.outputs[0]).back(), shape(n.outputs[0]).back(), in(2), out(0));
      return;
    }
    case ModelOp::Conv2dTransposeBackwardInput:  // dy [oh, ow, filters], kernel -> dx [h, w, in]
      ref::conv2d<T>(transpose_window(n, shape(n.outputs[0]), shape(n.inputs[0]), shape(n.inputs[1]), rows), in(0),
                     in(1), nullptr, out(0));
      return;
    case ModelOp::Conv2dTransposeBackwardKernel:  // x, dy -> dkernel
      ref::conv2d_backward_kernel<T>(
          transpose_window(n, shape(n.inputs[0]), shape(n.inputs[1]), shape(n.outputs[0]), rows), in(1), in(0), out(0));
      return;
    case ModelOp::Dense: {
      const Shape& k = shape(n.inputs[1]);
      ref::dense<T>(count(n.inputs[0]) / k[0], k[0], k[1], in(0), in(1), in(2), out(0));
      return;
    }
    case ModelOp::DenseBackwardInput: {
      const Shape& k = shape(n.inputs[1]);
      ref::dense_backward_input<T>(count(n.inputs[0]) / k[1], k[0], k[1], in(0), in(1), out(0));
      return;
    }
    case ModelOp::DenseBackwardKernel: {
      const Shape& k = shape(n.outputs[0]);
      ref::dense_backward_kernel<T>(count(n.inputs[0]) / k[0], k[0], k[1], in(0), in(1), out(0));
      return;
    }
    case ModelOp::BiasBackward: {
      int64_t c = shape(n.outputs[0]).back();
      ref::bias_backward<T>(count(n.inputs[0]) / c, c, in(0), out(0));
      return;
    }
    case ModelOp::MaxPool2d:
      ref::max_pool2d<T>(pool_window(n, shape(n.inputs[0]), shape(n.outputs[0]), rows), in(0), out(0));
      return;
    case ModelOp::MaxPool2dBackward:
      ref::max_pool2d_backward<T>(pool_window(n, shape(n.inputs[0]), shape(n.inputs[1]), rows), in(0), in(1), out(0));
      return;
    case ModelOp::AvgPool2d:
      ref::avg_pool2d<T>(pool_window(n, shape(n.inputs[0]), shape(n.outputs[0]), rows), in(0), out(0));
      return;
    case ModelOp::AvgPool2dBackward:
      ref::avg_pool2d_backward<T>(pool_window(n, shape(n.outputs[0]), shape(n.inputs[0]), rows), in(0), out(0));
      return;
    case ModelOp::GlobalAvgPool: {
      const Shape& x = shape(n.inputs[0]);
      ref::global_avg_pool<T>(rows, x[0] * x[1], x[2], in(0), out(0));
      return;
    }
    case ModelOp::GlobalAvgPoolBackward: {
      const Shape& x = shape(n.outputs[0]);
      ref::global_avg_pool_backward<T>(rows, x[0] * x[1], x[2], in(0), out(0));
      return;
    }
    case ModelOp::GlobalMaxPool: {
      const Shape& x = shape(n.inputs[0]);
      ref::global_max_pool<T>(rows, x[0] * x[1], x[2], in(0), out(0));
      return;
    }
    case ModelOp::GlobalMaxPoolBackward: {
      const Shape& x = shape(n.inputs[0]);
      ref::global_max_pool_backward<T>(rows, x[0] * x[1], x[2], in(0), in(1), out(0));
      return;
    }
    case ModelOp::Upsample2d:
      ref::upsample2d<T>(pool_window(n, shape(n.inputs[0]), shape(n.outputs[0]), rows),
                         n.attr_symbol("method") == "bilinear", in(0), out(0));
      return;
    case ModelOp::Upsample2dBackward:
      ref::upsample2d_backward<T>(pool_window(n, shape(n.outputs[0]), shape(n.inputs[0]), rows),
                                  n.attr_symbol("method") == "bilinear", in(0), out(0));
      return;
    case ModelOp::LeakyRelu: ref::leaky_relu<T>(count(n.inputs[0]), n.attr_number("alpha"), in(0), out(0)); return;
    case ModelOp::LeakyReluBackward:
      ref::leaky_relu_backward<T>(count(n.inputs[0]), n.attr_number("alpha"), in(0), in(1), out(0));
      return;
    case ModelOp::Gelu: ref::gelu<T>(count(n.inputs[0]), in(0), out(0)); return;
    case ModelOp::GeluBackward: ref::gelu_backward<T>(count(n.inputs[0]), in(0), in(1), out(0)); return;
    case ModelOp::Softmax:
    case ModelOp::SoftmaxBackward: {
      Shape full = g_.full_shape(n.inputs[0], rows);
      size_t axis = static_cast<size_t>(n.attr_int("axis")) + 1;
      int64_t outer = product(full, 0, axis), len = full[axis], inner = product(full, axis + 1, full.size());
      if (n.op == ModelOp::Softmax) ref::softmax<T>(outer, len, inner, in(0), out(0));
      else ref::softmax_backward<T>(outer, len, inner, in(0), in(1), out(0));
      return;
    }
    case ModelOp::BatchNorm:
    case ModelOp::LayerNorm: {
      int64_t c = shape(n.inputs[0]).back();
      int64_t r = count(n.inputs[0]) / c;
      double eps = n.attr_number("epsilon");
      if (n.op == ModelOp::BatchNorm && n.attr("inference") && n.attr("inference")->b)
        ref::batch_norm_inference<T>(r, c, eps, in(0), in(1), in(2), in(3), in(4), out(0), out(1), out(2));
      else if (n.op == ModelOp::BatchNorm) ref::batch_norm<T>(r, c, eps, in(0), in(1), in(2), out(0), out(1), out(2));
      else ref::layer_norm<T>(r, c, eps, in(0), in(1), in(2), out(0), out(1), out(2));
      return;
    }
    case ModelOp::BatchNormBackward:
    case ModelOp::LayerNormBackward: {
      int64_t c = shape(n.inputs[0]).back();
      int64_t r = count(n.inputs[0]) / c;
      // The forward node's epsilon travels in the attributes the gradient rule copied.
      double eps = n.attr_number("epsilon");
      if (n.op == ModelOp::BatchNormBackward)
        ref::batch_norm_backward<T>(r, c, eps, in(0), in(1), in(2), in(3), in(4), out(0), out(1), out(2));
      else ref::layer_norm_backward<T>(r, c, eps, in(0), in(1), in(2), in(3), in(4), out(0), out(1), out(2));
      return;
    }
    case ModelOp::Dropout: {
      int64_t per = g_.values[n.inputs[0]].elements_per_example();
      if (n.attr("inference") && n.attr("inference")->b) {  // evaluation: everything kept, nothing scaled
        std::fill(out(1), out(1) + rows * per, T(1));
        std::copy(in(0), in(0) + rows * per, out(0));
        return;
      }
      ref::dropout_mask<T>(rows, per, n.attr_number("rate"), seed_, static_cast<uint64_t>(n.attr_int("stream")), step,
                           out(1));
      ref::multiply<T>(rows * per, in(0), out(1), out(0));
      return;
    }
    case ModelOp::DropoutBackward: ref::multiply<T>(count(n.inputs[0]), in(0), in(1), out(0)); return;
    case ModelOp::Loss:
    case ModelOp::LossBackward: {
      ref::LossSpec s;
      std::optional<LossKind> kind = loss_kind_from_name(n.attr_symbol("kind"));
      if (!kind) throw std::logic_error("a loss node of an unknown loss " + n.attr_symbol("kind"));
      s.kind = *kind;
      s.from_logits = n.attr("from_logits") && n.attr("from_logits")->b;
      s.sparse = n.attr("sparse") && n.attr("sparse")->b;
      if (n.attr("delta")) s.delta = n.attr_number("delta");
      s.batch = rows;
      s.per_example = g_.values[n.inputs[0]].elements_per_example();
      s.classes = shape(n.inputs[0]).empty() ? 1 : shape(n.inputs[0]).back();
      if (n.op == ModelOp::Loss) {
        loss_ = ref::loss<T>(s, in(0), in(1));
        *out(0) = static_cast<T>(loss_);
      } else {
        ref::loss_backward<T>(s, in(0), in(1), out(0));
        if (n.attr("loss_scale") && loss_scale_) {  // mixed_fp16: the backward pass starts from loss * scale
          const T scale = static_cast<T>(loss_scale_->scale);
          T* d = out(0);
          for (int64_t i = 0, e = count(n.outputs[0]); i < e; ++i) d[i] *= scale;
        }
      }
      return;
    }
    case ModelOp::MovingAverage: {
      const T m = static_cast<T>(n.attr_number("momentum"));
      T* state = in(0);
      const T* stat = in(1);
      int64_t c = g_.values[n.inputs[0]].elements_per_example();
      for (int64_t i = 0; i < c; ++i) state[i] = state[i] * m + stat[i] * (T(1) - m);
      return;
    }
    case ModelOp::OptimizerStep:
      // mixed_fp16: unscale the gradients, or skip the step when one of them (or the loss) is not finite.
      if (n.attr("loss_scale") && loss_scale_ && !loss_scale_->unscale_or_skip(loss_, buf_.grads)) return;
      optimizer_step<T>(OptimizerConfig::from_node(n), buf_.params, buf_.grads, slots_, loop_threads(),
                        optimizer_kernel(n));
      return;
    case ModelOp::Round: {  // mixed precision's casts, emulated: to bf16 or f16 (nearest even) and back
      const bool bf16 = n.attr_symbol("dtype") == "bf16";
      const T* x = in(0);
      T* y = out(0);
      // Element by element, so split over loop_threads() like the optimizer's update.
      run_split(loop_threads(), count(n.inputs[0]), [&](int64_t begin, int64_t end) {
        if constexpr (std::is_same_v<T, float>) {
          if (bf16) round_to_bf16(x + begin, y + begin, end - begin);
          else round_to_f16(x + begin, y + begin, end - begin);
        } else {
          for (int64_t i = begin; i < end; ++i) {
            const float f = static_cast<float>(x[i]);
            y[i] = static_cast<T>(bf16 ? bf16_bits_to_float(float_to_bf16_bits(f))
                                       : half_bits_to_float(float_to_half_bits(f)));
          }
        }
      });
      return;
    }
  }
}

template class ReferenceExecutor<float>;
template class ReferenceExecutor<double>;

}  // namespace pipec
