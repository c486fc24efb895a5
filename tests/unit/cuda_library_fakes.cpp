#include "cuda_library_fakes.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace pipec::testing {

using namespace cudnn;

// ---------------------------------------------------------------------------------------------------
// cuDNN

namespace {

FakeCudnn* g_cudnn = nullptr;

FakeCudnn& cudnn_fake() {
  if (!g_cudnn) throw std::logic_error("a cuDNN call without a FakeCudnn");
  return *g_cudnn;
}

const char* type_name(int32_t type) {
  switch (type) {
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: return "CONVOLUTION";
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return "ENGINE";
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: return "ENGINECFG";
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return "ENGINEHEUR";
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return "EXECUTION_PLAN";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: return "OPERATION_CONVOLUTION_FORWARD";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: return "OPERATION_CONVOLUTION_BACKWARD_DATA";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: return "OPERATION_CONVOLUTION_BACKWARD_FILTER";
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return "OPERATIONGRAPH";
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return "VARIANT_PACK";
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return "TENSOR";
  }
  return "UNKNOWN";
}

constexpr uintptr_t kDescriptorBase = 0x100000;
const cudnnHandle_t kFakeHandle = reinterpret_cast<cudnnHandle_t>(uintptr_t(0xC0DE0));

}  // namespace

cudnnBackendDescriptor_t fake_descriptor_handle(int64_t id) {
  return reinterpret_cast<cudnnBackendDescriptor_t>(kDescriptorBase + static_cast<uintptr_t>(id) * 16);
}

FakeCudnn::FakeCudnn() {
  if (g_cudnn) throw std::logic_error("two FakeCudnn at once");
  g_cudnn = this;
  api_.cudnnGetVersion = [] { return size_t(91900); };
  api_.cudnnGetErrorString = [](cudnnStatus_t s) -> const char* {
    switch (s) {
      case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
      case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
      case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    }
    return "CUDNN_STATUS_UNKNOWN";
  };
  api_.cudnnGetLastErrorString = [](char* message, size_t max_size) {
    std::string& e = cudnn_fake().last_error;
    if (max_size == 0) return;
    size_t n = std::min(e.size(), max_size - 1);
    std::memcpy(message, e.data(), n);
    message[n] = '\0';
    e.clear();
  };
  api_.cudnnGraphVersionCheck = [] { return CUDNN_STATUS_SUCCESS; };
  api_.cudnnCreate = [](cudnnHandle_t* h) {
    FakeCudnn& f = cudnn_fake();
    f.calls.push_back({"cudnnCreate", 0, -1, {}});
    if (cudnnStatus_t s = f.failing("cudnnCreate")) return s;
    *h = kFakeHandle;
    f.handle_live = true;
    return CUDNN_STATUS_SUCCESS;
  };
  api_.cudnnDestroy = [](cudnnHandle_t h) {
    FakeCudnn& f = cudnn_fake();
    f.calls.push_back({"cudnnDestroy", 0, -1, {}});
    if (h != kFakeHandle || !f.handle_live) return CUDNN_STATUS_BAD_PARAM;
    f.handle_live = false;
    return CUDNN_STATUS_SUCCESS;
  };
  api_.cudnnSetStream = [](cudnnHandle_t h, cuda::CUstream s) {
    FakeCudnn& f = cudnn_fake();
    f.calls.push_back({"cudnnSetStream", 0, -1, {}});
    if (h != kFakeHandle) return CUDNN_STATUS_BAD_PARAM;
    f.stream = s;
    return CUDNN_STATUS_SUCCESS;
  };
  api_.cudnnBackendCreateDescriptor = [](cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t* d) {
    return cudnn_fake().create(t, d);
  };
  api_.cudnnBackendDestroyDescriptor = [](cudnnBackendDescriptor_t d) { return cudnn_fake().destroy(d); };
  api_.cudnnBackendFinalize = [](cudnnBackendDescriptor_t d) { return cudnn_fake().finalize(d); };
  api_.cudnnBackendSetAttribute = [](cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a,
                                     cudnnBackendAttributeType_t t, int64_t n,
                                     const void* v) { return cudnn_fake().set(d, a, t, n, v); };
  api_.cudnnBackendGetAttribute = [](cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a,
                                     cudnnBackendAttributeType_t t, int64_t r, int64_t* n,
                                     void* v) { return cudnn_fake().get(d, a, t, r, n, v); };
  api_.cudnnBackendExecute = [](cudnnHandle_t h, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack) {
    return cudnn_fake().execute(h, plan, pack);
  };
}

FakeCudnn::~FakeCudnn() { g_cudnn = nullptr; }

const CudnnApi& FakeCudnn::api() const { return api_; }

std::vector<int64_t> FakeCudnn::of_type(int32_t type) const {
  std::vector<int64_t> out;
  for (const FakeDescriptor& d : descriptors)
    if (d.type == type) out.push_back(d.id);
  return out;
}

std::vector<const CudnnCall*> FakeCudnn::calls_of(const std::string& fn) const {
  std::vector<const CudnnCall*> out;
  for (const CudnnCall& c : calls)
    if (c.fn == fn) out.push_back(&c);
  return out;
}

int64_t FakeCudnn::live_descriptors() const {
  return std::count_if(descriptors.begin(), descriptors.end(), [](const FakeDescriptor& d) { return !d.destroyed; });
}

cudnnStatus_t FakeCudnn::failing(const std::string& what) {
  auto it = fail.find(what);
  if (it == fail.end()) return CUDNN_STATUS_SUCCESS;
  last_error = "fake failure injected into " + what;
  return it->second;
}

