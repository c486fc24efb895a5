// The exported C functions of a model library (runtime/capi/pipe.h, "Served models"): the embedded
// preprocessing plan, inference graph and weights decoded once per process, a ServedModel per
// pipe_model_open, argument checks, exceptions turned into -1/NULL and pipe_last_error's message.
#include <cstring>
#include <exception>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "runtime/capi/capi_error.h"
#include "runtime/capi/dlpack_export.h"
#include "runtime/capi/embedded.h"
#include "runtime/capi/pipe.h"
#include "runtime/capi/pipe_handle.h"
#include "runtime/model/model_serialize.h"
#include "runtime/plan/plan_serialize.h"
#include "runtime/serve/embedded_model.h"
#include "runtime/serve/served_model.h"
#include "runtime/train/persist/weights_file.h"

struct pipe_model {
  std::unique_ptr<pipec::ServedModel> impl;
};

namespace {

using pipec::set_capi_error;

// What every pipe_model_open starts from, decoded on first use; a library whose blobs do not decode
// keeps failing with the same message.
struct EmbeddedModel {
  pipec::Plan plan;  // its kernels bound
  pipec::ModelGraph graph;
  std::string weights;  // the safetensors bytes
};

const EmbeddedModel& embedded_model() {
  static std::once_flag once;
  static EmbeddedModel m;
  static std::string error;
  std::call_once(once, [] {
    try {
      if (!pipec_embedded_model || !&pipec_embedded_model_size || !pipec_embedded_serving_plan ||
          !&pipec_embedded_serving_plan_size || !pipec_embedded_weights || !&pipec_embedded_weights_size)
        throw std::runtime_error(
            "this library carries no trained model (build it with `pipec build SPEC --train T --weights W`)");
      m.plan = pipec::decode_plan(std::string_view(reinterpret_cast<const char*>(pipec_embedded_serving_plan),
                                                   pipec_embedded_serving_plan_size),
                                  "the library's embedded preprocessing");
      std::vector<pipec::KernelSymbol> kernels;
      if (pipec_embedded_kernels)
        for (const pipec_embedded_kernel* k = pipec_embedded_kernels; k->symbol; ++k)
          kernels.push_back({k->symbol, k->fn});
      pipec::bind_kernels(m.plan, kernels);
      m.graph = pipec::decode_model_graph(
          std::string_view(reinterpret_cast<const char*>(pipec_embedded_model), pipec_embedded_model_size),
          "the library's embedded model");
      m.weights.assign(reinterpret_cast<const char*>(pipec_embedded_weights), pipec_embedded_weights_size);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw std::runtime_error(error);
  return m;
}

// The weights of `g` from a safetensors file (`name` in errors): every parameter and moving statistic.
pipec::FlatBuffers<float> weights_from(const pipec::ModelGraph& g, const pipec::SafetensorsFile& f,
                                       const std::string& name) {
  pipec::FlatBuffers<float> w;
  w.params.assign(static_cast<size_t>(g.param_elements()), 0.0f);
  w.states.assign(static_cast<size_t>(g.state_elements()), 0.0f);
  std::vector<std::string> problems =
      pipec::copy_tensors(f, pipec::weight_slots(g, w), fmt::format("a parameter of model `{}`", g.name));
  if (!problems.empty())
    throw std::runtime_error(
        fmt::format("{}: the weights do not fit model `{}` {}", name, g.name, pipec::problems_text(problems)));
  return w;
}

bool check_model(const pipe_model* m, const char* fn) {
  if (!m) set_capi_error(fmt::format("{}: the model is NULL", fn));
  return m != nullptr;
}

bool check_input(const pipe_model* m, int32_t i, const char* fn) {
  if (!check_model(m, fn)) return false;
  if (i < 0 || static_cast<size_t>(i) >= m->impl->inputs().size()) {
    set_capi_error(fmt::format("{}: input index {} is not in [0, {})", fn, i, m->impl->inputs().size()));
    return false;
  }
  return true;
}

int64_t dim_of(const pipec::Shape& shape, int32_t d, const char* fn) {
  if (d < 0 || static_cast<size_t>(d) >= shape.size()) {
    set_capi_error(fmt::format("{}: dimension {} is not in [0, {})", fn, d, shape.size()));
    return -2;
  }
  return shape[d] < 0 ? -1 : shape[d];
}

// A caller's DLTensor as a runtime tensor over the same memory (read only; valid during the call).
pipec::Tensor tensor_view(const DLTensor& t, const pipec::ServedField& f, int32_t i) {
  auto fail = [&](const std::string& why) {
    return std::runtime_error(fmt::format("input {} (`{}`): {}", i, f.name, why));
  };
  if (t.device.device_type != kDLCPU) throw fail("the tensor is not on the CPU");
  if (t.ndim < 1) throw fail("a request's input has a rows dimension first; this tensor has none");
  const std::optional<DLDataType> want = pipec::dlpack_dtype(f.dtype);
  if (!want || t.dtype.code != want->code || t.dtype.bits != want->bits || t.dtype.lanes != 1)
    throw fail(fmt::format("its DLPack dtype is (code {}, bits {}, lanes {}); the model takes {}", t.dtype.code,
                           t.dtype.bits, t.dtype.lanes, pipec::dtype_name(f.dtype)));
  pipec::Shape shape(t.shape, t.shape + t.ndim);
  for (int64_t d : shape)
    if (d < 0) throw fail("a dimension is negative");
  if (t.strides) {  // only the strides of the compact layout
    int64_t expect = 1;
    for (int32_t d = t.ndim - 1; d >= 0; --d) {
      if (shape[d] != 1 && t.strides[d] != expect) throw fail("the tensor is not compact row-major");
      expect *= shape[d];
    }
  }
  const auto* data = static_cast<uint8_t*>(t.data) + t.byte_offset;
  // The runtime tensor does not own the caller's memory: a shared_ptr that frees nothing.
  std::shared_ptr<uint8_t[]> view(const_cast<uint8_t*>(data), [](uint8_t*) {});
  return pipec::Tensor::adopt(f.dtype, std::move(shape), std::move(view));
}

}  // namespace

extern "C" {

void pipe_model_options_init(pipe_model_options* o) {
  if (o) std::memset(o, 0, sizeof *o);
}

const char* pipe_model_name(void) { return pipec_embedded_train_name ? pipec_embedded_train_name : ""; }

pipe_model* pipe_model_open(const pipe_model_options* options) {
  pipe_model_options o;
  pipe_model_options_init(&o);
  if (options) o = *options;
  try {
    if (o.threads < 0) throw std::runtime_error(fmt::format("threads is {}; 0 means one per core", o.threads));
    const EmbeddedModel& e = embedded_model();
    pipec::FlatBuffers<float> weights;
    if (o.weights && *o.weights) {
      weights = weights_from(e.graph, pipec::read_safetensors(o.weights), o.weights);
    } else {
      const std::string name = "the library's embedded weights";
      weights = weights_from(e.graph, pipec::parse_safetensors(e.weights, name), name);
    }
    pipec::ServedModelOptions so;
    so.threads = o.threads;
    return new pipe_model{std::make_unique<pipec::ServedModel>(e.plan, e.graph, std::move(weights), so)};
  } catch (const std::exception& err) {
    set_capi_error(fmt::format("pipe_model_open: {}", err.what()));
    return nullptr;
  }
}

int32_t pipe_model_num_inputs(const pipe_model* m) {
  return check_model(m, "pipe_model_num_inputs") ? static_cast<int32_t>(m->impl->inputs().size()) : -1;
}

const char* pipe_model_input_name(const pipe_model* m, int32_t i) {
  return check_input(m, i, "pipe_model_input_name") ? m->impl->inputs()[i].name.c_str() : nullptr;
}

DLDataType pipe_model_input_dtype(const pipe_model* m, int32_t i) {
  if (!check_input(m, i, "pipe_model_input_dtype")) return DLDataType{0, 0, 0};
  return pipec::dlpack_dtype(m->impl->inputs()[i].dtype).value_or(DLDataType{0, 0, 0});
}

int32_t pipe_model_input_ndim(const pipe_model* m, int32_t i) {
  return check_input(m, i, "pipe_model_input_ndim") ? static_cast<int32_t>(m->impl->inputs()[i].shape.size()) : -1;
}

int64_t pipe_model_input_dim(const pipe_model* m, int32_t i, int32_t d) {
  if (!check_input(m, i, "pipe_model_input_dim")) return -2;
  return dim_of(m->impl->inputs()[i].shape, d, "pipe_model_input_dim");
}

DLDataType pipe_model_output_dtype(const pipe_model* m) {
  if (!check_model(m, "pipe_model_output_dtype")) return DLDataType{0, 0, 0};
  return pipec::dlpack_dtype(m->impl->output().dtype).value_or(DLDataType{0, 0, 0});
}

int32_t pipe_model_output_ndim(const pipe_model* m) {
  return check_model(m, "pipe_model_output_ndim") ? static_cast<int32_t>(m->impl->output().shape.size()) : -1;
}

int64_t pipe_model_output_dim(const pipe_model* m, int32_t d) {
  if (!check_model(m, "pipe_model_output_dim")) return -2;
  return dim_of(m->impl->output().shape, d, "pipe_model_output_dim");
}

int pipe_predict(pipe_model* m, const DLTensor* const* inputs, int32_t num_inputs, DLManagedTensor** output) {
  if (!check_model(m, "pipe_predict")) return -1;
  if (!output || (num_inputs > 0 && !inputs)) {
    set_capi_error("pipe_predict: inputs or output is NULL");
    return -1;
  }
  try {
    const auto& fields = m->impl->inputs();
    if (num_inputs != static_cast<int32_t>(fields.size()))
      throw std::runtime_error(fmt::format("the model takes {} inputs, {} were given", fields.size(), num_inputs));
    std::vector<pipec::Tensor> in;
    for (int32_t i = 0; i < num_inputs; ++i) {
      if (!inputs[i]) throw std::runtime_error(fmt::format("input {} (`{}`) is NULL", i, fields[i].name));
      in.push_back(tensor_view(*inputs[i], fields[i], i));
    }
    *output = pipec::export_tensor(m->impl->predict(in));
    return 0;
  } catch (const std::exception& e) {
    set_capi_error(fmt::format("pipe_predict: {}", e.what()));
    return -1;
  }
}

void pipe_model_close(pipe_model* m) { delete m; }

}  // extern "C"
