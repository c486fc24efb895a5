#include "runtime/train/reference/reference_executor.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/core/chunk.h"
#include "runtime/core/half.h"
#include "runtime/ops/interpreter.h"
#include "runtime/ops/kernel.h"
#include "runtime/train/math/round_16bit.h"
#include "runtime/train/ref/ref_kernels.h"

namespace pipec {

ModelGraph with_float_dtype(const ModelGraph& g, DType dtype) {
  ModelGraph out = g;
  for (GraphValue& v : out.values)
    if (v.dtype == DType::F32) v.dtype = dtype;
  for (GraphNode& n : out.nodes) {
    if (!n.fn) continue;
    auto fn = std::make_shared<ExprFunction>(*n.fn);
    for (Instr& i : fn->body) {
      // A cast's result type is the dtype it casts to: a cast to f32 becomes one to `dtype`.
      if (i.op == OpKind::Cast && i.type.dtype == DType::F32)
        i.attrs["dtype"] = Value::make_symbol(std::string(dtype_name(dtype)));
      if (i.type.dtype == DType::F32) i.type.dtype = dtype;
      if (i.op == OpKind::Const && i.attrs.at("value").dtype == DType::F32) i.attrs["value"].dtype = dtype;
    }
    n.fn = fn;
  }
  return out;
}

namespace {

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) n *= s[i];
  return n;
}

}  // namespace

template <class T>
ReferenceExecutor<T>::ReferenceExecutor(const ModelGraph& g, uint64_t seed) : state_(g, seed, "reference executor") {}

template <class T>
double ReferenceExecutor<T>::run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step,
                                 OpCategory last, PhaseSeconds* seconds) {
  return state_.run(inputs, target, step, last, seconds, node_runner());
}

template <class T>
double ReferenceExecutor<T>::resume(uint64_t step, OpCategory last, PhaseSeconds* seconds) {
  return state_.resume(step, last, seconds, node_runner());
}

template <class T>
typename StepState<T>::NodeRunner ReferenceExecutor<T>::node_runner() {
  return [this](const GraphNode& n, int64_t rows, uint64_t step) { run_reference_node(state_, n, rows, step); };
}

template <class T>
std::string ReferenceExecutor<T>::description() const {
  return "reference (-O0: plain loops with f64 accumulation, one thread)";
}