cudnnStatus_t FakeCudnn::error(cudnnStatus_t status, const std::string& message) {
  last_error = message;
  return status;
}

FakeDescriptor* FakeCudnn::lookup(cudnnBackendDescriptor_t d) {
  uintptr_t v = reinterpret_cast<uintptr_t>(d);
  if (v < kDescriptorBase + 16 || (v - kDescriptorBase) % 16 != 0) return nullptr;
  size_t id = (v - kDescriptorBase) / 16;
  if (id > descriptors.size() || descriptors[id - 1].destroyed) return nullptr;
  return &descriptors[id - 1];
}

cudnnStatus_t FakeCudnn::create(int32_t type, cudnnBackendDescriptor_t* d) {
  calls.push_back({"cudnnBackendCreateDescriptor", 0, type, {}});
  if (cudnnStatus_t s = failing(fmt::format("cudnnBackendCreateDescriptor:{}", type_name(type)))) return s;
  FakeDescriptor desc;
  desc.id = static_cast<int64_t>(descriptors.size()) + 1;
  desc.type = type;
  descriptors.push_back(desc);
  calls.back().desc = desc.id;
  *d = fake_descriptor_handle(desc.id);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t FakeCudnn::destroy(cudnnBackendDescriptor_t d) {
  FakeDescriptor* desc = lookup(d);
  calls.push_back({"cudnnBackendDestroyDescriptor", desc ? desc->id : 0, -1, {}});
  if (!desc) return error(CUDNN_STATUS_BAD_PARAM, "destroying an unknown or destroyed descriptor");
  desc->destroyed = true;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t FakeCudnn::set(cudnnBackendDescriptor_t d, int32_t attr, int32_t type, int64_t count,
                             const void* values) {
  FakeDescriptor* desc = lookup(d);
  CudnnCall call{"cudnnBackendSetAttribute", desc ? desc->id : 0, attr, {}};
  call.attr.type = type;
  if (count < 0 || (count > 0 && !values)) return error(CUDNN_STATUS_BAD_PARAM, "bad element count");
  for (int64_t i = 0; i < count; ++i) {
    switch (type) {
      case CUDNN_TYPE_INT64: call.attr.ints.push_back(static_cast<const int64_t*>(values)[i]); break;
      case CUDNN_TYPE_DATA_TYPE:
      case CUDNN_TYPE_CONVOLUTION_MODE:
      case CUDNN_TYPE_HEUR_MODE:
      case CUDNN_TYPE_NUMERICAL_NOTE: call.attr.ints.push_back(static_cast<const int32_t*>(values)[i]); break;
      case CUDNN_TYPE_FLOAT: call.attr.floats.push_back(static_cast<const float*>(values)[i]); break;
      case CUDNN_TYPE_BACKEND_DESCRIPTOR: {
        FakeDescriptor* v = lookup(static_cast<const cudnnBackendDescriptor_t*>(values)[i]);
        if (!v) return error(CUDNN_STATUS_BAD_PARAM, "a descriptor attribute naming an unknown descriptor");
        call.attr.descriptors.push_back(v->id);
        break;
      }
      case CUDNN_TYPE_VOID_PTR:
        call.attr.pointers.push_back(reinterpret_cast<uintptr_t>(static_cast<void* const*>(values)[i]));
        break;
      case CUDNN_TYPE_HANDLE:
        call.attr.pointers.push_back(reinterpret_cast<uintptr_t>(static_cast<const cudnnHandle_t*>(values)[i]));
        break;
      default: return error(CUDNN_STATUS_BAD_PARAM, fmt::format("attribute type {} not faked", type));
    }
  }
  calls.push_back(call);
  if (!desc) return error(CUDNN_STATUS_BAD_PARAM, "setting an attribute of an unknown descriptor");
  if (desc->finalized) return error(CUDNN_STATUS_BAD_PARAM, "setting an attribute of a finalized descriptor");
  if (cudnnStatus_t s = failing(fmt::format("cudnnBackendSetAttribute:{}", attr))) return s;
  desc->attrs[attr] = call.attr;
  return CUDNN_STATUS_SUCCESS;
}

namespace {

const FakeAttribute* attr_of(const FakeDescriptor& d, int32_t attr) {
  auto it = d.attrs.find(attr);
  return it == d.attrs.end() ? nullptr : &it->second;
}

int64_t conv_out(int64_t in, int64_t pads, int64_t window, int64_t dilation, int64_t stride) {
  int64_t span = in + pads - ((window - 1) * dilation + 1);
  return span < 0 ? 0 : span / stride + 1;
}

// The attributes of each convolution operation kind: x (or dx), w (or dw), y (or dy), conv, alpha, beta.
struct ConvOpAttrs {
  int32_t x, w, y, conv, alpha, beta;
};

bool conv_op_attrs(int32_t type, ConvOpAttrs& out) {
  switch (type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      out = {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
      return true;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      out = {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
      return true;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      out = {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
      return true;
  }
  return false;
}

}  // namespace

cudnnStatus_t FakeCudnn::finalize(cudnnBackendDescriptor_t d) {
  FakeDescriptor* desc = lookup(d);
  calls.push_back({"cudnnBackendFinalize", desc ? desc->id : 0, desc ? desc->type : -1, {}});
  if (!desc) return error(CUDNN_STATUS_BAD_PARAM, "finalizing an unknown descriptor");
  if (desc->finalized) return error(CUDNN_STATUS_BAD_PARAM, "finalizing twice");
  if (cudnnStatus_t s = failing(fmt::format("cudnnBackendFinalize:{}", type_name(desc->type)))) return s;
  auto need = [&](std::initializer_list<int32_t> attrs) {
    for (int32_t a : attrs)
      if (!attr_of(*desc, a)) return false;
    return true;
  };
  ConvOpAttrs op{};
  switch (desc->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: {
      if (!need({CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_ATTR_TENSOR_STRIDES,
                 CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT}))
        return error(CUDNN_STATUS_BAD_PARAM, "tensor without all its attributes");
      if (attr_of(*desc, CUDNN_ATTR_TENSOR_DIMENSIONS)->ints.size() !=
          attr_of(*desc, CUDNN_ATTR_TENSOR_STRIDES)->ints.size())
        return error(CUDNN_STATUS_BAD_PARAM, "tensor dims and strides of different lengths");
      break;
    }
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: {
      if (!need({CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                 CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                 CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_ATTR_CONVOLUTION_DILATIONS,
                 CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES}))
        return error(CUDNN_STATUS_BAD_PARAM, "convolution without all its attributes");
      size_t dims = static_cast<size_t>(attr_of(*desc, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS)->ints.at(0));
      for (int32_t a : {CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
                        CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES})
        if (attr_of(*desc, a)->ints.size() != dims)
          return error(CUDNN_STATUS_BAD_PARAM, "convolution attribute length is not the spatial dims");
      break;
    }
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: {
      conv_op_attrs(desc->type, op);
      if (!need({op.x, op.w, op.y, op.conv, op.alpha, op.beta}))
        return error(CUDNN_STATUS_BAD_PARAM, "convolution operation without all its attributes");
      auto dims = [&](int32_t a) {
        const FakeDescriptor& t = descriptor(attr_of(*desc, a)->descriptors.at(0));
        return attr_of(t, CUDNN_ATTR_TENSOR_DIMENSIONS)->ints;
      };
      const FakeDescriptor& conv = descriptor(attr_of(*desc, op.conv)->descriptors.at(0));
      auto ints = [&](int32_t a) { return attr_of(conv, a)->ints; };
      auto x = dims(op.x), w = dims(op.w), y = dims(op.y);
      auto pre = ints(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS), post = ints(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS);
      auto dil = ints(CUDNN_ATTR_CONVOLUTION_DILATIONS), str = ints(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES);
      if (x.size() != 4 || w.size() != 4 || y.size() != 4 || x[0] != y[0] || x[1] != w[1] || y[1] != w[0] ||
          y[2] != conv_out(x[2], pre[0] + post[0], w[2], dil[0], str[0]) ||
          y[3] != conv_out(x[3], pre[1] + post[1], w[3], dil[1], str[1]))
        return error(CUDNN_STATUS_BAD_PARAM, "convolution shapes do not fit");
      break;
    }
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      if (!need({CUDNN_ATTR_OPERATIONGRAPH_OPS})) return error(CUDNN_STATUS_BAD_PARAM, "graph without operations");
      break;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: {
      if (!need({CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_ATTR_ENGINEHEUR_MODE}))
        return error(CUDNN_STATUS_BAD_PARAM, "heuristic without graph or mode");
      calls.back().value = static_cast<int32_t>(attr_of(*desc, CUDNN_ATTR_ENGINEHEUR_MODE)->ints.at(0));
      if (cudnnStatus_t s = failing(fmt::format("heuristics mode {}", calls.back().value))) return s;
      break;
    }
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: {
      if (!need({CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG}))
        return error(CUDNN_STATUS_BAD_PARAM, "plan without an engine config");
      const FakeDescriptor& cfg =
          descriptor(attr_of(*desc, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)->descriptors.at(0));
      const auto& list = cfg.heur_mode == CUDNN_HEUR_MODE_A ? mode_a : fallback;
      if (!list.at(static_cast<size_t>(cfg.engine)).builds)
        return error(CUDNN_STATUS_NOT_SUPPORTED, "the fake engine does not build");
      desc->engine = cfg.engine;
      desc->heur_mode = cfg.heur_mode;
      break;
    }
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      if (!need({CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS}) ||
          attr_of(*desc, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)->pointers.size() !=
              attr_of(*desc, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS)->ints.size())
        return error(CUDNN_STATUS_BAD_PARAM, "variant pack without matching pointers and ids");
      break;
  }
  desc->finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t FakeCudnn::get(cudnnBackendDescriptor_t d, int32_t attr, int32_t type, int64_t requested, int64_t* count,
                             void* values) {
  FakeDescriptor* desc = lookup(d);
  calls.push_back({"cudnnBackendGetAttribute", desc ? desc->id : 0, attr, {}});
  if (!desc) return error(CUDNN_STATUS_BAD_PARAM, "reading an unknown descriptor");
  if (cudnnStatus_t s = failing(fmt::format("cudnnBackendGetAttribute:{}", attr))) return s;
  const std::vector<FakeEngine>* list = desc->heur_mode == CUDNN_HEUR_MODE_A ? &mode_a : &fallback;
  switch (attr) {
    case CUDNN_ATTR_ENGINEHEUR_RESULTS: {
      if (desc->type != CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR || !desc->finalized ||
          type != CUDNN_TYPE_BACKEND_DESCRIPTOR)
        return error(CUDNN_STATUS_BAD_PARAM, "heuristic results of a descriptor that has none");
      int32_t mode = static_cast<int32_t>(attr_of(*desc, CUDNN_ATTR_ENGINEHEUR_MODE)->ints.at(0));
      const auto& engines = mode == CUDNN_HEUR_MODE_A ? mode_a : fallback;
      int64_t n = std::min<int64_t>(requested, static_cast<int64_t>(engines.size()));
      *count = requested == 0 ? static_cast<int64_t>(engines.size()) : n;
      for (int64_t i = 0; i < n; ++i) {
        FakeDescriptor* cfg = lookup(static_cast<cudnnBackendDescriptor_t*>(values)[i]);
        if (!cfg || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
          return error(CUDNN_STATUS_BAD_PARAM, "heuristic results into something not an ENGINECFG");
        cfg->engine = i;
        cfg->heur_mode = mode;
        cfg->source = desc->id;
        cfg->finalized = true;
      }
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_ENGINECFG_ENGINE: {
      FakeDescriptor* engine = requested >= 1 ? lookup(static_cast<cudnnBackendDescriptor_t*>(values)[0]) : nullptr;
      if (desc->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR || !engine ||
          engine->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR || type != CUDNN_TYPE_BACKEND_DESCRIPTOR)
        return error(CUDNN_STATUS_BAD_PARAM, "engine of a descriptor that has none");
      engine->engine = desc->engine;
      engine->heur_mode = desc->heur_mode;
      engine->source = desc->source;
      engine->finalized = true;
      *count = 1;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE: {
      if (desc->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR || type != CUDNN_TYPE_NUMERICAL_NOTE)
        return error(CUDNN_STATUS_BAD_PARAM, "notes of a descriptor that has none");
      const auto& notes = list->at(static_cast<size_t>(desc->engine)).notes;
      int64_t n = std::min<int64_t>(requested, static_cast<int64_t>(notes.size()));
      for (int64_t i = 0; i < n; ++i) static_cast<int32_t*>(values)[i] = notes[static_cast<size_t>(i)];
      *count = requested == 0 ? static_cast<int64_t>(notes.size()) : n;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_ENGINE_GLOBAL_INDEX: {
      if (desc->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR || type != CUDNN_TYPE_INT64 || requested < 1)
        return error(CUDNN_STATUS_BAD_PARAM, "index of a descriptor that has none");
      *static_cast<int64_t*>(values) = list->at(static_cast<size_t>(desc->engine)).index;
      *count = 1;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE: {
      if (desc->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !desc->finalized || type != CUDNN_TYPE_INT64 ||
          requested < 1)
        return error(CUDNN_STATUS_BAD_PARAM, "workspace of a descriptor that has none");
      *static_cast<int64_t*>(values) = list->at(static_cast<size_t>(desc->engine)).workspace;
      *count = 1;
      return CUDNN_STATUS_SUCCESS;
    }
  }
  return error(CUDNN_STATUS_BAD_PARAM, fmt::format("attribute {} not faked for reading", attr));
}

namespace {

// A 4-D strided view of one tensor of the variant pack, in the order cuDNN's dims give.
struct Strided {
  float* data = nullptr;
  std::vector<int64_t> dims, strides;
  float& at(int64_t a, int64_t b, int64_t c, int64_t d) const {
    return data[a * strides[0] + b * strides[1] + c * strides[2] + d * strides[3]];
  }
};

}  // namespace

cudnnStatus_t FakeCudnn::execute(cudnnHandle_t h, cudnnBackendDescriptor_t plan_d, cudnnBackendDescriptor_t pack_d) {
  FakeDescriptor* plan = lookup(plan_d);
  FakeDescriptor* pack = lookup(pack_d);
  calls.push_back({"cudnnBackendExecute", plan ? plan->id : 0, pack ? static_cast<int32_t>(pack->id) : -1, {}});
  if (h != kFakeHandle || !handle_live) return error(CUDNN_STATUS_BAD_PARAM, "execute on an unknown handle");
  if (!plan || !plan->finalized || plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !pack || !pack->finalized ||
      pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    return error(CUDNN_STATUS_BAD_PARAM, "execute without a finalized plan and variant pack");
  calls.back().attr = *attr_of(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  if (cudnnStatus_t s = failing("cudnnBackendExecute")) return s;

  // plan -> engine config -> heuristic -> graph -> the one operation.
  const FakeDescriptor& cfg = descriptor(attr_of(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)->descriptors.at(0));
  const FakeDescriptor& heur = descriptor(cfg.source);
  const FakeDescriptor& graph = descriptor(attr_of(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH)->descriptors.at(0));
  const FakeDescriptor& op = descriptor(attr_of(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS)->descriptors.at(0));
  ConvOpAttrs a{};
  if (!conv_op_attrs(op.type, a)) return error(CUDNN_STATUS_NOT_SUPPORTED, "the fake runs convolutions only");
  if (attr_of(op, a.alpha)->floats.at(0) != 1.0 || attr_of(op, a.beta)->floats.at(0) != 0.0)
    return error(CUDNN_STATUS_NOT_SUPPORTED, "the fake runs alpha 1, beta 0 only");
  const FakeAttribute& uids = *attr_of(*pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const FakeAttribute& ptrs = *attr_of(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  auto view = [&](int32_t attr, Strided& v) {
    const FakeDescriptor& t = descriptor(attr_of(op, attr)->descriptors.at(0));
    if (attr_of(t, CUDNN_ATTR_TENSOR_DATA_TYPE)->ints.at(0) != CUDNN_DATA_FLOAT) return false;
    int64_t uid = attr_of(t, CUDNN_ATTR_TENSOR_UNIQUE_ID)->ints.at(0);
    auto it = std::find(uids.ints.begin(), uids.ints.end(), uid);
    if (it == uids.ints.end()) return false;
    v.data = reinterpret_cast<float*>(ptrs.pointers.at(static_cast<size_t>(it - uids.ints.begin())));
    v.dims = attr_of(t, CUDNN_ATTR_TENSOR_DIMENSIONS)->ints;
    v.strides = attr_of(t, CUDNN_ATTR_TENSOR_STRIDES)->ints;
    return v.data != nullptr;
  };
  Strided x, w, y;
  if (!view(a.x, x) || !view(a.w, w) || !view(a.y, y))
    return error(CUDNN_STATUS_BAD_PARAM, "a tensor of the operation is missing from the variant pack (or not f32)");
  const FakeDescriptor& conv = descriptor(attr_of(op, a.conv)->descriptors.at(0));
  auto pre = attr_of(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS)->ints;
  auto dil = attr_of(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS)->ints;
  auto str = attr_of(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES)->ints;
  const int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3];
  const int64_t K = w.dims[0], R = w.dims[2], S = w.dims[3], P = y.dims[2], Q = y.dims[3];
  // Every (output position, filter tap) pair that reads an input inside the image, in double.
  auto each = [&](auto&& f) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t p = 0; p < P; ++p)
          for (int64_t q = 0; q < Q; ++q)
            for (int64_t c = 0; c < C; ++c)
              for (int64_t r = 0; r < R; ++r)
                for (int64_t s = 0; s < S; ++s) {
                  int64_t ih = p * str[0] - pre[0] + r * dil[0], iw = q * str[1] - pre[1] + s * dil[1];
                  if (ih >= 0 && ih < H && iw >= 0 && iw < W) f(n, k, p, q, c, r, s, ih, iw);
                }
  };
  if (op.type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR) {
    std::vector<double> acc(static_cast<size_t>(N * K * P * Q), 0.0);
    each([&](int64_t n, int64_t k, int64_t p, int64_t q, int64_t c, int64_t r, int64_t s, int64_t ih, int64_t iw) {
      acc[static_cast<size_t>(((n * K + k) * P + p) * Q + q)] += double(x.at(n, c, ih, iw)) * w.at(k, c, r, s);
    });
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t p = 0; p < P; ++p)
          for (int64_t q = 0; q < Q; ++q)
            y.at(n, k, p, q) = float(acc[static_cast<size_t>(((n * K + k) * P + p) * Q + q)]);
  } else if (op.type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR) {
    std::vector<double> acc(static_cast<size_t>(N * C * H * W), 0.0);
    each([&](int64_t n, int64_t k, int64_t p, int64_t q, int64_t c, int64_t r, int64_t s, int64_t ih, int64_t iw) {
      acc[static_cast<size_t>(((n * C + c) * H + ih) * W + iw)] += double(y.at(n, k, p, q)) * w.at(k, c, r, s);
    });
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < H; ++i)
          for (int64_t j = 0; j < W; ++j)
            x.at(n, c, i, j) = float(acc[static_cast<size_t>(((n * C + c) * H + i) * W + j)]);
  } else {
    std::vector<double> acc(static_cast<size_t>(K * C * R * S), 0.0);
    each([&](int64_t n, int64_t k, int64_t p, int64_t q, int64_t c, int64_t r, int64_t s, int64_t ih, int64_t iw) {
      acc[static_cast<size_t>(((k * C + c) * R + r) * S + s)] += double(x.at(n, c, ih, iw)) * y.at(n, k, p, q);
    });
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t s = 0; s < S; ++s)
            w.at(k, c, r, s) = float(acc[static_cast<size_t>(((k * C + c) * R + r) * S + s)]);
  }
  return CUDNN_STATUS_SUCCESS;
}

// ---------------------------------------------------------------------------------------------------
// cuBLASLt

using namespace cublaslt;

namespace {

FakeCublasLt* g_lt = nullptr;

FakeCublasLt& lt_fake() {
  if (!g_lt) throw std::logic_error("a cuBLASLt call without a FakeCublasLt");
  return *g_lt;
}

constexpr uintptr_t kDescBase = 0x10000, kLayoutBase = 0x20000, kPrefBase = 0x30000, kStride = 16;
const cublasLtHandle_t kLtHandle = reinterpret_cast<cublasLtHandle_t>(uintptr_t(0xB1A50));

template <class T>
int64_t index_of(T* p, uintptr_t base, size_t size) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  if (v < base || (v - base) % kStride != 0 || (v - base) / kStride >= size) return -1;
  return static_cast<int64_t>((v - base) / kStride);
}

}  // namespace

FakeCublasLt::FakeCublasLt() {
  if (g_lt) throw std::logic_error("two FakeCublasLt at once");
  g_lt = this;
  api_.cublasLtGetVersion = [] { return size_t(130100); };
  api_.cublasLtGetStatusName = [](cublasStatus_t s) -> const char* {
    switch (s) {
      case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
      case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
      case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
  };
  api_.cublasLtGetStatusString = [](cublasStatus_t s) -> const char* {
    return s == CUBLAS_STATUS_NOT_SUPPORTED ? "the functionality requested is not supported" : "fake status";
  };
  api_.cublasLtCreate = [](cublasLtHandle_t* h) {
    FakeCublasLt& f = lt_fake();
    f.calls.push_back("cublasLtCreate");
    if (cublasStatus_t s = f.failing("cublasLtCreate")) return s;
    *h = kLtHandle;
    f.handle_live = true;
    return CUBLAS_STATUS_SUCCESS;
  };
  api_.cublasLtDestroy = [](cublasLtHandle_t h) {
    FakeCublasLt& f = lt_fake();
    f.calls.push_back("cublasLtDestroy");
    if (h != kLtHandle || !f.handle_live) return CUBLAS_STATUS_INVALID_VALUE;
    f.handle_live = false;
    return CUBLAS_STATUS_SUCCESS;
  };
  api_.cublasLtMatmulDescCreate = [](cublasLtMatmulDesc_t* d, cublasComputeType_t compute, cudaDataType_t scale) {
    FakeCublasLt& f = lt_fake();
    f.calls.push_back("cublasLtMatmulDescCreate");
    if (cublasStatus_t s = f.failing("cublasLtMatmulDescCreate")) return s;
    FakeMatmulDesc desc;
    desc.compute = compute, desc.scale = scale;
    f.descs.push_back(desc);
    *d = reinterpret_cast<cublasLtMatmulDesc_t>(kDescBase + (f.descs.size() - 1) * kStride);
    return CUBLAS_STATUS_SUCCESS;
  };
  api_.cublasLtMatmulDescDestroy = [](cublasLtMatmulDesc_t d) {
    FakeCublasLt& f = lt_fake();
    f.calls.push_back("cublasLtMatmulDescDestroy");
    int64_t i = index_of(d, kDescBase, f.descs.size());
    if (i < 0 || f.descs[static_cast<size_t>(i)].destroyed) return CUBLAS_STATUS_INVALID_VALUE;
    f.descs[static_cast<size_t>(i)].destroyed = true;
    return CUBLAS_STATUS_SUCCESS;
  };
  api_.cublasLtMatmulDescSetAttribute = [](cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void* buf,
                                           size_t bytes) { return lt_fake().desc_set(d, a, buf, bytes); };
  api_.cublasLtMatrixLayoutCreate = [](cublasLtMatrixLayout_t* l, cudaDataType_t type, uint64_t rows, uint64_t cols,
                                       int64_t ld) {
    FakeCublasLt& f = lt_fake();
    f.calls.push_back("cublasLtMatrixLayoutCreate");
    if (cublasStatus_t s = f.failing("cublasLtMatrixLayoutCreate")) return s;
    // Column-major: a leading dimension below the row count would overlap the columns.
    if (ld < static_cast<int64_t>(rows) || rows == 0 || cols == 0) return CUBLAS_STATUS_INVALID_VALUE;
    f.layouts.push_back(FakeLayout{type, rows, cols, ld, false});
    *l = reinterpret_cast<cublasLtMatrixLayout_t>(kLayoutBase + (f.layouts.size() - 1) * kStride);
    return CUBLAS_STATUS_SUCCESS;
  };
  api_.cublasLtMatrixLayoutDestroy = [](cublasLtMatrixLayout_t l) {
    FakeCublasLt& f = lt_fake();
    f.calls.push_back("cublasLtMatrixLayoutDestroy");
    int64_t i = index_of(l, kLayoutBase, f.layouts.size());
    if (i < 0 || f.layouts[static_cast<size_t>(i)].destroyed) return CUBLAS_STATUS_INVALID_VALUE;
    f.layouts[static_cast<size_t>(i)].destroyed = true;
    return CUBLAS_STATUS_SUCCESS;
  };
  api_.cublasLtMatmulPreferenceCreate = [](cublasLtMatmulPreference_t* p) {
    FakeCublasLt& f = lt_fake();
    f.calls.push_back("cublasLtMatmulPreferenceCreate");
    f.preferences.push_back(FakePreference{});
    *p = reinterpret_cast<cublasLtMatmulPreference_t>(kPrefBase + (f.preferences.size() - 1) * kStride);
    return CUBLAS_STATUS_SUCCESS;
  };
  api_.cublasLtMatmulPreferenceDestroy = [](cublasLtMatmulPreference_t p) {
    FakeCublasLt& f = lt_fake();
    f.calls.push_back("cublasLtMatmulPreferenceDestroy");
    int64_t i = index_of(p, kPrefBase, f.preferences.size());
    if (i < 0 || f.preferences[static_cast<size_t>(i)].destroyed) return CUBLAS_STATUS_INVALID_VALUE;
    f.preferences[static_cast<size_t>(i)].destroyed = true;
    return CUBLAS_STATUS_SUCCESS;
  };
  api_.cublasLtMatmulPreferenceSetAttribute = [](cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a,
                                                 const void* buf,
                                                 size_t bytes) { return lt_fake().pref_set(p, a, buf, bytes); };
  api_.cublasLtMatmulAlgoGetHeuristic = [](cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                                           cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                           cublasLtMatrixLayout_t dd, cublasLtMatmulPreference_t p, int requested,
                                           cublasLtMatmulHeuristicResult_t results[], int* returned) {
    if (h != kLtHandle) return CUBLAS_STATUS_INVALID_VALUE;
    return lt_fake().heuristic(d, a, b, c, dd, p, requested, results, returned);
  };
  api_.cublasLtMatmulAlgoConfigGetAttribute = [](const cublasLtMatmulAlgo_t* algo,
                                                 cublasLtMatmulAlgoConfigAttributes_t attr, void* buf, size_t bytes,
                                                 size_t* written) {
    FakeCublasLt& f = lt_fake();
    f.calls.push_back("cublasLtMatmulAlgoConfigGetAttribute");
    // The fake's algorithms carry their id in data[0] and their reduction scheme in data[1].
    switch (attr) {
      case CUBLASLT_ALGO_CONFIG_ID: {
        if (bytes != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
        int32_t v = static_cast<int32_t>(algo->data[0]);
        std::memcpy(buf, &v, sizeof v);
        break;
      }
      case CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME: {
        if (bytes != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
        uint32_t v = static_cast<uint32_t>(algo->data[1]);
        std::memcpy(buf, &v, sizeof v);
        break;
      }
      default: return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (written) *written = bytes;
    return CUBLAS_STATUS_SUCCESS;
  };
  api_.cublasLtMatmul = [](cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                           cublasLtMatrixLayout_t al, const void* b, cublasLtMatrixLayout_t bl, const void* beta,
                           const void* c, cublasLtMatrixLayout_t cl, void* d, cublasLtMatrixLayout_t dl,
                           const cublasLtMatmulAlgo_t* algo, void* ws, size_t ws_bytes, cuda::CUstream stream) {
    if (h != kLtHandle) return CUBLAS_STATUS_INVALID_VALUE;
    return lt_fake().matmul(desc, alpha, a, al, b, bl, beta, c, cl, d, dl, algo, ws, ws_bytes, stream);
  };
}

FakeCublasLt::~FakeCublasLt() { g_lt = nullptr; }

const CublasLtApi& FakeCublasLt::api() const { return api_; }

cublasStatus_t FakeCublasLt::failing(const std::string& fn) {
  auto it = fail.find(fn);
  return it == fail.end() ? CUBLAS_STATUS_SUCCESS : it->second;
}

int64_t FakeCublasLt::live_objects() const {
  int64_t n = handle_live ? 1 : 0;
  for (const auto& d : descs) n += !d.destroyed;
  for (const auto& l : layouts) n += !l.destroyed;
  for (const auto& p : preferences) n += !p.destroyed;
  return n;
}

cublasStatus_t FakeCublasLt::desc_set(cublasLtMatmulDesc_t d, int32_t attr, const void* buf, size_t bytes) {
  calls.push_back("cublasLtMatmulDescSetAttribute");
  int64_t i = index_of(d, kDescBase, descs.size());
  if (i < 0 || descs[static_cast<size_t>(i)].destroyed) return CUBLAS_STATUS_INVALID_VALUE;
  FakeMatmulDesc& desc = descs[static_cast<size_t>(i)];
  // Each attribute's documented C type, by size, as cuBLASLt checks it.
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB: {
      if (bytes != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
      int32_t v;
      std::memcpy(&v, buf, sizeof v);
      (attr == CUBLASLT_MATMUL_DESC_TRANSA ? desc.trans_a : desc.trans_b) = v;
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      if (bytes != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&desc.epilogue, buf, sizeof desc.epilogue);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: {
      if (bytes != sizeof(void*)) return CUBLAS_STATUS_INVALID_VALUE;
      const void* v;
      std::memcpy(&v, buf, sizeof v);
      desc.bias = reinterpret_cast<uintptr_t>(v);
      return CUBLAS_STATUS_SUCCESS;
    }
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t FakeCublasLt::pref_set(cublasLtMatmulPreference_t p, int32_t attr, const void* buf, size_t bytes) {
  calls.push_back("cublasLtMatmulPreferenceSetAttribute");
  int64_t i = index_of(p, kPrefBase, preferences.size());
  if (i < 0 || preferences[static_cast<size_t>(i)].destroyed) return CUBLAS_STATUS_INVALID_VALUE;
  FakePreference& pref = preferences[static_cast<size_t>(i)];
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      if (bytes != sizeof(uint64_t)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&pref.max_workspace, buf, bytes);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
      if (bytes != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&pref.reduction_mask, buf, bytes);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      if (bytes != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&pref.alignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, bytes);
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

namespace {

// op(A)'s shape from its stored layout: rows x cols, or cols x rows when transposed.
std::pair<uint64_t, uint64_t> op_shape(const FakeLayout& l, int32_t trans) {
  return trans == CUBLAS_OP_T ? std::pair{l.cols, l.rows} : std::pair{l.rows, l.cols};
}

}  // namespace

cublasStatus_t FakeCublasLt::heuristic(cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                       cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd,
                                       cublasLtMatmulPreference_t p, int requested,
                                       cublasLtMatmulHeuristicResult_t* results, int* returned) {
  calls.push_back("cublasLtMatmulAlgoGetHeuristic");
  ++heuristic_calls;
  if (cublasStatus_t s = failing("cublasLtMatmulAlgoGetHeuristic")) return s;
  int64_t di = index_of(d, kDescBase, descs.size()), ai = index_of(a, kLayoutBase, layouts.size()),
          bi = index_of(b, kLayoutBase, layouts.size()), ci = index_of(c, kLayoutBase, layouts.size()),
          ddi = index_of(dd, kLayoutBase, layouts.size()), pi = index_of(p, kPrefBase, preferences.size());
  if (di < 0 || ai < 0 || bi < 0 || ci < 0 || ddi < 0 || pi < 0) return CUBLAS_STATUS_INVALID_VALUE;
  const FakeMatmulDesc& desc = descs[static_cast<size_t>(di)];
  auto [am, ak] = op_shape(layouts[static_cast<size_t>(ai)], desc.trans_a);
  auto [bk, bn] = op_shape(layouts[static_cast<size_t>(bi)], desc.trans_b);
  const FakeLayout& dl = layouts[static_cast<size_t>(ddi)];
  if (ak != bk || dl.rows != am || dl.cols != bn) return CUBLAS_STATUS_INVALID_VALUE;
  const FakePreference& pref = preferences[static_cast<size_t>(pi)];
  int n = 0;
  // Like cuBLASLt: only algorithms within the workspace limit and the reduction scheme mask come back.
  for (const FakeAlgo& algo : algos) {
    if (n >= requested) break;
    if (algo.workspace > pref.max_workspace) continue;
    if (!ignore_reduction_mask && algo.reduction_scheme != CUBLASLT_REDUCTION_SCHEME_NONE &&
        !(algo.reduction_scheme & pref.reduction_mask))
      continue;
    cublasLtMatmulHeuristicResult_t& r = results[n++];
    r = {};
    r.algo.data[0] = static_cast<uint64_t>(algo.id);
    r.algo.data[1] = algo.reduction_scheme;
    r.workspaceSize = algo.workspace;
    r.state = algo.state;
  }
  *returned = n;
  return n == 0 ? CUBLAS_STATUS_NOT_SUPPORTED : CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t FakeCublasLt::matmul(cublasLtMatmulDesc_t desc_h, const void* alpha, const void* a,
                                    cublasLtMatrixLayout_t al, const void* b, cublasLtMatrixLayout_t bl,
                                    const void* beta, const void* c, cublasLtMatrixLayout_t cl, void* d,
                                    cublasLtMatrixLayout_t dl, const cublasLtMatmulAlgo_t* algo, void* ws,
                                    size_t ws_bytes, cuda::CUstream stream) {
  calls.push_back("cublasLtMatmul");
  MatmulCall call;
  call.desc = index_of(desc_h, kDescBase, descs.size());
  call.a = index_of(al, kLayoutBase, layouts.size());
  call.b = index_of(bl, kLayoutBase, layouts.size());
  call.c = index_of(cl, kLayoutBase, layouts.size());
  call.d = index_of(dl, kLayoutBase, layouts.size());
  if (call.desc < 0 || call.a < 0 || call.b < 0 || call.c < 0 || call.d < 0 || !alpha || !beta || !algo)
    return CUBLAS_STATUS_INVALID_VALUE;
  call.desc_state = descs[static_cast<size_t>(call.desc)];
  call.a_ptr = reinterpret_cast<uintptr_t>(a), call.b_ptr = reinterpret_cast<uintptr_t>(b);
  call.c_ptr = reinterpret_cast<uintptr_t>(c), call.d_ptr = reinterpret_cast<uintptr_t>(d);
  std::memcpy(&call.alpha, alpha, sizeof(float));
  std::memcpy(&call.beta, beta, sizeof(float));
  call.algo = static_cast<int32_t>(algo->data[0]);
  call.workspace = reinterpret_cast<uintptr_t>(ws);
  call.workspace_bytes = ws_bytes;
  call.stream = stream;
  matmuls.push_back(call);
  if (cublasStatus_t s = failing("cublasLtMatmul")) return s;

  const FakeMatmulDesc& desc = call.desc_state;
  const FakeLayout &la = layouts[static_cast<size_t>(call.a)], &lb = layouts[static_cast<size_t>(call.b)],
                   &ld = layouts[static_cast<size_t>(call.d)];
  if (la.type != CUDA_R_32F || lb.type != CUDA_R_32F || ld.type != CUDA_R_32F || desc.scale != CUDA_R_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;  // the fake computes f32 only
  auto [m, k] = op_shape(la, desc.trans_a);
  auto [k2, n] = op_shape(lb, desc.trans_b);
  if (k != k2 || ld.rows != m || ld.cols != n) return CUBLAS_STATUS_INVALID_VALUE;
  const bool bias = desc.epilogue == CUBLASLT_EPILOGUE_BIAS || desc.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  const bool relu = desc.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  if (bias && desc.bias == 0) return CUBLAS_STATUS_INVALID_VALUE;
  const float* A = static_cast<const float*>(a);
  const float* B = static_cast<const float*>(b);
  const float* C = static_cast<const float*>(c);
  float* D = static_cast<float*>(d);
  const float* bias_v = reinterpret_cast<const float*>(desc.bias);
  // Column-major: element (i, j) of a stored matrix with leading dimension ld is at i + j * ld.
  auto a_at = [&](uint64_t i, uint64_t kk) {
    return desc.trans_a == CUBLAS_OP_T ? A[kk + i * la.ld] : A[i + kk * la.ld];
  };
  auto b_at = [&](uint64_t kk, uint64_t j) {
    return desc.trans_b == CUBLAS_OP_T ? B[j + kk * lb.ld] : B[kk + j * lb.ld];
  };
  for (uint64_t j = 0; j < n; ++j)
    for (uint64_t i = 0; i < m; ++i) {
      double acc = 0;
      for (uint64_t kk = 0; kk < k; ++kk) acc += double(a_at(i, kk)) * b_at(kk, j);
      acc = call.alpha * acc + (call.beta != 0 ? call.beta * C[i + j * ld.ld] : 0.0);
      if (bias) acc += bias_v[i];
      if (relu && acc < 0) acc = 0;
      D[i + j * ld.ld] = float(acc);
    }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace pipec::testing
