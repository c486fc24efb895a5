#include "runtime/serve/served_model.h"

#include <cstring>

#include <fmt/format.h>

#include "runtime/exec/stages/native_call.h"
#include "runtime/ops/interpreter.h"
#include "runtime/serve/fold_parameter_casts.h"
#include "runtime/train/fast/fast_executor.h"

namespace pipec {

namespace {

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + (s[i] == kUnknownDim ? "?" : std::to_string(s[i]));
  return out + "]";
}

// A deep copy: an executor's values live in its arena, which its next request overwrites.
Tensor copy_of(const Tensor& t) {
  Tensor out = Tensor::empty(t.dtype(), t.shape());
  std::memcpy(out.raw(), t.raw(), t.byte_size());
  return out;
}

}  // namespace

ServedModel::ServedModel(Plan preprocessing, ModelGraph graph, FlatBuffers<float> weights, ServedModelOptions options)
    : plan_(std::move(preprocessing)), graph_(std::move(graph)), weights_(std::move(weights)), options_(options) {
  if (plan_.stages.empty()) throw ServeError("the served model has no preprocessing plan");
  for (size_t k = 1; k < plan_.stages.size(); ++k)
    if (plan_.stages[k].kind != StageKind::Map || !plan_.stages[k].fn)
      throw ServeError(
          fmt::format("the served preprocessing's stage #{} is `{}`, not a map", k, stage_name(plan_.stages[k].kind)));
  for (const Field& f : plan_.stages[0].element.fields) {
    if (!f.type || f.type->kind != TypeKind::Tensor || f.type->dtype == DType::Bytes)
      throw ServeError(
          fmt::format("the model's input `{}` is not a tensor of numbers (DLPack cannot carry it)", f.name));
    inputs_.push_back({f.name, f.type->dtype, f.type->shape});
  }
  if (graph_.output < 0) throw ServeError(fmt::format("model `{}` has no output", graph_.name));
  const GraphValue& out = graph_.values[graph_.output];
  output_ = {out.name.empty() ? "output" : out.name, out.dtype, out.shape};
  if (weights_.params.size() != static_cast<size_t>(graph_.param_elements()) ||
      weights_.states.size() != static_cast<size_t>(graph_.state_elements()))
    throw ServeError(fmt::format("model `{}` has {} parameters and {} state values; the weights given have {} and {}",
                                 graph_.name, graph_.param_elements(), graph_.state_elements(), weights_.params.size(),
                                 weights_.states.size()));
  // Under mixed precision: each parameter's cast to the compute type, done once here rather than at
  // every request (the weights never change).
  fold_parameter_casts(graph_, weights_);
}

ServedModel::~ServedModel() = default;

int ServedModel::compiled_kernels() const {
  int n = 0;
  for (const Stage& s : plan_.stages)
    if (s.native && s.native->fn) ++n;
  return n;
}

std::vector<Tensor> ServedModel::preprocess(const std::vector<Tensor>& in) const {
  if (in.size() != inputs_.size())
    throw ServeError(fmt::format("the model takes {} inputs, {} were given", inputs_.size(), in.size()));
  Chunk c;
  c.rows = in.empty() ? 0 : (in[0].rank() > 0 ? in[0].shape()[0] : -1);
  for (size_t i = 0; i < in.size(); ++i) {
    const ServedField& f = inputs_[i];
    const Tensor& t = in[i];
    if (t.dtype() != f.dtype)
      throw ServeError(fmt::format("input {} (`{}`) is {}; the model takes {}", i, f.name, dtype_name(t.dtype()),
                                   dtype_name(f.dtype)));
    bool fits = t.rank() == static_cast<int64_t>(f.shape.size()) + 1;
    for (size_t d = 0; fits && d < f.shape.size(); ++d)
      fits = f.shape[d] == kUnknownDim || f.shape[d] == t.shape()[d + 1];
    if (!fits)
      throw ServeError(fmt::format("input {} (`{}`) has shape {}; the model takes [rows, {}", i, f.name,
                                   shape_text(t.shape()), shape_text(f.shape).substr(1, std::string::npos)));
    if (t.shape()[0] != c.rows)
      throw ServeError(
          fmt::format("input {} (`{}`) has {} rows and input 0 (`{}`) {}: every input holds the same "
                      "examples",
                      i, f.name, t.shape()[0], inputs_[0].name, c.rows));
    Column col;
    col.dense = t;
    c.columns.push_back(std::move(col));
  }
  if (c.rows <= 0) throw ServeError("a request holds no examples (0 rows)");

  std::vector<std::string> fields;
  for (const ServedField& f : inputs_) fields.push_back(f.name);
  for (size_t k = 1; k < plan_.stages.size(); ++k) {
    const Stage& s = plan_.stages[k];
    std::vector<Column> cols;
    try {
      // The compiled kernel when the chunk fits it, else the interpreter (which names a data error).
      if (!s.native || !s.native->fn || !run_native(s, fields, c, 0, cols)) cols = run_function(*s.fn, fields, c, {});
    } catch (const std::exception& e) {
      throw ServeError(fmt::format("preprocessing ({}{}): {}", s.loc.valid() ? s.loc.to_string() + ": " : "",
                                   stage_name(s.kind), e.what()));
    }
    c.columns = std::move(cols);
    fields.clear();
    for (const auto& [name, id] : s.fn->results) fields.push_back(name);
  }
  std::vector<Tensor> out;
  for (const std::string& name : graph_.input_fields) {
    size_t at = 0;
    while (at < fields.size() && fields[at] != name) ++at;
    if (at == fields.size() || c.columns[at].ragged)
      throw ServeError(fmt::format("the preprocessing gave no tensor `{}` for the model", name));
    out.push_back(c.columns[at].dense);
  }
  return out;
}

std::unique_ptr<StepExecutor> ServedModel::take_executor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<StepExecutor> ex = std::move(idle_.back());
      idle_.pop_back();
      return ex;
    }
  }
  FastExecutorOptions o;
  o.threads = options_.threads;
  o.constant_weights = true;
  // Below some 16 MFLOP a layer takes a few tens of microseconds of one core, about what waking another
  // thread and joining it costs: one example of the chess net answers in 0.05 ms on one thread and took
  // 0.09 ms on two (bench/serve, mixed_bf16).
  o.serial_below_flops = 16'000'000;
  auto ex = std::make_unique<FastExecutor>(graph_, 0, o);
  ex->buffers().params = weights_.params;
  ex->buffers().states = weights_.states;
  ex->sync_to_device();
  return ex;
}

void ServedModel::give_back(std::unique_ptr<StepExecutor> ex) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(ex));
}

Tensor ServedModel::predict(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> x = preprocess(inputs);
  std::unique_ptr<StepExecutor> ex = take_executor();
  Tensor out;
  try {
    ex->run(x, nullptr, 0, OpCategory::Forward);
    out = copy_of(ex->host_value(graph_.output));
  } catch (const std::exception& e) {
    // The executor may be half-way through a step: it is dropped, not reused.
    throw ServeError(fmt::format("model `{}`: {}", graph_.name, e.what()));
  }
  give_back(std::move(ex));
  return out;
}

}  // namespace pipec