template <class T>
void run_reference_node(StepState<T>& s, const GraphNode& n, int64_t rows, uint64_t step, const ReferenceLoops& loops) {
  const ModelGraph& g = s.graph();
  // A layer with a fused activation (compiler/train/passes/fuse_activation.cpp): the layer, then the
  // activation in place, as two loops.
  if (const std::optional<Activation> act = fused_activation(n.attrs)) {
    GraphNode plain = n;
    std::visit(
        [](auto& a) {
          if constexpr (requires { a.activation; }) a.activation.reset();
        },
        plain.attrs);
    run_reference_node(s, plain, rows, step, loops);
    T* y = s.data(n.outputs[0]);
    const int64_t count = shape_num_elements(g.full_shape(n.outputs[0], rows));
    switch (*act) {
      case Activation::Relu:
        for (int64_t i = 0; i < count; ++i) y[i] = y[i] > T(0) ? y[i] : T(0);
        return;
    }
    return;
  }
  // Outputs that are not views of the flat buffers get a tensor of their own.
  s.allocate_outputs(n, rows);
  auto shape = [&](int id) -> const Shape& { return g.values[id].shape; };
  auto count = [&](int id) { return shape_num_elements(g.full_shape(id, rows)); };
  auto in = [&](size_t k) { return s.data(n.inputs.at(k)); };
  auto out = [&](size_t k) { return s.data(n.outputs.at(k)); };
  auto conv = [&]() -> const Conv2dAttrs& { return n.attrs_as<Conv2dAttrs>(); };
  auto transpose = [&]() -> const Conv2dTransposeAttrs& { return n.attrs_as<Conv2dTransposeAttrs>(); };
  auto pool = [&]() -> const Pool2dAttrs& { return n.attrs_as<Pool2dAttrs>(); };
  auto bilinear = [&] { return n.attrs_as<Upsample2dAttrs>().method == Interpolation::Bilinear; };
  switch (n.op) {
    case ModelOp::Expr: {
      Chunk c;
      c.rows = rows;
      std::vector<std::string> fields;
      for (const Instr& i : n.fn->body)
        if (op_has(i.op, OpFlag::Input)) fields.push_back(i.attrs.at("field").s);
      for (int v : n.inputs) {
        Column col;
        col.dense = s.value(v);
        c.columns.push_back(col);
      }
      EvalContext ctx;
      ctx.seed = s.seed();
      std::vector<Column> results = run_function(*n.fn, fields, c, ctx);
      // Into the outputs' places in the arena: the interpreter's results may be views of its inputs,
      // whose places later values take.
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const int o = n.outputs[k];
        const Tensor& t = results[k].dense;
        Tensor place = s.arena_tensor(o, rows);
        if (t.dtype() != place.dtype() || t.num_elements() != place.num_elements())
          throw std::logic_error(fmt::format("reference executor: expr node gives {} {} for %{} ({} {})",
                                             dtype_name(t.dtype()), shape_to_string(t.shape()), o,
                                             dtype_name(place.dtype()), shape_to_string(place.shape())));
        std::memcpy(place.raw(), t.raw(), place.byte_size());
        s.value(o) = place;
      }
      return;
    }
    case ModelOp::Conv2d:
      ref::conv2d<T>(ref::conv_window(conv(), shape(n.inputs[0]), shape(n.outputs[0]), shape(n.inputs[1]), rows), in(0),
                     in(1), in(2), out(0));
      return;
    case ModelOp::Conv2dBackwardInput:
      ref::conv2d_backward_input<T>(
          ref::conv_window(conv(), shape(n.outputs[0]), shape(n.inputs[0]), shape(n.inputs[1]), rows), in(0), in(1),
          out(0));
      return;
    case ModelOp::Conv2dBackwardKernel:
      ref::conv2d_backward_kernel<T>(
          ref::conv_window(conv(), shape(n.inputs[0]), shape(n.inputs[1]), shape(n.outputs[0]), rows), in(0), in(1),
          out(0));
      return;
    case ModelOp::Conv2dTranspose: {
      auto w = ref::transpose_window(transpose(), shape(n.inputs[0]), shape(n.outputs[0]), shape(n.inputs[1]), rows);
      ref::conv2d_backward_input<T>(w, in(0), in(1), out(0));
      ref::add_bias<T>(count(n.outputs[0]) / shape(n.outputs[0]).back(), shape(n.outputs[0]).back(), in(2), out(0));
      return;
    }
    case ModelOp::Conv2dTransposeBackwardInput:  // dy [oh, ow, filters], kernel -> dx [h, w, in]
      ref::conv2d<T>(
          ref::transpose_window(transpose(), shape(n.outputs[0]), shape(n.inputs[0]), shape(n.inputs[1]), rows), in(0),
          in(1), nullptr, out(0));
      return;
    case ModelOp::Conv2dTransposeBackwardKernel:  // x, dy -> dkernel
      ref::conv2d_backward_kernel<T>(
          ref::transpose_window(transpose(), shape(n.inputs[0]), shape(n.inputs[1]), shape(n.outputs[0]), rows), in(1),
          in(0), out(0));
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
      ref::max_pool2d<T>(ref::pool_window(&pool(), shape(n.inputs[0]), shape(n.outputs[0]), rows), in(0), out(0));
      return;
    case ModelOp::MaxPool2dBackward:
      ref::max_pool2d_backward<T>(ref::pool_window(&pool(), shape(n.inputs[0]), shape(n.inputs[1]), rows), in(0), in(1),
                                  out(0));
      return;
    case ModelOp::AvgPool2d:
      ref::avg_pool2d<T>(ref::pool_window(&pool(), shape(n.inputs[0]), shape(n.outputs[0]), rows), in(0), out(0));
      return;
    case ModelOp::AvgPool2dBackward:
      ref::avg_pool2d_backward<T>(ref::pool_window(&pool(), shape(n.outputs[0]), shape(n.inputs[0]), rows), in(0),
                                  out(0));
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
      ref::upsample2d<T>(ref::pool_window(nullptr, shape(n.inputs[0]), shape(n.outputs[0]), rows), bilinear(), in(0),
                         out(0));
      return;
    case ModelOp::Upsample2dBackward:
      ref::upsample2d_backward<T>(ref::pool_window(nullptr, shape(n.outputs[0]), shape(n.inputs[0]), rows), bilinear(),
                                  in(0), out(0));
      return;
    case ModelOp::LeakyRelu:
      ref::leaky_relu<T>(count(n.inputs[0]), n.attrs_as<LeakyReluAttrs>().alpha, in(0), out(0));
      return;
    case ModelOp::LeakyReluBackward:
      ref::leaky_relu_backward<T>(count(n.inputs[0]), n.attrs_as<LeakyReluAttrs>().alpha, in(0), in(1), out(0));
      return;
    case ModelOp::Gelu: ref::gelu<T>(count(n.inputs[0]), in(0), out(0)); return;
    case ModelOp::GeluBackward: ref::gelu_backward<T>(count(n.inputs[0]), in(0), in(1), out(0)); return;
    case ModelOp::Softmax:
    case ModelOp::SoftmaxBackward: {
      Shape full = g.full_shape(n.inputs[0], rows);
      size_t axis = static_cast<size_t>(n.attrs_as<SoftmaxAttrs>().axis) + 1;
      int64_t outer = product(full, 0, axis), len = full[axis], inner = product(full, axis + 1, full.size());
      if (n.op == ModelOp::Softmax) ref::softmax<T>(outer, len, inner, in(0), out(0));
      else ref::softmax_backward<T>(outer, len, inner, in(0), in(1), out(0));
      return;
    }
    case ModelOp::BatchNorm: {
      const BatchNormAttrs& a = n.attrs_as<BatchNormAttrs>();
      const int64_t c = shape(n.inputs[0]).back(), r = count(n.inputs[0]) / c;
      if (a.inference)
        ref::batch_norm_inference<T>(r, c, a.epsilon, in(0), in(1), in(2), in(3), in(4), out(0), out(1), out(2));
      else ref::batch_norm<T>(r, c, a.epsilon, in(0), in(1), in(2), out(0), out(1), out(2));
      return;
    }
    case ModelOp::LayerNorm: {
      const int64_t c = shape(n.inputs[0]).back(), r = count(n.inputs[0]) / c;
      ref::layer_norm<T>(r, c, n.attrs_as<LayerNormAttrs>().epsilon, in(0), in(1), in(2), out(0), out(1), out(2));
      return;
    }
    // The forward node's epsilon travels in the attributes the gradient rule copied.
    case ModelOp::BatchNormBackward: {
      const int64_t c = shape(n.inputs[0]).back(), r = count(n.inputs[0]) / c;
      ref::batch_norm_backward<T>(r, c, n.attrs_as<BatchNormAttrs>().epsilon, in(0), in(1), in(2), in(3), in(4), out(0),
                                  out(1), out(2));
      return;
    }
    case ModelOp::LayerNormBackward: {
      const int64_t c = shape(n.inputs[0]).back(), r = count(n.inputs[0]) / c;
      ref::layer_norm_backward<T>(r, c, n.attrs_as<LayerNormAttrs>().epsilon, in(0), in(1), in(2), in(3), in(4), out(0),
                                  out(1), out(2));
      return;
    }
    case ModelOp::Dropout: {
      const DropoutAttrs& a = n.attrs_as<DropoutAttrs>();
      int64_t per = g.values[n.inputs[0]].elements_per_example();
      if (a.inference) {  // evaluation: everything kept, nothing scaled
        std::fill(out(1), out(1) + rows * per, T(1));
        std::copy(in(0), in(0) + rows * per, out(0));
        return;
      }
      ref::dropout_mask<T>(rows, per, a.rate, s.seed(), static_cast<uint64_t>(a.stream), step, out(1),
                           s.first_example());
      ref::multiply<T>(rows * per, in(0), out(1), out(0));
      return;
    }
    case ModelOp::DropoutBackward: ref::multiply<T>(count(n.inputs[0]), in(0), in(1), out(0)); return;
    case ModelOp::Embedding:
    case ModelOp::EmbeddingBackward: {  // ids (i64: lowering casts them), then the table or dy
      const Tensor& ids = s.value(n.inputs[0]);
      if (ids.dtype() != DType::I64)
        throw std::logic_error(fmt::format("reference executor: {} node reads {} ids, not i64", model_op_name(n.op),
                                           dtype_name(ids.dtype())));
      const EmbeddingAttrs& a = n.attrs_as<EmbeddingAttrs>();
      const int64_t positions = count(n.inputs[0]), per = g.values[n.inputs[0]].elements_per_example();
      if (n.op == ModelOp::Embedding)
        ref::embedding<T>(positions, a.input_dim, a.output_dim, ids.data<int64_t>(), in(1), out(0), n.layer, per,
                          loops.threads);
      else
        ref::embedding_backward<T>(positions, a.input_dim, a.output_dim, ids.data<int64_t>(), in(1), out(0), n.layer,
                                   per, loops.threads);
      return;
    }
    case ModelOp::Loss:
    case ModelOp::LossBackward: {
      const LossAttrs& a = n.attrs_as<LossAttrs>();
      ref::LossSpec spec;
      spec.kind = a.kind;
      spec.from_logits = a.from_logits;
      spec.sparse = a.sparse.value_or(false);
      spec.delta = a.delta.value_or(spec.delta);
      spec.batch = rows;
      spec.per_example = g.values[n.inputs[0]].elements_per_example();
      spec.classes = shape(n.inputs[0]).empty() ? 1 : shape(n.inputs[0]).back();
      if (n.op == ModelOp::Loss) {
        s.set_loss(ref::loss<T>(spec, in(0), in(1)));
        *out(0) = static_cast<T>(s.loss());
      } else {
        ref::loss_backward<T>(spec, in(0), in(1), out(0));
        if (a.loss_scale && s.loss_scale()) {  // mixed_fp16: the backward pass starts from loss * scale
          const T scale = static_cast<T>(s.loss_scale()->scale);
          T* d = out(0);
          for (int64_t i = 0, e = count(n.outputs[0]); i < e; ++i) d[i] *= scale;
        }
      }
      return;
    }
    case ModelOp::MovingAverage: {
      const T m = static_cast<T>(n.attrs_as<MovingAverageAttrs>().momentum);
      T* state = in(0);
      const T* stat = in(1);
      int64_t c = g.values[n.inputs[0]].elements_per_example();
      for (int64_t i = 0; i < c; ++i) state[i] = state[i] * m + stat[i] * (T(1) - m);
      return;
    }
    case ModelOp::OptimizerStep:
      // mixed_fp16: unscale the gradients, or skip the step when one of them (or the loss) is not finite.
      if (loss_scaled(n.attrs) && s.loss_scale() && !s.loss_scale()->unscale_or_skip(s.loss(), s.buffers().grads))
        return;
      optimizer_step<T>(OptimizerConfig::from_node(n), s.buffers().params, s.buffers().grads, s.optimizer_slots(),
                        loops.threads, loops.compiled_update ? n.native.get() : nullptr);
      return;
    case ModelOp::Round: {  // mixed precision's casts, emulated: to bf16 or f16 (nearest even) and back
      const bool bf16 = n.attrs_as<RoundAttrs>().dtype == Float16::BF16;
      const T* x = in(0);
      T* y = out(0);
      // Element by element, so split over the loops' threads like the optimizer's update; but not below
      // 64K values (some microseconds), where handing parts to other threads costs more than it saves.
      const int64_t values = count(n.inputs[0]);
      run_split(values < (int64_t(1) << 16) ? ParallelFor() : loops.threads, values, [&](int64_t begin, int64_t end) {
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

template void run_reference_node<float>(StepState<float>&, const GraphNode&, int64_t, uint64_t, const ReferenceLoops&);
template void run_reference_node<double>(StepState<double>&, const GraphNode&, int64_t, uint64_t,
                                         const ReferenceLoops&);
template class ReferenceExecutor<float>;
template class ReferenceExecutor<double>;
static_assert(!std::is_abstract_v<ReferenceExecutor<float>>, "the float reference executor is a whole StepExecutor");

}  // namespace pipec
